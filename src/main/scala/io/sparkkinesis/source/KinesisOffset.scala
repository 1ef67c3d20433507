package io.sparkkinesis.source

import com.fasterxml.jackson.databind.JsonNode
import com.fasterxml.jackson.databind.node.ObjectNode
import io.sparkkinesis.client.HashKeyRange
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.reader.ShardPosition
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}

/** Identifies a shard across the streams of one source. */
private[sparkkinesis] final case class ShardKey(streamName: String, shardId: String) {
  def metadataKey: String = s"$streamName/$shardId"
  override def toString: String = metadataKey
}

/** What the batch of an offset does with a shard. */
private[sparkkinesis] sealed abstract class ShardStatus(val name: String) extends Serializable

private[sparkkinesis] object ShardStatus {

  /** Read in this batch, from the entry's position. */
  case object Read extends ShardStatus("READ")

  /** Not read yet: a parent shard has not been read to its end. */
  case object Waiting extends ShardStatus("WAITING")

  /** Closed and read to its end (or lost); kept while Kinesis still lists it, so it is never read again. */
  case object Finished extends ShardStatus("FINISHED")

  val all: Seq[ShardStatus] = Seq(Read, Waiting, Finished)
}

/** `task`: the index of the read task that reads this shard, in a batch of grouped tasks ([[ShardGrouping]]). */
private[sparkkinesis] final case class ShardEntry(
    position: ShardPosition,
    status: ShardStatus,
    parents: Seq[String],
    hashKeyRange: HashKeyRange,
    task: Option[Int] = None
)

/**
 * The offset of batch `batchId`: for every shard the source knows, where that batch starts reading it and whether it
 * reads it at all. Where each read shard ENDS is decided by the task that reads it and recorded in the metadata store
 * under (runId, batchId, shard), where the next offset starts it: an offset plus its recorded ends pin a batch to an
 * exact set of records, which a replay reads again. `batchId` is -1 for the initial offset. `runId`, fixed when a
 * query with a fresh checkpoint starts, keeps the metadata of different queries and checkpoint incarnations apart.
 * `identities`: each stream's identity (ARN, creation time) when the query started, which a restart compares with the
 * stream of that name then ([[io.sparkkinesis.config.StreamIdentity]]); a stream without one has an unknown identity.
 */
private[sparkkinesis] final case class KinesisOffset(
    batchId: Long,
    runId: String,
    shards: Map[ShardKey, ShardEntry],
    identities: Map[String, StreamIdentity] = Map.empty
) extends SparkOffset {

  // Spark compares offsets several times per batch, and its Offset compares them by their JSON, which is costly for
  // many shards: the JSON is written once per offset, and offsets compare by value.
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
   * without a task index (a version 1 offset) is a task of its own.
   */
  def readTasks: Seq[ReadTask] = {
    val read = readShards
    val grouped = read.collect { case (key, ShardEntry(_, _, _, _, Some(task))) => task -> key }
    val alone = read.collect { case (key, e) if e.task.isEmpty => ReadTask(None, Seq(key)) }
    val groups = grouped.groupBy(_._1).toSeq.map { case (task, keys) => ReadTask(Some(task), keys.map(_._2)) }
    (alone ++ groups).sortBy(t => (t.shards.head.streamName, t.shards.head.shardId))
  }
}

/**
 * The shards one read task of a batch reads. `index` is None for a task of one shard, whose end is recorded under the
 * shard's own key; a grouped task records the ends of all its shards in one entry under [[metadataKey]].
 */
private[sparkkinesis] final case class ReadTask(index: Option[Int], shards: Seq[ShardKey]) {
  require(shards.nonEmpty, "a read task reads at least one shard")

  /** The key of the task's metadata entry in its batch. */
  def metadataKey: String = index match {
    case Some(i) => ReadTask.GroupKeyPrefix + i
    case None => shards.head.metadataKey
  }
}

private[sparkkinesis] object ReadTask {

  /** Shard keys are `<stream>/shardId-...`; a Kinesis stream name has no '/', so no shard key starts with this. */
  val GroupKeyPrefix = "tasks/"
}

/**
 * Versioned JSON for offsets. Version 2 holds grouped read tasks (a read shard's `task` index); an offset that groups
 * no task is written as version 1; a newer version is refused with a message instead of misread. Both may carry the
 * streams' identities, an optional field next to `"streams"`:
 * `"streamIdentities": {"<stream>": {"streamArn": "arn:...", "streamCreationTimestamp": "2026-11-26T17:13:22.126Z"}}`.
 * A reader ignores fields it does not know; an offset without identities reads as identities unknown.
 */
private[sparkkinesis] object OffsetJson {
  import JsonFields._

  val CurrentVersion = 2
  private val UngroupedVersion = 1

  def write(o: KinesisOffset): String = {
    val version = if (o.shards.values.exists(_.task.isDefined)) CurrentVersion else UngroupedVersion
    val root = nodes.objectNode().put("version", version).put("batchId", o.batchId).put("runId", o.runId)
    val streams = root.putObject("streams")
    o.shards.toSeq.sortBy(s => (s._1.streamName, s._1.shardId)).foreach { case (key, entry) =>
      val stream = Option(streams.get(key.streamName))
        .map(_.asInstanceOf[ObjectNode])
        .getOrElse(streams.putObject(key.streamName))
      val shard = stream.putObject(key.shardId)
      shard.set[JsonNode]("position", positionNode(entry.position))
      shard.put("status", entry.status.name)
      entry.parents.foldLeft(shard.putArray("parents"))(_.add(_))
      shard.set[JsonNode]("hashKeyRange", rangeNode(entry.hashKeyRange))
      entry.task.foreach(shard.put("task", _))
    }
    if (o.identities.nonEmpty) {
      val byStream = root.putObject("streamIdentities")
      o.identities.toSeq.sortBy(_._1).foreach { case (s, id) => byStream.set[JsonNode](s, identityNode(id)) }
    }
    mapper.writeValueAsString(root)
  }

  def readOffset(json: String): KinesisOffset = {
    val root = parse(json, "offset", CurrentVersion)
    val shards = for {
      (streamName, stream) <- fields(obj(root, "streams"))
      (shardId, shard) <- fields(stream)
    } yield {
      val statusName = text(shard, "status")
      val status = ShardStatus.all.find(_.name == statusName).getOrElse {
        throw KinesisErrors.checkpointUnreadable(s"Unknown shard status '$statusName' in offset $json")
      }
      val task = if (shard.has("task")) Some(int(shard, "task")) else None
      ShardKey(streamName, shardId) ->
        ShardEntry(
          position(obj(shard, "position")),
          status,
          strings(shard, "parents"),
          range(shard, "hashKeyRange"),
          task
        )
    }
    val identities = optional(root, "streamIdentities").toSeq.flatMap { _ =>
      fields(obj(root, "streamIdentities")).map { case (stream, node) => stream -> identity(node) }
    }
    KinesisOffset(long(root, "batchId"), text(root, "runId"), shards.toMap, identities.toMap)
  }
}
