package io.sparkkinesis.source

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader}
import org.apache.spark.sql.connector.read.streaming.{Offset, PartitionOffset, SupportsRealTimeMode}
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead.RecordStatus

/** Spark 4.1's real-time mode (`Trigger.RealTime`) for [[KinesisMicroBatchStream]]. */
private[source] trait RealTimeMode extends SupportsRealTimeMode { self: KinesisMicroBatchStream =>
  override def prepareForRealTimeMode(): Unit = enableRealTimeMode()

  override def planInputPartitions(start: Offset): Array[InputPartition] = realTimePartitions(start)

  override def mergeOffsets(offsets: Array[PartitionOffset]): Offset = mergeRealTimeEnds(offsets)
}

private[source] object RealTimeMode {

  def reader(settings: ReadSettings, task: KinesisReadTask): PartitionReader[InternalRow] =
    new KinesisRealTimeReader(settings, task)
}

/** Spark's real-time reader interface over a real-time task's [[KinesisPartitionReader]]. */
private[source] final class KinesisRealTimeReader(settings: ReadSettings, task: KinesisReadTask)
    extends RealTimeReaderAdapter {
  private val read = KinesisPartitionReader(settings, task)

  override protected def nextRecord(timeoutMs: Long): RecordStatus =
    if (read.nextWithin(timeoutMs)) RecordStatus.newStatusWithArrivalTimeMs(read.arrivalMillis)
    else RecordStatus.newStatusWithoutArrivalTime(false)

  // Outside the engine's real-time wrapper (never expected): one record if one is there now.
  override def next(): Boolean = read.nextWithin(0L)

  override def get(): InternalRow = read.get()

  override def getOffset: PartitionOffset = read.offset

  override def currentMetricsValues(): Array[CustomTaskMetric] = read.currentMetricsValues()

  override def close(): Unit = read.close()
}
