package io.sparkkinesis.source

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/**
 * DataSource V2 custom metrics of the read tasks, shown with the scan in the query's SQL metrics (Spark UI). Spark
 * instantiates these classes by name on the driver, so each has a public no-argument constructor.
 */
object KinesisTaskMetrics {
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

  /** `values` of one shard's read added to `sums` of others, as the metrics aggregate: sums, and the larger lag. */
  def addUp(sums: Map[String, Long], values: Array[CustomTaskMetric]): Map[String, Long] =
    values.foldLeft(sums) { (acc, m) =>
      val before = acc.getOrElse(m.name(), 0L)
      val value = if (m.name() == MillisBehindLatest) math.max(before, m.value()) else before + m.value()
      acc.updated(m.name(), value)
    }
}

final class RecordsReadMetric extends CustomSumMetric {
  override def name(): String = KinesisTaskMetrics.RecordsRead
  override def description(): String = "Kinesis user records read"
}

final class BytesReadMetric extends CustomSumMetric {
  override def name(): String = KinesisTaskMetrics.BytesRead
  override def description(): String = "Kinesis bytes read (record data)"
}

final class ThrottledCallsMetric extends CustomSumMetric {
  override def name(): String = KinesisTaskMetrics.ThrottledCalls
  override def description(): String = "Kinesis read calls throttled"
}

/**
 * KPL sub-records dropped because their hash key lies outside their shard's range, on a stream placed by partition
 * key (copies the KPL wrote again to the right shard; see [[io.sparkkinesis.reader.ShardReader]]).
 */
final class DroppedOutsideRangeMetric extends CustomSumMetric {
  override def name(): String = KinesisTaskMetrics.DroppedOutsideRange
  override def description(): String = "Kinesis KPL sub-records dropped outside their shard's hash range"
}

/** The largest lag of any task: how far the most lagging shard was behind the tip when its task last read it. */
final class MaxMillisBehindLatestMetric extends CustomMetric {
  override def name(): String = KinesisTaskMetrics.MillisBehindLatest
  override def description(): String = "Kinesis max milliseconds behind latest"

  override def aggregateTaskMetrics(taskMetrics: Array[Long]): String =
    if (taskMetrics.isEmpty) "0" else taskMetrics.max.toString
}
