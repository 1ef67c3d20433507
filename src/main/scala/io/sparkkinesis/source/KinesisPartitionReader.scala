package io.sparkkinesis.source

import java.util.concurrent.{LinkedBlockingQueue, ThreadPoolExecutor, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable

import io.sparkkinesis.client.{
  HashKeyRange,
  KinesisApi,
  KinesisClientCache,
  KinesisRecord,
  SdkSubscriptionClient,
  ShardRecordsClient
}
import io.sparkkinesis.config.{AwsClientConfig, HttpProtocol, StreamIdentity}
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
    preferredExecutor: Option[ExecutorRef] = None,
    deliverOutsideRange: Boolean = false,
    // The stream's identity in the batch's offset, recorded with the task's end (see RecordedEnd).
    streamIdentity: Option[StreamIdentity] = None,
    // kinesis.includeSubSequenceNumber: rows carry the subSequenceNumber column.
    includeSubSequenceNumber: Boolean = false
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
    bound = bound,
    deliverOutsideRange = deliverOutsideRange
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

/**
 * A read task of a batch that reads several shards (`kinesis.shardsPerTask`): `index` is its task index in the
 * batch's offset, `shards` its shards in name order, each with its own start, limits and budget.
 */
final case class KinesisTaskPartition(
    index: Int,
    shards: Seq[KinesisInputPartition],
    preferredExecutor: Option[ExecutorRef] = None
) extends InputPartition {
  require(shards.nonEmpty, "a read task reads at least one shard")

  override def preferredLocations(): Array[String] = preferredExecutor.map(_.location).toArray
}

object KinesisPartitionReaderFactory extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    partition match {
      case p: KinesisInputPartition if p.realTime => RealTimeMode.reader(p)
      case p: KinesisInputPartition => KinesisPartitionReader(Seq(p), None)
      case t: KinesisTaskPartition => KinesisPartitionReader(t.shards, Some(t.index))
    }
}

/**
 * Reads the shards of one read task for one batch and records where each stopped, in one metadata entry (see
 * [[ReadTask]]). When the batch already has the task's entry (a retried task or a replayed batch), it reads each
 * shard exactly up to its recorded end instead. An attempt that finds, when it records, that another attempt
 * recorded different ends first fails (see [[EndRecording]]).
 *
 * A task of several shards reads them at once: each shard's fetches run on a thread of the task ([[AsyncFetcher]]),
 * so a shard that waits (pacing, throttling back-off, a subscription's next event) holds up no other; the task's
 * own thread de-aggregates and hands rows to Spark, from whichever shard has records at hand. Rows of one shard keep
 * their order; rows of different shards interleave.
 */
