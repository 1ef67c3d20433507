package io.sparkkinesis.source

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import io.sparkkinesis.client.{ChildShard, HashKeyRange}
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.reader.{ReadStats, RunBound, RunOutcome, ShardEnd, ShardPosition}
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

/** Identifies a shard across the streams of one source. */
final case class ShardKey(streamName: String, shardId: String) {
  def metadataKey: String = s"$streamName/$shardId"
  override def toString: String = metadataKey
}

/** What the batch of an offset does with a shard. */
sealed abstract class ShardStatus(val name: String) extends Serializable

object ShardStatus {

  /** Read in this batch, from the entry's position. */
  case object Read extends ShardStatus("READ")

  /** Not read yet: a parent shard has not been read to its end. */
  case object Waiting extends ShardStatus("WAITING")

  /** Closed and read to its end (or lost); kept while Kinesis still lists it, so it is never read again. */
  case object Finished extends ShardStatus("FINISHED")

  val all: Seq[ShardStatus] = Seq(Read, Waiting, Finished)
}

/**
 * `task`: in a batch whose tasks read several shards each, the index of the read task that reads this shard (see
 * [[ShardGrouping]]); None when each read shard has a task of its own (and in every entry that is not read).
 */
final case class ShardEntry(
    position: ShardPosition,
    status: ShardStatus,
    parents: Seq[String],
    hashKeyRange: HashKeyRange,
    task: Option[Int] = None
)

/**
 * The offset of batch `batchId`: for every shard the source knows, where that batch starts reading it and whether
 * it reads it at all. Where each read shard ENDS is decided by the task that reads it and recorded in the metadata
 * store under (runId, batchId, shard); the next offset starts each shard there. So an offset plus its recorded ends
 * pin a batch to an exact set of records, and a replay reads the same records.
 *
 * `batchId` is -1 for the initial offset (nothing read yet). `runId` is fixed when a query with a fresh checkpoint
 * starts; it keeps the metadata of different queries and checkpoint incarnations apart.
 *
 * `identities` holds the identity (ARN, creation time) of each stream read, as DescribeStreamSummary gave it when the
 * query started: a restart compares it with the stream of that name then, and so finds a stream deleted and
 * re-created since (see [[io.sparkkinesis.config.StreamIdentity]]). Empty for a stream in an offset written before
 * identities were recorded.
 */
final case class KinesisOffset(
    batchId: Long,
    runId: String,
    shards: Map[ShardKey, ShardEntry],
    identities: Map[String, StreamIdentity] = Map.empty
) extends SparkOffset {

  // Spark compares offsets (new data? the cached ends?) several times per batch, and its Offset compares them by
  // their JSON: writing a thousand shards' entries (hash ranges as decimal numbers) each time cost the driver more
  // than the whole planning. The JSON is written once per offset; offsets compare by value.
  @transient private lazy val jsonText: String = OffsetJson.write(this)

  override def json(): String = jsonText

  /** Equal offsets have equal JSON; an offset of another class (Spark's serialized form) is compared by JSON. */
  override def equals(other: Any): Boolean = other match {
    case o: KinesisOffset =>
      (this eq o) || (batchId == o.batchId && runId == o.runId && shards == o.shards && identities == o.identities)
    case o: SparkOffset => json() == o.json()
    case _ => false
  }

  override def hashCode(): Int = json().hashCode

  def readShards: Seq[(ShardKey, ShardEntry)] =
    shards.toSeq.filter(_._2.status == ShardStatus.Read).sortBy(s => (s._1.streamName, s._1.shardId))

  /**
   * The read tasks of this batch, each with the shards it reads in name order, ordered by their first shard. A shard
   * without a task index (an offset written before grouping, or grouping off) is a task of its own.
   */
  def readTasks: Seq[ReadTask] = {
    val read = readShards
    val grouped = read.collect { case (key, ShardEntry(_, _, _, _, Some(task))) => task -> key }
    val alone = read.collect { case (key, e) if e.task.isEmpty => ReadTask.single(key) }
    val groups = grouped.groupBy(_._1).toSeq.map { case (task, keys) => ReadTask(Some(task), keys.map(_._2)) }
    (alone ++ groups).sortBy(t => (t.shards.head.streamName, t.shards.head.shardId))
  }
}

/**
 * The shards one read task of a batch reads. `index` is None for a task of one shard whose end is recorded under the
 * shard's own key, as before tasks were grouped; a grouped task records the ends of all its shards in one entry
 * under [[metadataKey]].
 */
final case class ReadTask(index: Option[Int], shards: Seq[ShardKey]) {
  require(shards.nonEmpty, "a read task reads at least one shard")

  /** The key of the task's metadata entry in its batch. */
  def metadataKey: String = index match {
    case Some(i) => ReadTask.GroupKeyPrefix + i
    case None => shards.head.metadataKey
  }
}

