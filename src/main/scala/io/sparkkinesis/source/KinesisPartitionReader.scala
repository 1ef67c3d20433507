package io.sparkkinesis.source

import io.sparkkinesis.client.{
  HashKeyRange,
  KinesisApi,
  KinesisClientCache,
  KinesisRecord,
  SdkSubscriptionClient,
  ShardRecordsClient
}
import io.sparkkinesis.config.{AwsClientConfig, HttpProtocol}
import io.sparkkinesis.metadata.{MetadataCommitter, MetadataStore}
import io.sparkkinesis.reader._
import io.sparkkinesis.reader.efo.{EfoFetchers, SubscriptionSettings}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.unsafe.types.UTF8String
import org.slf4j.LoggerFactory

/** One shard of one batch, with everything a task needs; tasks make no control-plane calls. */
final case class KinesisInputPartition(
    streamName: String,
    shardId: String,
    batchId: Long,
    runId: String,
    start: ShardPosition,
    hashKeyRange: HashKeyRange,
    client: AwsClientConfig,
    metadataStore: MetadataStore,
    maxRecords: Long,
    maxTimeMs: Option[Long],
    recordsPerFetch: Int,
    fetchIntervalMs: Long,
    failOnDataLoss: Boolean,
    maxBytes: Option[Long] = None,
    bound: RunBound = RunBound.Unbounded,
    maxFetchRateMBps: Option[Double] = None,
    streamArn: Option[String] = None,
    efo: Option[EfoRead] = None,
    shardClosed: Boolean = false,
    realTime: Boolean = false,
    preferredExecutor: Option[ExecutorRef] = None
) extends InputPartition {
  def key: ShardKey = ShardKey(streamName, shardId)

  override def preferredLocations(): Array[String] = preferredExecutor.map(_.location).toArray

  /** How a task reads this shard from `from` (requests name the stream by ARN when it was given as one). */
  def readSpec(from: ShardPosition = start): ShardReadSpec = ShardReadSpec(
    streamArn.getOrElse(streamName),
    shardId,
    from,
    hashKeyRange,
    maxRecords,
    maxTimeMs,
    recordsPerFetch,
    failOnDataLoss,
    maxConsecutiveThrottles = client.numRetries,
    maxBytes = maxBytes,
    bound = bound
  )

  /**
   * What a task opens its shard's fetcher with: enhanced fan-out when the query has a consumer, else GetRecords on
   * the task's `records` client.
   */
  def fetchers(records: ShardRecordsClient): FetcherFactory = efo match {
    case Some(e) =>
      new EfoFetchers(
        client.endpointUrl,
        e.consumerArn,
        SubscriptionSettings(e.timeoutMs, e.maxRetries),
        () => SdkSubscriptionClient.acquire(client, e.httpProtocol)
      )
    case None =>
      new PollingFetchers(
        records,
        client.endpointUrl,
        fetchIntervalMs,
        client.retryMaxDelayMs,
        maxFetchRateMBps.map(_ * 1000000.0)
      )
  }
}

/** What a task needs to read with enhanced fan-out; the driver resolved the consumer's ARN. */
final case class EfoRead(consumerArn: String, timeoutMs: Long, maxRetries: Int, httpProtocol: HttpProtocol)

object KinesisPartitionReaderFactory extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    partition.asInstanceOf[KinesisInputPartition] match {
      case p if p.realTime => RealTimeMode.reader(p)
      case p => KinesisPartitionReader(p)
    }
}

/**
 * Reads one shard for one batch and records where it stopped. When the batch already has a recorded end for the
 * shard (a retried task or a replayed batch), it reads exactly up to that end instead. An attempt that finds, when
 * it records, that another attempt recorded a different end first fails (see [[EndRecording]]).
 */
