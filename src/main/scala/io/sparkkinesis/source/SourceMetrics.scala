package io.sparkkinesis.source

import com.codahale.metrics.Gauge
import io.sparkkinesis.client.{ApiCallCounter, KinesisApi}
import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory

/**
 * The source's metrics for one batch, shown in `StreamingQueryProgress.sources[].metrics`, from the ends the batch's
 * tasks recorded (a replayed task's entry is the first run's, so a batch is counted once):
 *   - `avgMsBehindLatest`, `maxMsBehindLatest`, `minMsBehindLatest`: over the read shards whose last GetRecords
 *     reported a lag (0: the task ended at the tip); absent when none did.
 *   - `recordsRead`, `bytesRead` (record data), `shardsRead`, `throttledCalls` (the tasks' throttled read calls).
 *   - `droppedOutsideRange`: KPL sub-records dropped outside their shard's hash range, on a stream placed by
 *     partition key (the KPL wrote them again to the right shard).
 *   - `<operation>Calls` (those of [[ReportedApis]] always, others when made) and `apiCalls`, their sum: the Kinesis
 *     requests of the batch, by the tasks and by the driver to plan it ([[DriverCallLedger]]); AvailableNow tip
 *     probes count as GetRecords calls. `driverApiCalls` is the driver's part.
 *   - `availableNowShardsLeft`: in a Trigger.AvailableNow run, the run's shards not yet read to their bound.
 */
private[sparkkinesis] object SourceMetrics {

  /** The operations whose counts are always reported, 0 when not called. */
  val ReportedApis: Seq[String] = {
    import KinesisApi._
    Seq(GetRecords, GetShardIterator, SubscribeToShard, ListShards, DescribeStreamSummary) ++
      Seq(DescribeStreamConsumer, RegisterStreamConsumer)
  }

  /** The metric name of an operation's count: `ListShards` -> `listShardsCalls`. */
  def callsMetric(api: String): String = api.head.toLower.toString + api.tail + "Calls"

  /** Adds up the calls of the batch's tasks (`ends`) and of the driver (`driverCalls`, by operation name). */
  def apiCalls(ends: Seq[RecordedEnd], driverCalls: Map[String, Long]): Map[String, Long] = {
    val tasks = Map(
      KinesisApi.GetRecords -> ends.map(_.stats.getRecordsCalls).sum,
      KinesisApi.GetShardIterator -> ends.map(_.stats.getShardIteratorCalls).sum,
      KinesisApi.SubscribeToShard -> ends.map(_.stats.subscribeToShardCalls).sum
    )
    (ReportedApis ++ driverCalls.keys).distinct.map { api =>
      api -> (tasks.getOrElse(api, 0L) + driverCalls.getOrElse(api, 0L))
    }.toMap
  }

  def of(
      ends: Seq[RecordedEnd],
      availableNow: Option[Map[ShardKey, RunShard]],
      driverCalls: Map[String, Long] = Map.empty
  ): Map[String, String] = {
    val lags = ends.flatMap(_.end.millisBehindLatest)
    val lagMetrics =
      if (lags.isEmpty) Map.empty[String, String]
      else
        Map(
          "avgMsBehindLatest" -> (lags.sum.toDouble / lags.size).toString,
          "maxMsBehindLatest" -> lags.max.toString,
          "minMsBehindLatest" -> lags.min.toString
        )
    val counts = Map(
      "shardsRead" -> ends.size.toLong,
      "recordsRead" -> ends.map(_.end.recordCount).sum,
      "bytesRead" -> ends.map(_.stats.bytes).sum,
      "throttledCalls" -> ends.map(_.stats.throttles).sum,
      "droppedOutsideRange" -> ends.map(_.stats.droppedOutsideRange).sum
    ).map { case (k, v) => k -> v.toString }
    val byApi = apiCalls(ends, driverCalls)
    val calls = byApi.map { case (api, n) => callsMetric(api) -> n.toString } ++ Map(
      "apiCalls" -> byApi.values.sum.toString,
      "driverApiCalls" -> driverCalls.values.sum.toString
    )
    val run = availableNow.map(r => "availableNowShardsLeft" -> r.values.count(!_.reached).toString)
    lagMetrics ++ counts ++ calls ++ run
  }
}

/**
 * The driver's Kinesis requests (counted on [[counter]]), each batch given those made since the one before it was
 * planned (start-up in the first); later ones (deregistration on stop) are never reported. `kept` batches are kept.
 */
private[source] final class DriverCallLedger(kept: Int = 10) {
  val counter = new ApiCallCounter
  private val byBatch = scala.collection.mutable.Map.empty[Long, Map[String, Long]]

  /** Gives `batchId` the requests not given to a batch yet, unless it has its counts (a batch planned again). */
  def planned(batchId: Long): Unit =
    if (!byBatch.contains(batchId)) {
      byBatch(batchId) = counter.drain()
      byBatch --= byBatch.keys.filter(_ <= batchId - kept).toList
    }

  /** The driver's requests of `batchId` by operation; none for a batch not planned here or no longer kept. */
  def of(batchId: Long): Map[String, Long] = byBatch.getOrElse(batchId, Map.empty)
}

