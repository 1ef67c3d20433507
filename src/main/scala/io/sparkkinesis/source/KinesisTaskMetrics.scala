package io.sparkkinesis.source

import io.sparkkinesis.source.KinesisTaskMetrics._
import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** DataSource V2 custom metrics of the read tasks, shown with the scan in the query's SQL metrics (Spark UI). */
private[sparkkinesis] object KinesisTaskMetrics {
  val RecordsRead = "kinesisRecordsRead"
  val BytesRead = "kinesisBytesRead"
  val ThrottledCalls = "kinesisThrottledCalls"
  val MillisBehindLatest = "kinesisMaxMillisBehindLatest"
  val DroppedOutsideRange = "kinesisDroppedOutsideRange"

  def supported: Array[CustomMetric] =
    Array(
      new RecordsReadMetric,
      new BytesReadMetric,
      new ThrottledCallsMetric,
      new MaxMillisBehindLatestMetric,
      new DroppedOutsideRangeMetric
    )

  def task(metricName: String, metricValue: Long): CustomTaskMetric = new CustomTaskMetric {
    override def name(): String = metricName
    override def value(): Long = metricValue
  }

  /** A task's metrics over the shards it reads: records, bytes, throttles and drops add up; the lag is the largest. */
  def of(shards: Seq[ShardPasses]): Array[CustomTaskMetric] = Array(
    task(RecordsRead, shards.map(_.end.recordCount).sum),
    task(BytesRead, shards.map(_.bytes).sum),
    task(ThrottledCalls, shards.map(_.throttles).sum),
    task(MillisBehindLatest, shards.map(_.end.millisBehindLatest.getOrElse(0L)).max),
    task(DroppedOutsideRange, shards.map(_.droppedOutsideRange).sum)
  )
}

/** A metric Spark sums over the tasks; each subclass has the no-argument constructor Spark calls. */
private[source] abstract class KinesisSumMetric(metricName: String, text: String) extends CustomSumMetric {
  override def name(): String = metricName
  override def description(): String = text
}

private[source] final class RecordsReadMetric
    extends KinesisSumMetric(RecordsRead, "Kinesis user records read")

private[source] final class BytesReadMetric
    extends KinesisSumMetric(BytesRead, "Kinesis bytes read (record data)")

private[source] final class ThrottledCallsMetric
    extends KinesisSumMetric(ThrottledCalls, "Kinesis read calls throttled")

/** KPL sub-records dropped on a stream placed by partition key, see [[io.sparkkinesis.reader.ShardReader]]. */
private[source] final class DroppedOutsideRangeMetric
    extends KinesisSumMetric(
      DroppedOutsideRange,
      "Kinesis KPL sub-records dropped outside their shard's hash range"
    )

/** The largest lag of any task: how far the most lagging shard was behind the tip when its task last read it. */
private[source] final class MaxMillisBehindLatestMetric extends CustomMetric {
  override def name(): String = MillisBehindLatest
  override def description(): String = "Kinesis max milliseconds behind latest"

  override def aggregateTaskMetrics(taskMetrics: Array[Long]): String =
    if (taskMetrics.isEmpty) "0" else taskMetrics.max.toString
}