object ReadTask {

  /** Shard keys are `<stream>/shardId-...`; a Kinesis stream name has no '/', so no shard key starts with this. */
  val GroupKeyPrefix = "tasks/"

  def single(key: ShardKey): ReadTask = ReadTask(None, Seq(key))
}

/**
 * A task's metadata entry for one shard of one batch: where it ended (what replays and planning use), what the read
 * cost (metrics), in a `Trigger.AvailableNow` run what it learnt about the run's bound, and the identity of the
 * stream it read (from its batch's offset; None in entries written before identities were recorded).
 */
final case class RecordedEnd(
    end: ShardEnd,
    stats: ReadStats = ReadStats(),
    run: Option[RunOutcome] = None,
    stream: Option[StreamIdentity] = None
)

/**
 * Versioned JSON for offsets and recorded shard ends. Recorded ends gained the optional `stats`, `runBound` and
 * `runBoundReached` fields within version 1: readers that do not know them ignore them, and entries without them read
 * as empty statistics and no run bound.
 *
 * Version 2 adds grouped read tasks: a read shard's `task` index in offsets, and the entry of a grouped task, which
 * holds the recorded ends of all its shards (`{"version": 2, "ends": {"<stream>/<shard>": <end>, ...}}`). An offset
 * that groups no task is written as version 1, so a checkpoint stays readable by the releases before grouping until
 * grouping is used; those releases refuse version 2 with a message instead of misreading it.
 *
 * Stream identities (ARN and creation time) were added within both versions, as optional fields that older releases
 * ignore: `"streams"` of an offset gains, next to it, `"streamIdentities": {"<stream>": {"streamArn": "arn:...",
 * "streamCreationTimestamp": "2026-11-26T17:13:22.126Z"}}`, and a recorded end gains `"stream": {...}` of the same
 * form. No version bump: a checkpoint stays readable by the releases before (which drop the identities when they
 * write the next offset: the first run after upgrading again records them anew). Offsets and ends without them
 * read as identities unknown.
 */
object OffsetJson {
  val CurrentVersion = 2
  private val UngroupedVersion = 1
  private val mapper = new ObjectMapper()
  private val nodes = JsonNodeFactory.instance

  def write(o: KinesisOffset): String = {
    val root = nodes.objectNode()
    root.put("version", if (o.shards.values.exists(_.task.isDefined)) CurrentVersion else UngroupedVersion)
    root.put("batchId", o.batchId)
    root.put("runId", o.runId)
    val streams = root.putObject("streams")
    o.shards.toSeq.sortBy(s => (s._1.streamName, s._1.shardId)).foreach { case (key, entry) =>
      val stream = Option(streams.get(key.streamName))
        .map(_.asInstanceOf[ObjectNode])
        .getOrElse(streams.putObject(key.streamName))
      val shard = stream.putObject(key.shardId)
      shard.set[JsonNode]("position", positionNode(entry.position))
      shard.put("status", entry.status.name)
      val parents = shard.putArray("parents")
      entry.parents.foreach(parents.add)
      shard.set[JsonNode]("hashKeyRange", rangeNode(entry.hashKeyRange))
      entry.task.foreach(shard.put("task", _))
    }
    if (o.identities.nonEmpty) {
      val byStream = root.putObject("streamIdentities")
      o.identities.toSeq.sortBy(_._1).foreach { case (stream, identity) =>
        byStream.set[JsonNode](stream, identityNode(identity))
      }
    }
    mapper.writeValueAsString(root)
  }

  def readOffset(json: String): KinesisOffset = {
    val root = parse(json, "offset")
    val shards = for {
      (streamName, stream) <- fields(obj(root, "streams"))
      (shardId, shard) <- fields(stream)
    } yield {
      val statusName = text(shard, "status")
      val status = ShardStatus.all
        .find(_.name == statusName)
        .getOrElse(throw new IllegalArgumentException(s"Unknown shard status '$statusName' in offset $json"))
      ShardKey(streamName, shardId) ->
        ShardEntry(
          position(obj(shard, "position")),
          status,
          strings(shard, "parents"),
          range(shard, "hashKeyRange"),
          if (shard.has("task")) Some(int(shard, "task")) else None
        )
    }
    val identities = optional(root, "streamIdentities").toSeq.flatMap { _ =>
      fields(obj(root, "streamIdentities")).map { case (stream, node) => stream -> identity(node) }
    }
    KinesisOffset(long(root, "batchId"), text(root, "runId"), shards.toMap, identities.toMap)
  }

  private def identityNode(identity: StreamIdentity): ObjectNode = {
    val node = nodes.objectNode()
    identity.arn.foreach(node.put(StreamIdentity.ArnField, _))
    identity.createdAt.foreach(t => node.put(StreamIdentity.CreatedField, t.toString))
    node
  }

