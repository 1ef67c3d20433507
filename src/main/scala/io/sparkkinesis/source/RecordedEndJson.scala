package io.sparkkinesis.source

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.ObjectNode
import io.sparkkinesis.client.ChildShard
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.reader.{ReadStats, RunBound, RunOutcome, ShardEnd}

/**
 * A task's metadata entry for one shard of one batch: where it ended, what the read cost, in a `Trigger.AvailableNow`
 * run what it learnt about the run's bound, and the identity of the stream it read (None when the entry has none).
 */
private[sparkkinesis] final case class RecordedEnd(
    end: ShardEnd,
    stats: ReadStats = ReadStats(),
    run: Option[RunOutcome] = None,
    stream: Option[StreamIdentity] = None
)

/**
 * Versioned JSON for the metadata entries of read tasks (recorded shard ends), with versions of its own. Version 1 is
 * the entry of a task of one shard; its optional fields are `stats`, `runBound`, `runBoundReached`,
 * `deliveredOutsideRange` and `stream` (the stream's identity, as in an offset): an entry without one reads as empty
 * statistics, no run bound, sub-records outside the hash range dropped, the stream's identity unknown. Version 2 is
 * the entry of a grouped read task: `{"version": 2, "ends": {"<stream>/<shard>": <end>, ...}}`. A reader ignores
 * fields it does not know; a newer version is refused with a message instead of misread.
 */
private[sparkkinesis] object RecordedEndJson {
  import JsonFields._

  val ShardEntryVersion = 1 // the entry of a task of one shard
  val TaskEntryVersion = 2 // the entry of a grouped task; also the newest version read

  def writeEnd(e: ShardEnd): String = writeEnd(RecordedEnd(e))

  def writeEnd(recorded: RecordedEnd): String =
    mapper.writeValueAsString(endNode(recorded, Some(ShardEntryVersion)))

  /** The entry of a grouped read task: the recorded end of each of its shards. */
  def writeTaskEnds(ends: Map[ShardKey, RecordedEnd]): String = {
    val root = nodes.objectNode().put("version", TaskEntryVersion)
    val byShard = root.putObject("ends")
    ends.toSeq.sortBy(_._1.metadataKey).foreach { case (key, end) =>
      byShard.set[JsonNode](key.metadataKey, endNode(end, None))
    }
    mapper.writeValueAsString(root)
  }

  def readTaskEnds(json: String): Map[ShardKey, RecordedEnd] = {
    val root = parse(json, "task's shard ends", TaskEntryVersion)
    fields(obj(root, "ends")).map { case (key, end) =>
      val slash = key.indexOf('/')
      if (slash <= 0)
        throw KinesisErrors.checkpointUnreadable(s"Expected '<stream>/<shard>' for a shard key, not '$key'")
      ShardKey(key.substring(0, slash), key.substring(slash + 1)) -> recordedEndOf(end)
    }.toMap
  }

  /** The ends recorded in a task's entry, whichever form: a task of one shard records the shard's end alone. */
  def readEndsOf(task: ReadTask, json: String): Map[ShardKey, RecordedEnd] = task.index match {
    case Some(_) => readTaskEnds(json)
    case None => Map(task.shards.head -> readRecordedEnd(json))
  }

  private def endNode(recorded: RecordedEnd, version: Option[Int]): ObjectNode = {
    val e = recorded.end
    val root = nodes.objectNode()
    version.foreach(root.put("version", _))
    root.set[JsonNode]("end", positionNode(e.end))
    root.put("finished", e.finished).put("recordCount", e.recordCount)
    e.millisBehindLatest.foreach(root.put("millisBehindLatest", _))
    root.put("reachedTip", e.reachedTip).put("lost", e.lost)
    // Written only when true: an entry without it reads as dropped.
    if (e.deliveredOutsideRange) root.put("deliveredOutsideRange", true)
    val children = root.putArray("childShards")
    e.childShards.foreach { c =>
      val child = children.addObject().put("shardId", c.shardId)
      c.parentShardIds.foldLeft(child.putArray("parents"))(_.add(_))
      child.set[JsonNode]("hashKeyRange", rangeNode(c.hashKeyRange))
    }
    val s = recorded.stats
    val stats = root.putObject("stats").put("bytes", s.bytes).put("throttles", s.throttles)
    stats.put("getRecordsCalls", s.getRecordsCalls).put("getShardIteratorCalls", s.getShardIteratorCalls)
    stats.put("subscribeToShardCalls", s.subscribeToShardCalls)
    if (s.droppedOutsideRange > 0) stats.put("droppedOutsideRange", s.droppedOutsideRange)
    recorded.run.foreach { run =>
      val bound = root.putObject("runBound")
      run.bound match {
        case RunBound.Unbounded => bound.put("type", "UNBOUNDED")
        case RunBound.Before(seq, 0) => bound.put("type", "BEFORE").put("sequenceNumber", seq)
        case RunBound.Before(seq, sub) =>
          bound.put("type", "BEFORE").put("sequenceNumber", seq).put("subRecords", sub)
        case RunBound.Pending(iterator) => bound.put("type", "PENDING").put("iterator", iterator)
      }
      root.put("runBoundReached", run.reached)
    }
    recorded.stream.filterNot(_.isEmpty).foreach(s => root.set[JsonNode]("stream", identityNode(s)))
    root
  }

  def readEnd(json: String): ShardEnd = readRecordedEnd(json).end

  def readRecordedEnd(json: String): RecordedEnd = recordedEndOf(parse(json, "shard end", TaskEntryVersion))

  private def recordedEndOf(root: JsonNode): RecordedEnd = {
    val stats = optional(root, "stats").fold(ReadStats()) { _ =>
      val s = obj(root, "stats")
      ReadStats(
        long(s, "bytes"),
        long(s, "throttles"),
        long(s, "getRecordsCalls"),
        long(s, "getShardIteratorCalls"),
        // Optional: an entry without them counts none.
        if (s.has("subscribeToShardCalls")) long(s, "subscribeToShardCalls") else 0L,
        if (s.has("droppedOutsideRange")) long(s, "droppedOutsideRange") else 0L
      )
    }
    val run = optional(root, "runBound").map { _ =>
      val b = obj(root, "runBound")
      val bound = text(b, "type") match {
        case "UNBOUNDED" => RunBound.Unbounded
        case "BEFORE" =>
          RunBound.Before(text(b, "sequenceNumber"), if (b.has("subRecords")) int(b, "subRecords") else 0)
        case "PENDING" => RunBound.Pending(text(b, "iterator"))
        case other => throw KinesisErrors.checkpointUnreadable(s"Unknown run bound type '$other' in $b")
      }
      RunOutcome(bound, bool(root, "runBoundReached"))
    }
    val end = ShardEnd(
      end = position(obj(root, "end")),
      finished = bool(root, "finished"),
      childShards = array(root, "childShards").map { c =>
        ChildShard(text(c, "shardId"), strings(c, "parents"), range(c, "hashKeyRange"))
      },
      recordCount = long(root, "recordCount"),
      millisBehindLatest = optional(root, "millisBehindLatest").map(_ => long(root, "millisBehindLatest")),
      reachedTip = bool(root, "reachedTip"),
      lost = bool(root, "lost"),
      deliveredOutsideRange = root.has("deliveredOutsideRange") && bool(root, "deliveredOutsideRange")
    )
    RecordedEnd(end, stats, run, optional(root, "stream").map(identity))
  }
}
