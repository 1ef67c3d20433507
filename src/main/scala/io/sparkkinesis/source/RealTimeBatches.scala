package io.sparkkinesis.source

import io.sparkkinesis.config.{KinesisOptions, SourceConfig}
import io.sparkkinesis.errors.KinesisErrors
import org.apache.spark.sql.connector.read.streaming.PartitionOffset
import org.slf4j.LoggerFactory

/**
 * Where a real-time task stopped reading its shard: the end it recorded, as the metadata store holds it. The driver
 * merges these into the next batch's offset without reading the store again. `neverAsked`: the engine never asked
 * the task for a record, because it started after its batch had ended (no free task slot while the batch ran).
 */
private[sparkkinesis] final case class KinesisShardOffset(
    streamName: String,
    shardId: String,
    recordedEnd: String,
    neverAsked: Boolean = false
) extends PartitionOffset {
  def key: ShardKey = ShardKey(streamName, shardId)
}

/**
 * The real-time batches of a stream (`Trigger.RealTime`, Spark 4.1 and newer): whether the query runs in real-time
 * mode, the batch whose tasks run now, and the check of the ends they report, which start the next batch.
 */
private[source] final class RealTimeBatches {
  private val log = LoggerFactory.getLogger(classOf[RealTimeBatches])
  @volatile private var on = false // set once, when Spark plans a real-time query
  private var running: Option[KinesisOffset] = None
  private var unaskedLastBatch = Set.empty[ShardKey] // shards whose task was never asked for a record

  def enabled: Boolean = on

  /** Real-time batches have no record, byte or time limit, and no idle wait: their tasks wait for records. */
  def enable(config: SourceConfig): Unit = {
    val ignored = Seq(
      config.maxRecordsPerTrigger.map(_ => KinesisOptions.MaxRecordsPerTrigger.fullKey),
      config.maxBytesPerTrigger.map(_ => KinesisOptions.MaxBytesPerTrigger.fullKey)
    ).flatten
    if (ignored.nonEmpty)
      log.warn(s"Real-time mode: ${ignored.mkString(", ")} do not apply (a real-time batch ends by time)")
    on = true
  }

  def started(batch: KinesisOffset): Unit = running = Some(batch)

  /** The running batch (its offset is its own, as in a micro-batch) and the end each of its read shards reported. */
  def ended(ends: Seq[PartitionOffset]): (KinesisOffset, Map[ShardKey, RecordedEnd]) = {
    val batch = running.getOrElse {
      throw KinesisErrors.internal(
        "Spark merged the offsets of a real-time batch that this source did not plan"
      )
    }
    val reported = ends.map {
      case o: KinesisShardOffset => o.key -> RecordedEndJson.readRecordedEnd(o.recordedEnd)
      case other => throw KinesisErrors.internal(s"not an offset of this source: $other")
    }.toMap
    val missing = batch.readShards.map(_._1).filterNot(reported.contains)
    if (missing.nonEmpty)
      throw KinesisErrors.internal(
        s"real-time batch ${batch.batchId}: no end was reported for ${missing.mkString(", ")}"
      )
    // A task that started after its batch ended (no free task slot) was never asked for a record: its shard did not
    // move. Once is a warning; the same shard twice in a row fails the query, as it would never be read.
    val unasked = ends.collect { case o: KinesisShardOffset if o.neverAsked => o.key }.toSet
    val again = unasked.intersect(unaskedLastBatch)
    unaskedLastBatch = unasked
    if (unasked.nonEmpty) {
      val error =
        KinesisErrors.realTimeTasksLate(batch.batchId, batch.readShards.size, unasked.toSeq.map(_.toString))
      if (again.nonEmpty) throw error
      log.warn(error.getMessage)
    }
    (batch, reported)
  }
}
