package io.sparkkinesis.source

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.PartitionReader

/** Spark before 4.1 has no real-time mode (`Trigger.RealTime`): the stream is a micro-batch stream only. */
private[source] trait RealTimeMode

private[source] object RealTimeMode {

  /** Never reached: only a real-time batch plans real-time partitions. */
  def reader(settings: ReadSettings, task: KinesisReadTask): PartitionReader[InternalRow] =
    throw io.sparkkinesis.errors.KinesisErrors.internal(
      s"real-time mode (Trigger.RealTime) needs Spark 4.1 or newer; cannot read shard ${task.shards.head.shardId} in real time"
    )
}