final class KinesisPartitionReader(
    p: KinesisInputPartition,
    records: ShardRecordsClient,
    committer: MetadataCommitter,
    releaseClient: () => Unit = () => ()
) extends PartitionReader[InternalRow] {
  private val log = LoggerFactory.getLogger(classOf[KinesisPartitionReader])
  private val recorded = committer.get(p.batchId, p.key.metadataKey).map(OffsetJson.readEnd)

  private val spec = p.readSpec()
  private val fetchers = p.fetchers(records)

  private val fetcher =
    fetchers.open(ShardRead(spec, replaying = recorded.isDefined, shardClosed = p.shardClosed))
  // Where the fetcher stands once the end is recorded, when every record it handed out was consumed.
  private var handOffAt: Option[ShardPosition] = None
  private val reader = new ShardReader(spec, fetcher, recorded, probe = fetcher.tipProbe)
  private val rows = new ShardRows(p.streamName, p.shardId)
  private var finished = recorded.isDefined
  private var failed = false

  override def next(): Boolean = {
    val more =
      try reader.next()
      catch { case e: Throwable => failed = true; throw e }
    if (!more) recordEnd()
    more
  }

  override def get(): InternalRow = {
    val (record, user) = reader.current
    rows.row(record, user)
  }

  /**
   * Records this batch's end for the shard, once, unless the read failed (a retry then reads afresh); fails when
   * another attempt recorded a different end first.
   */
  private def recordEnd(): Unit = if (!finished && !failed) {
    finished = true
    val result = reader.result
    try EndRecording.record(committer, p, RecordedEnd(result, stats, reader.runOutcome), "task")
    catch { case e: Throwable => failed = true; throw e }
    if (reader.endsOnFetchBoundary) handOffAt = Some(result.end)
  }

  private def stats =
    ReadStats(
      bytes = reader.bytes,
      throttles = reader.throttles,
      getRecordsCalls = fetcher.calls(KinesisApi.GetRecords),
      getShardIteratorCalls = fetcher.calls(KinesisApi.GetShardIterator),
      subscribeToShardCalls = fetcher.calls(KinesisApi.SubscribeToShard)
    )

  override def currentMetricsValues(): Array[CustomTaskMetric] = {
    val result = reader.result
    Array(
      KinesisTaskMetrics.task(KinesisTaskMetrics.RecordsRead, result.recordCount),
      KinesisTaskMetrics.task(KinesisTaskMetrics.BytesRead, reader.bytes),
      KinesisTaskMetrics.task(KinesisTaskMetrics.ThrottledCalls, reader.throttles),
      KinesisTaskMetrics.task(KinesisTaskMetrics.MillisBehindLatest, result.millisBehindLatest.getOrElse(0L))
    )
  }

  override def close(): Unit =
    // A task stopped early (a downstream limit, or cancellation) records where it got to, so a replay agrees.
    try recordEnd()
    finally
      try {
        if (reader.droppedOutsideRange > 0) {
          log.info(
            s"Dropped ${reader.droppedOutsideRange} KPL sub-records of shard ${p.shardId} in batch ${p.batchId} " +
              "whose hash key lies outside the shard's range (the KPL writes those again to the right shard)"
          )
        }
        fetchers.release(fetcher, handOffAt)
      } finally {
        committer.close()
        releaseClient()
      }
}

object KinesisPartitionReader {

  def apply(p: KinesisInputPartition): KinesisPartitionReader =
    TaskResources.open(p)(new KinesisPartitionReader(p, _, _, _))
}

/** What a read task of either kind opens: a lease on the executor's shared Kinesis client, and its batch's store. */
private[source] object TaskResources {

  /** `build(client, committer, releaseClient)`; the lease is handed back at once if `build` fails. */
  def open[R](
      p: KinesisInputPartition
  )(build: (ShardRecordsClient, MetadataCommitter, () => Unit) => R): R = {
    val lease = KinesisClientCache.acquire(p.client)
    lease.closeIfFails(client => build(client.forReaders, p.metadataStore.open(p.runId), () => lease.close()))
  }
}

/** Rows of the read schema ([[KinesisScan.Schema]]) for the user records of one shard. */
final class ShardRows(streamName: String, shardId: String) {
  private val stream = UTF8String.fromString(streamName)
  private val shard = UTF8String.fromString(shardId)

  def row(record: KinesisRecord, user: UserRecord): InternalRow =
    new GenericInternalRow(
      Array[Any](
        user.data,
        stream,
        UTF8String.fromString(user.partitionKey),
        UTF8String.fromString(record.sequenceNumber),
        // Spark's timestamps are microseconds.
        record.approximateArrivalMillis * 1000L,
        shard
      )
    )
}