final class KinesisPartitionReader(
    shards: Seq[KinesisInputPartition],
    taskIndex: Option[Int],
    records: ShardRecordsClient,
    committer: MetadataCommitter,
    releaseClient: () => Unit
) extends PartitionReader[InternalRow] {

  require(
    shards.nonEmpty && (taskIndex.isDefined || shards.size == 1),
    "a task of several shards has an index"
  )

  def this(p: KinesisInputPartition, records: ShardRecordsClient, committer: MetadataCommitter) =
    this(Seq(p), None, records, committer, () => ())

  private val log = LoggerFactory.getLogger(classOf[KinesisPartitionReader])
  private val first = shards.head
  private val task = ReadTask(taskIndex, shards.map(_.key))

  private val recorded: Option[Map[ShardKey, RecordedEnd]] =
    committer.get(first.batchId, task.metadataKey).map(OffsetJson.readEndsOf(task, _))

  // The fetches of a task of several shards run on these threads; the task's thread learns which shard's is done.
  private val fetchThreads: Option[ThreadPoolExecutor] =
    if (shards.size == 1) None else Some(KinesisPartitionReader.fetchPool(shards.size))
  private val fetched = new LinkedBlockingQueue[Integer]()
  private val fetchers = first.fetchers(records)

  private val reads: IndexedSeq[TaskShardRead] = {
    val opened = mutable.ArrayBuffer[TaskShardRead]()
    try
      shards.zipWithIndex.foreach { case (p, i) =>
        val replayEnd = recorded.map { ends =>
          ends.getOrElse(
            p.key,
            throw new IllegalStateException(
              s"The recorded ends of read task ${task.metadataKey} in batch ${p.batchId} have no end for shard " +
                s"${p.key}; the batch's offset and its metadata disagree"
            )
          )
        }
        val async = fetchThreads.map(pool => (pool: java.util.concurrent.Executor, () => fetched.put(i)))
        opened += new TaskShardRead(p, fetchers, replayEnd.map(_.end), async)
      }
    catch {
      case e: Throwable =>
        opened.foreach(r =>
          try r.release(None)
          catch { case _: Throwable => }
        )
        fetchThreads.foreach(_.shutdownNow())
        throw e
    }
    opened.toIndexedSeq
  }

  // Shards to advance, in turn; a shard that waits for a fetch comes back through `fetched`.
  private val runnable = new java.util.ArrayDeque[Integer]()
  reads.indices.foreach(i => runnable.add(i))
  private var current: TaskShardRead = _ // whose record next() moved to
  private var exhausted = 0
  private var finished = recorded.isDefined
  private var failed = false
  private var recordedHere = false

  override def next(): Boolean =
    try advanceAny()
    catch { case e: Throwable => failed = true; throw e }

  private def advanceAny(): Boolean = {
    while (exhausted < reads.size) {
      if (runnable.isEmpty) {
        runnable.add(fetched.take())
        fetched.drainTo(runnable)
      }
      val i: Int = runnable.peekFirst()
      reads(i).reader.advance() match {
        case ReadStep.Record =>
          current = reads(i)
          return true
        case ReadStep.Exhausted =>
          runnable.pollFirst()
          exhausted += 1
        case ReadStep.Waiting =>
          runnable.pollFirst()
      }
    }
    current = null
    recordEnds()
    false
  }

  override def get(): InternalRow = current.row()

  /**
   * Records this batch's ends for the task's shards, once, unless the read failed (a retry then reads afresh); fails
   * when another attempt recorded different ends first.
   */
  private def recordEnds(): Unit = if (!finished && !failed) {
    finished = true
    val mine = reads.map(r => r.p.key -> r.recordedEnd).toMap
    try EndRecording.record(committer, first.batchId, task, mine, "task")
    catch { case e: Throwable => failed = true; throw e }
    recordedHere = true
  }

  override def currentMetricsValues(): Array[CustomTaskMetric] =
    Array(
      KinesisTaskMetrics.task(KinesisTaskMetrics.RecordsRead, reads.map(_.reader.result.recordCount).sum),
      KinesisTaskMetrics.task(KinesisTaskMetrics.BytesRead, reads.map(_.reader.bytes).sum),
      KinesisTaskMetrics.task(KinesisTaskMetrics.ThrottledCalls, reads.map(_.reader.throttles).sum),
      KinesisTaskMetrics.task(
        KinesisTaskMetrics.MillisBehindLatest,
        reads.map(_.reader.result.millisBehindLatest.getOrElse(0L)).max
      ),
      KinesisTaskMetrics.task(
        KinesisTaskMetrics.DroppedOutsideRange,
        reads.map(_.reader.droppedOutsideRange).sum
      )
    )

  override def close(): Unit =
    // A task stopped early (a downstream limit, or cancellation) records where it got to, so a replay agrees.
    try recordEnds()
    finally
      try
        reads.foreach { r =>
          ShardReader.warnDroppedOutsideRange(
            r.reader.droppedOutsideRange,
            r.p.streamName,
            r.p.shardId,
            r.p.batchId
          )
          // The fetcher is kept for the next read here only when this attempt recorded and it stands at the end.
          val end = if (recordedHere && r.reader.endsOnFetchBoundary) Some(r.reader.result.end) else None
          try r.release(end)
          catch { case e: Throwable => log.warn(s"Could not release the fetcher of shard ${r.p.key}: $e") }
        }
      finally
        try fetchThreads.foreach(_.shutdown())
        finally
          try committer.close()
          finally releaseClient()
}

/**
 * One shard of a read task: its fetcher from the task's factory, and its reader. With `async` (an executor, and what
 * to call when a fetch is done), the fetches run on the task's fetch threads.
 */