  private def identity(node: JsonNode): StreamIdentity = {
    if (!node.isObject)
      throw new IllegalArgumentException(s"Expected an object for a stream identity, not $node")
    val arn = optional(node, StreamIdentity.ArnField).map(_ => text(node, StreamIdentity.ArnField))
    val created = optional(node, StreamIdentity.CreatedField).map { _ =>
      val t = text(node, StreamIdentity.CreatedField)
      StreamIdentity
        .parseInstant(t)
        .getOrElse(throw new IllegalArgumentException(s"'$t' is not an ISO-8601 instant in $node"))
    }
    StreamIdentity(arn, created)
  }

  private def optional(node: JsonNode, name: String): Option[JsonNode] =
    Option(node.get(name)).filterNot(_.isNull)

  def writeEnd(e: ShardEnd): String = writeEnd(RecordedEnd(e))

  def writeEnd(recorded: RecordedEnd): String =
    mapper.writeValueAsString(endNode(recorded, Some(UngroupedVersion)))

  /** The entry of a grouped read task: the recorded end of each of its shards. */
  def writeTaskEnds(ends: Map[ShardKey, RecordedEnd]): String = {
    val root = nodes.objectNode()
    root.put("version", CurrentVersion)
    val byShard = root.putObject("ends")
    ends.toSeq.sortBy(_._1.metadataKey).foreach { case (key, end) =>
      byShard.set[JsonNode](key.metadataKey, endNode(end, None))
    }
    mapper.writeValueAsString(root)
  }