/** A shard's or stream's figures as the driver knows them: the lag when last read, and what this run read. */
private[source] final case class ReadFigures(
    millisBehindLatest: Long = 0L,
    recordsRead: Long = 0L,
    bytesRead: Long = 0L,
    throttledCalls: Long = 0L
) {

  def +(r: RecordedEnd): ReadFigures = ReadFigures(
    r.end.millisBehindLatest.getOrElse(millisBehindLatest),
    recordsRead + r.end.recordCount,
    bytesRead + r.stats.bytes,
    throttledCalls + r.stats.throttles
  )
}

/**
 * Gauges of the query's streams and shards in Spark's metrics system on the driver (docs/guide/metrics.md): a source
 * `kinesis.<query>.<stream>` per stream read, with `millisBehindLatest` (the largest of its shards'), `recordsRead`,
 * `bytesRead` and `throttledCalls` (since the query started), and the same four per shard, `<shard>.<gauge>`, from
 * when it was read until it is finished. Values come from recorded ends ([[update]]); sinks read them on their threads.
 */
private[source] final class DriverGauges(query: Option[String], streams: Seq[String]) {
  private val log = LoggerFactory.getLogger(classOf[DriverGauges])

  private[source] val sources: Map[String, SparkMetricsSource] =
    query.toSeq
      .flatMap(q => streams.map(s => s -> new SparkMetricsSource(DriverGauges.sourceName(q, s))))
      .toMap
  @volatile private var figures = (Map.empty[ShardKey, ReadFigures], Map.empty[String, ReadFigures])
  private var counted = Long.MinValue
  private var closed = false

  private def gauges(stream: String, prefix: String)(of: => Option[ReadFigures]): Unit =
    DriverGauges.Gauges.foreach { case (name, value) =>
      val gauge: Gauge[Long] = () => of.map(value).getOrElse(0L)
      sources.get(stream).foreach(_.metricRegistry.register(prefix + name, gauge))
    }

  streams.foreach(s => gauges(s, "")(figures._2.get(s)))

  /** Registers the sources with the driver's metrics system (none outside a streaming query). */
  def register(): Unit = sources.values.foreach { source =>
    if (!source.register())
      log.warn(
        s"Metrics source ${source.sourceName} not published: no Spark metrics system, or the name is taken"
      )
  }

  /** Counts the ends `batch`'s tasks recorded, once per batch. */
  def update(batch: KinesisOffset, ends: Map[ShardKey, RecordedEnd]): Unit = {
    if (closed || batch.batchId <= counted) return
    counted = batch.batchId
    val (before, totals) = figures
    val read = ends.map { case (key, r) => key -> (before.getOrElse(key, ReadFigures()) + r) }
    val live = (before ++ read).filter { case (key, _) =>
      batch.shards.get(key).exists(_.status != ShardStatus.Finished) && !ends.get(key).exists(_.end.finished)
    }
    val byStream = streams.map { s =>
      val sum = ends.filter(_._1.streamName == s).values.foldLeft(totals.getOrElse(s, ReadFigures()))(_ + _)
      val lags = live.filter(_._1.streamName == s).values.map(_.millisBehindLatest)
      s -> sum.copy(millisBehindLatest = lags.reduceOption(_ max _).getOrElse(0L))
    }.toMap
    figures = (live, byStream)
    (live.keySet -- before.keySet).foreach(k => gauges(k.streamName, shardPrefix(k))(figures._1.get(k)))
    val gone = before.keySet -- live.keySet
    for (k <- gone; source <- sources.get(k.streamName); (name, _) <- DriverGauges.Gauges)
      source.metricRegistry.remove(shardPrefix(k) + name)
  }

  private def shardPrefix(key: ShardKey): String = DriverGauges.part(key.shardId) + "."

  def close(): Unit = {
    closed = true
    sources.values.foreach(_.remove())
  }
}

private[source] object DriverGauges {

  val Gauges: Seq[(String, ReadFigures => Long)] = Seq(
    "millisBehindLatest" -> (_.millisBehindLatest),
    "recordsRead" -> (_.recordsRead),
    "bytesRead" -> (_.bytesRead),
    "throttledCalls" -> (_.throttledCalls)
  )

  /** A name part that Graphite (`.` separates levels), JMX and Prometheus (`[^A-Za-z0-9]` become `_`) keep whole. */
  def part(name: String): String = name.replaceAll("[^A-Za-z0-9_-]", "_")

  def sourceName(query: String, stream: String): String = s"kinesis.${part(query)}.${part(stream)}"

  /** The query's name, or its id when it has none, from its job description (`<name>\nid = <id>\n...`). */
  def queryOf(id: String, description: Option[String]): String =
    description
      .map(d => d.substring(0, math.max(d.indexOf(s"\nid = $id"), 0)))
      .filter(_.nonEmpty)
      .getOrElse(id)

  /** The gauges of the streaming query whose thread builds the source (it has the query's id); none outside one. */
  def ofCurrentQuery(streams: Seq[String]): DriverGauges = {
    val spark = SparkSession.getActiveSession.map(_.sparkContext)
    val id = spark.flatMap(sc => Option(sc.getLocalProperty("sql.streaming.queryId")))
    val description = spark.flatMap(sc => Option(sc.getLocalProperty("spark.job.description")))
    new DriverGauges(id.map(queryOf(_, description)), streams)
  }
}