private final class TaskShardRead(
    val p: KinesisInputPartition,
    fetchers: FetcherFactory,
    replayEnd: Option[ShardEnd],
    async: Option[(java.util.concurrent.Executor, () => Unit)]
) {
  private val spec = p.readSpec()

  private val opened: fetchers.Fetcher =
    fetchers.open(ShardRead(spec, replaying = replayEnd.isDefined, shardClosed = p.shardClosed))
  private val asyncFetcher = async.map { case (pool, ready) => new AsyncFetcher(opened, pool, ready) }
  private val fetcher: RecordFetcher = asyncFetcher.getOrElse(opened)
  val reader = new ShardReader(spec, fetcher, replayEnd, probe = fetcher.tipProbe)
  asyncFetcher.foreach(_.confirmAfterFetch(() => reader.pendingBound))
  private val rows = new ShardRows(p.streamName, p.shardId, p.includeSubSequenceNumber)

  def row(): InternalRow = {
    val (record, user) = reader.current
    rows.row(record, user)
  }

  def recordedEnd: RecordedEnd =
    RecordedEnd(
      reader.result,
      ReadStats(
        bytes = reader.bytes,
        throttles = reader.throttles,
        getRecordsCalls = opened.calls(KinesisApi.GetRecords),
        getShardIteratorCalls = opened.calls(KinesisApi.GetShardIterator),
        subscribeToShardCalls = opened.calls(KinesisApi.SubscribeToShard),
        droppedOutsideRange = reader.droppedOutsideRange
      ),
      reader.runOutcome,
      p.streamIdentity
    )

  /** Hands the fetcher back to the factory, once a fetch still running is done (`end`: see FetcherFactory). */
  def release(end: Option[ShardPosition]): Unit = {
    asyncFetcher.foreach(_.awaitIdle())
    fetchers.release(opened, end)
  }
}

object KinesisPartitionReader {

  def apply(shards: Seq[KinesisInputPartition], taskIndex: Option[Int]): KinesisPartitionReader =
    TaskResources.open(shards.head)(new KinesisPartitionReader(shards, taskIndex, _, _, _))

  /** Threads that fetch for the shards of one task at once. */
  val MaxFetchThreadsPerTask = 32

  private val threadNames = new AtomicLong()

  private def fetchPool(shards: Int): ThreadPoolExecutor = {
    val threads = math.min(shards, MaxFetchThreadsPerTask)
    val pool = new ThreadPoolExecutor(
      threads,
      threads,
      10,
      TimeUnit.SECONDS,
      new LinkedBlockingQueue[Runnable](),
      (r: Runnable) => {
        val t = new Thread(r, s"spark-kinesis-fetch-${threadNames.incrementAndGet()}")
        t.setDaemon(true)
        t
      }
    )
    pool.allowCoreThreadTimeOut(true)
    pool
  }
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

/**
 * Rows of the read schema ([[KinesisScan.schema]]) for the user records of one shard; with `includeSubSequenceNumber`,
 * each row ends with the user record's index in its aggregate (0 for a record that was not aggregated). Every reader
 * (micro-batch, batch, real-time; polling or enhanced fan-out) builds its rows here.
 */
final class ShardRows(streamName: String, shardId: String, includeSubSequenceNumber: Boolean = false) {
  private val stream = UTF8String.fromString(streamName)
  private val shard = UTF8String.fromString(shardId)

  def row(record: KinesisRecord, user: UserRecord): InternalRow = {
    val values = Array[Any](
      user.data,
      stream,
      UTF8String.fromString(user.partitionKey),
      UTF8String.fromString(record.sequenceNumber),
      // Spark's timestamps are microseconds.
      record.approximateArrivalMillis * 1000L,
      shard
    )
    new GenericInternalRow(
      if (includeSubSequenceNumber) values :+ ShardRows.subSequenceNumber(user) else values
    )
  }
}

object ShardRows {

  /** The user record's index in its KPL aggregate; 0 for a plain record (whose UserRecord.subIndex is -1). */
  def subSequenceNumber(user: UserRecord): Long = math.max(user.subIndex, 0).toLong
}