  def readTaskEnds(json: String): Map[ShardKey, RecordedEnd] = {
    val root = parse(json, "task's shard ends")
    fields(obj(root, "ends")).map { case (key, end) =>
      val slash = key.indexOf('/')
      if (slash <= 0)
        throw new IllegalArgumentException(s"Expected '<stream>/<shard>' for a shard key, not '$key'")
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
    root.put("finished", e.finished)
    root.put("recordCount", e.recordCount)
    e.millisBehindLatest.foreach(root.put("millisBehindLatest", _))
    root.put("reachedTip", e.reachedTip)
    root.put("lost", e.lost)
    // Written only when true: entries without it (and those of releases before it) read as dropped, as they did.
    if (e.deliveredOutsideRange) root.put("deliveredOutsideRange", true)
    val children = root.putArray("childShards")
    e.childShards.foreach { c =>
      val child = children.addObject()
      child.put("shardId", c.shardId)
      val parents = child.putArray("parents")
      c.parentShardIds.foreach(parents.add)
      child.set[JsonNode]("hashKeyRange", rangeNode(c.hashKeyRange))
    }
    val stats = root.putObject("stats")
    stats.put("bytes", recorded.stats.bytes)
    stats.put("throttles", recorded.stats.throttles)
    stats.put("getRecordsCalls", recorded.stats.getRecordsCalls)
    stats.put("getShardIteratorCalls", recorded.stats.getShardIteratorCalls)
    stats.put("subscribeToShardCalls", recorded.stats.subscribeToShardCalls)
    if (recorded.stats.droppedOutsideRange > 0)
      stats.put("droppedOutsideRange", recorded.stats.droppedOutsideRange)
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

  def readRecordedEnd(json: String): RecordedEnd = recordedEndOf(parse(json, "shard end"))

  private def recordedEndOf(root: JsonNode): RecordedEnd = {
    val stats = Option(root.get("stats")).filterNot(_.isNull) match {
      case None => ReadStats()
      case Some(_) =>
        val s = obj(root, "stats")
        ReadStats(
          long(s, "bytes"),
          long(s, "throttles"),
          long(s, "getRecordsCalls"),
          long(s, "getShardIteratorCalls"),
          // Absent in entries written before SubscribeToShard calls were counted.
          if (s.has("subscribeToShardCalls")) long(s, "subscribeToShardCalls") else 0L,
          if (s.has("droppedOutsideRange")) long(s, "droppedOutsideRange") else 0L
        )
    }
    val run = Option(root.get("runBound")).filterNot(_.isNull).map { _ =>
      val b = obj(root, "runBound")
      val bound = text(b, "type") match {
        case "UNBOUNDED" => RunBound.Unbounded
        case "BEFORE" =>
          RunBound.Before(text(b, "sequenceNumber"), if (b.has("subRecords")) int(b, "subRecords") else 0)
        case "PENDING" => RunBound.Pending(text(b, "iterator"))
        case other => throw new IllegalArgumentException(s"Unknown run bound type '$other' in $b")
      }
      RunOutcome(bound, bool(root, "runBoundReached"))
    }
    RecordedEnd(readEndFields(root), stats, run, optional(root, "stream").map(identity))
  }

  private def readEndFields(root: JsonNode): ShardEnd =
    ShardEnd(
      end = position(obj(root, "end")),
      finished = bool(root, "finished"),
      childShards = array(root, "childShards").map { c =>
        ChildShard(text(c, "shardId"), strings(c, "parents"), range(c, "hashKeyRange"))
      },
      recordCount = long(root, "recordCount"),
      millisBehindLatest =
        Option(root.get("millisBehindLatest")).filterNot(_.isNull).map(_ => long(root, "millisBehindLatest")),
      reachedTip = bool(root, "reachedTip"),
      lost = bool(root, "lost"),
      deliveredOutsideRange = root.has("deliveredOutsideRange") && bool(root, "deliveredOutsideRange")
    )

  private def parse(json: String, what: String): JsonNode = {
    val root =
      try mapper.readTree(json)
      catch {
        case e: Exception =>
          throw new IllegalArgumentException(s"Cannot parse the Kinesis $what '$json': $e", e)
      }
    val version = root.path("version").asInt(-1)
    if (version > CurrentVersion) {
      throw new IllegalStateException(
        s"The Kinesis $what was written in format version $version by a newer spark-kinesis; this one reads " +
          s"versions up to $CurrentVersion. Upgrade the connector to go on from this checkpoint."
      )
    }
    if (version < 1) throw new IllegalArgumentException(s"The Kinesis $what has no valid version: $json")
    root
  }

  private def fields(node: JsonNode): Seq[(String, JsonNode)] =
    node.fields().asScala.map(e => e.getKey -> e.getValue).toList

  // Strict accessors: a missing field or one of the wrong type fails, naming the field, instead of defaulting.
  private def field(node: JsonNode, name: String, what: String)(ok: JsonNode => Boolean): JsonNode = {
    val value = node.get(name)
    if (value == null || value.isNull) throw new IllegalArgumentException(s"Missing '$name' in $node")
    if (!ok(value)) throw new IllegalArgumentException(s"Expected $what for '$name' in $node")
    value
  }

  private def text(node: JsonNode, name: String): String = field(node, name, "a string")(_.isTextual).asText()

  private def long(node: JsonNode, name: String): Long =
    field(node, name, "a whole number")(v => v.isIntegralNumber && v.canConvertToLong).asLong()

  private def int(node: JsonNode, name: String): Int =
    field(node, name, "a whole number")(v => v.isIntegralNumber && v.canConvertToInt).asInt()

  private def bool(node: JsonNode, name: String): Boolean =
    field(node, name, "true or false")(_.isBoolean).asBoolean()

  private def obj(node: JsonNode, name: String): JsonNode = field(node, name, "an object")(_.isObject)

  private def array(node: JsonNode, name: String): Seq[JsonNode] =
    field(node, name, "an array")(_.isArray).elements().asScala.toList

  private def strings(node: JsonNode, name: String): Seq[String] =
    field(node, name, "an array of strings")(v => v.isArray && v.elements().asScala.forall(_.isTextual))
      .elements()
      .asScala
      .map(_.asText())
      .toList

  private def positionNode(p: ShardPosition): ObjectNode = {
    val node = nodes.objectNode()
    p match {
      case ShardPosition.TrimHorizon => node.put("type", "TRIM_HORIZON")
      case ShardPosition.AtTimestamp(ms) => node.put("type", "AT_TIMESTAMP").put("timestampMs", ms)
      case ShardPosition.At(seq) => node.put("type", "AT").put("sequenceNumber", seq)
      case ShardPosition.After(seq, sub) =>
        node.put("type", "AFTER").put("sequenceNumber", seq).put("subIndex", sub)
    }
    node
  }

  private def position(node: JsonNode): ShardPosition = text(node, "type") match {
    case "TRIM_HORIZON" => ShardPosition.TrimHorizon
    case "AT_TIMESTAMP" => ShardPosition.AtTimestamp(long(node, "timestampMs"))
    case "AT" => ShardPosition.At(text(node, "sequenceNumber"))
    case "AFTER" => ShardPosition.After(text(node, "sequenceNumber"), int(node, "subIndex"))
    case other => throw new IllegalArgumentException(s"Unknown position type '$other' in $node")
  }

  private def rangeNode(r: HashKeyRange) = {
    val node = nodes.arrayNode()
    node.add(r.start.toString)
    node.add(r.end.toString)
    node
  }

  private def range(node: JsonNode, name: String): HashKeyRange = {
    val decimal = (v: JsonNode) => v.isTextual && v.asText().matches("[0-9]{1,39}")
    val pair = field(node, name, "[start, end] as decimal strings")(v =>
      v.isArray && v.size == 2 && decimal(v.get(0)) && decimal(v.get(1))
    )
    HashKeyRange(BigInt(pair.get(0).asText()), BigInt(pair.get(1).asText()))
  }
}
