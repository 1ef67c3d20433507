package io.sparkkinesis.source

import java.util.concurrent.{LinkedBlockingQueue, ThreadPoolExecutor}
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable

import io.sparkkinesis.client.{IteratorExpired, KinesisClientCache, ShardRecordsClient}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.metadata.MetadataCommitter
import io.sparkkinesis.reader._
import io.sparkkinesis.resources.DaemonThreads
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.read.PartitionReader
import org.slf4j.LoggerFactory

/**
 * Reads one read task's shards and, for a streaming batch, records where each stopped in one entry ([[ReadTask]]).
 * When the batch has the task's entry already (a retried task, a replayed batch), it reads each shard exactly to its
 * recorded end; an attempt that finds different ends recorded first fails ([[EndRecording]]). How far a shard is read
 * follows from the task's [[TaskKind]]. The shards of a task are read at once, each shard's fetches on a thread of
 * the task ([[AsyncFetcher]]), so a shard that waits holds up no other; the task's thread hands rows to Spark from
 * whichever shard has records, each shard's in order. A real-time task records its end when it closes (the engine may
 * stop asking without a last call); a real-time batch that never recorded ends (the query stopped meanwhile) is read
 * again from its start, rows emitted included.
 */
private[sparkkinesis] final class KinesisPartitionReader(
    settings: ReadSettings,
    partition: KinesisReadTask,
    records: ShardRecordsClient,
    committer: Option[MetadataCommitter],
    releaseClient: () => Unit = () => (),
    nanoTime: () => Long = () => System.nanoTime()
) extends PartitionReader[InternalRow] {

  private val log = LoggerFactory.getLogger(classOf[KinesisPartitionReader])
  private val task = partition.task
  private val kind = partition.kind

  // Where a streaming task records its ends: its batch, in the store its kind names.
  private val recording: Option[(Long, MetadataCommitter)] = (kind, committer) match {
    case (r: TaskKind.Recording, Some(store)) => Some((r.batchId, store))
    case _ => None
  }

  private val recordedJson = recording.flatMap { case (batch, store) => store.get(batch, task.metadataKey) }
  private val recorded = recordedJson.map(RecordedEndJson.readEndsOf(task, _))

  // The fetches of a task of several shards run on these threads; the task's thread learns which shard's is done.
  private val fetchThreads: Option[ThreadPoolExecutor] =
    if (partition.shards.size == 1) None else Some(KinesisPartitionReader.fetchPool(partition.shards.size))
  private val fetched = new LinkedBlockingQueue[Integer]()
  private val fetchers = settings.fetchers(records)
  private var deadlineNanos = Long.MaxValue

  private val reads: IndexedSeq[TaskShardRead] = {
    val opened = mutable.ArrayBuffer[TaskShardRead]()
    try
      partition.shards.zipWithIndex.foreach { case (slice, i) =>
        val replayEnd =
          for ((batch, _) <- recording; ends <- recorded)
            yield ends.getOrElse(
              slice.key,
              throw KinesisErrors.recordedEndMissing(s"${slice.key}", batch, s"read task ${task.metadataKey}")
            )
        val async = fetchThreads.map(pool => (pool: java.util.concurrent.Executor, () => fetched.put(i)))
        opened += new TaskShardRead(settings, kind, slice, fetchers, replayEnd.map(_.end), async, goesOn)
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

  /** Whether a shard's read goes on in another pass once `passes`' current one is exhausted. */
  private def goesOn(slice: ShardSlice, passes: ShardPasses): Boolean = kind match {
    case _: TaskKind.MicroBatch => false
    case _: TaskKind.RealTime =>
      recorded.isEmpty && !passes.pass.result.finished && nanoTime() < deadlineNanos
    case TaskKind.BatchRead =>
      if (passes.stalledInARow > ShardPasses.MaxStalledPasses)
        throw KinesisErrors.readThrottled(
          s"Reading shard ${slice.shardId} of stream ${slice.streamName} for a batch read",
          passes.stalledInARow
        )
      !passes.reachedBound
  }

  // Shards to advance, in turn; a shard that waits for a fetch comes back through `fetched`.
  private val runnable = new java.util.ArrayDeque[Integer]()
  reads.indices.foreach(i => runnable.add(i))
  private var current: TaskShardRead = _ // whose record next() moved to
  private var exhausted = 0
  private var finished = recorded.isDefined // the ends are recorded (by this attempt or an earlier one)
  private var failed = false
  private var ended = false // every shard read to its end, or the ends recorded
  private var asked = false

  override def next(): Boolean =
    try advanceAny()
    catch { case e: Throwable => failed = true; throw e }

  /** A real-time task's next record, waiting at most `timeoutMs`; false when none came in time, or none is left. */
  def nextWithin(timeoutMs: Long): Boolean = {
    asked = true
    deadlineNanos = nanoTime() + math.max(0L, math.min(timeoutMs, Long.MaxValue / 2000000L)) * 1000000L
    reads.foreach(_.waitUntil(deadlineNanos))
    next()
  }

  private def advanceAny(): Boolean = {
    while (exhausted < reads.size) {
      if (runnable.isEmpty) {
        runnable.add(fetched.take())
        fetched.drainTo(runnable)
      }
      val i: Int = runnable.peekFirst()
      reads(i).advance() match {
        case ReadStep.Record =>
          current = reads(i)
          return true
        case ReadStep.Exhausted
            if kind.realTime && recorded.isEmpty && !reads(i).passes.pass.result.finished =>
          return false // the deadline passed: a later call goes on
        case ReadStep.Exhausted =>
          runnable.pollFirst()
          exhausted += 1
        case ReadStep.Waiting => runnable.pollFirst()
      }
    }
    current = null
    if (!kind.realTime) recordEnds()
    if (recording.isEmpty) ended = !failed
    false
  }

  override def get(): InternalRow = current.row()

  /** When the current record arrived in Kinesis (its approximate arrival timestamp), in epoch milliseconds. */
  def arrivalMillis: Long = current.passes.pass.current._1.approximateArrivalMillis

  /** Where the first shard's read stands: after the last record returned. */
  def end: ShardEnd = reads.head.passes.end

  /** A real-time task's end as the metadata store holds it: the one it records, or the one a replay read to. */
  def offset: KinesisShardOffset = {
    val r = reads.head
    val end = recordedJson.getOrElse(RecordedEndJson.writeEnd(r.recordedEnd))
    KinesisShardOffset(r.slice.streamName, r.slice.shardId, end, neverAsked = !asked)
  }

  /** Records the task's ends once, unless the read failed (a retry reads afresh); see [[EndRecording.record]]. */
  private def recordEnds(): Unit = recording.foreach { case (batch, store) =>
    if (!finished && !failed) {
      finished = true
      val mine = reads.map(r => r.slice.key -> r.recordedEnd).toMap
      val what = if (kind.realTime) "real-time task" else "task"
      try EndRecording.record(store, batch, task, mine, what)
      catch { case e: Throwable => failed = true; throw e }
      ended = true
    }
  }

  override def currentMetricsValues(): Array[CustomTaskMetric] = KinesisTaskMetrics.of(reads.map(_.passes))

  override def close(): Unit =
    // A task stopped early (a limit downstream, cancellation, a real-time batch's end) records where it got to.
    try recordEnds()
    finally
      try
        reads.foreach { r =>
          ShardReader.warnDroppedOutsideRange(
            r.passes.droppedOutsideRange,
            r.slice.streamName,
            r.slice.shardId,
            partition.describe
          )
          // The fetcher is kept for the next read here only when this attempt ended and it stands at the end.
          val keep = !failed && (ended || recorded.isDefined) && r.passes.pass.endsOnFetchBoundary
          try r.release(if (keep) Some(r.passes.end.end) else None)
          catch {
            case e: Throwable => log.warn(s"Could not release the fetcher of shard ${r.slice.key}: $e")
          }
        }
      finally
        try fetchThreads.foreach(_.shutdown())
        finally
          try committer.foreach(_.close())
          finally releaseClient()
}

/**
 * One shard of a read task: its fetcher and its passes. With `async` (an executor, and what to call when a fetch is
 * done), fetches run on the task's fetch threads. A real-time task reads every pass on one fetcher at the tip.
 */
private final class TaskShardRead(
    settings: ReadSettings,
    kind: TaskKind,
    val slice: ShardSlice,
    fetchers: FetcherFactory,
    replayEnd: Option[ShardEnd],
    async: Option[(java.util.concurrent.Executor, () => Unit)],
    goesOn: (ShardSlice, ShardPasses) => Boolean
) {
  private var opened: fetchers.Fetcher = _
  private var asyncFetcher: Option[AsyncFetcher] = None

  /** A pass from `spec.start`, on the current fetcher or (`sameFetcher` false) on a new one. */
  private def pass(spec: ShardReadSpec, sameFetcher: Boolean): ShardReader = {
    val replay = if (opened == null) replayEnd else None // only the first pass replays
    if (opened == null || !sameFetcher && !kind.realTime) {
      if (opened != null) release(None)
      opened =
        fetchers.open(ShardRead(spec, replayEnd.isDefined, slice.shardClosed, followTip = kind.realTime))
      asyncFetcher = async.map { case (pool, ready) => new AsyncFetcher(opened, pool, ready) }
      asyncFetcher.foreach(_.confirmAfterFetch(outcome => passes.pass.probeAfter(outcome)))
    }
    val fetcher: RecordFetcher = asyncFetcher.getOrElse(opened)
    val probe = kind match {
      case TaskKind.BatchRead => fetcher.tipProbe.map(explainExpiredPin)
      case _ => fetcher.tipProbe
    }
    new ShardReader(spec, fetcher, replay, probe = probe)
  }

  /** A batch read's probe of its pinned end, failing with what to do when Kinesis expired the pinning iterator. */
  private def explainExpiredPin(probe: TipProbe): TipProbe = iterator =>
    try probe.poll(iterator)
    catch {
      case e: IteratorExpired => throw KinesisErrors.pinnedEndExpired(slice.shardId, slice.streamName, e)
    }

  private val firstSpec = slice.spec(settings)
  val passes: ShardPasses = new ShardPasses(pass(firstSpec, sameFetcher = false), firstSpec, pass)
  private val rows = new ShardRows(slice.streamName, slice.shardId, settings.includeSubSequenceNumber)

  private val continues = () => goesOn(slice, passes) // made once: advance() runs for every record

  /** The next step of the read, in as many passes as the task's kind reads. */
  def advance(): ReadStep = passes.advance(continues)

  /** Sets how long a real-time read waits at the tip ([[RecordFetcher.waitUntil]]). */
  def waitUntil(deadlineNanos: Long): Unit = opened.waitUntil(deadlineNanos)

  def row(): InternalRow = {
    val (record, user) = passes.pass.current
    rows.row(record, user)
  }

  def recordedEnd: RecordedEnd = passes.recordedEnd(opened, slice.streamIdentity)

  /** Hands the fetcher back to the factory, once a fetch still running is done (`end`: see FetcherFactory). */
  def release(end: Option[ShardPosition]): Unit = {
    asyncFetcher.foreach(_.awaitIdle())
    fetchers.release(opened, end)
  }
}

private[sparkkinesis] object KinesisPartitionReader {

  /** A task's reader, on a lease of the executor's shared Kinesis client and its batch's store if it records. */
  def apply(settings: ReadSettings, task: KinesisReadTask): KinesisPartitionReader = {
    val lease = KinesisClientCache.acquire(settings.client)
    lease.closeIfFails { client =>
      val committer = Some(task.kind).collect { case r: TaskKind.Recording => r.store.open(r.runId) }
      new KinesisPartitionReader(settings, task, client.forReaders, committer, () => lease.close())
    }
  }

  /** Threads that fetch for the shards of one task at once. */
  val MaxFetchThreadsPerTask = 32

  private val threadNames = new AtomicLong()

  private def fetchPool(shards: Int): ThreadPoolExecutor = DaemonThreads.pool(
    s"spark-kinesis-fetch-${threadNames.incrementAndGet()}",
    math.min(shards, MaxFetchThreadsPerTask),
    idleSeconds = 10
  )
}
