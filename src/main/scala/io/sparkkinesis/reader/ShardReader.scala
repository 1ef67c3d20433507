package io.sparkkinesis.reader

import io.sparkkinesis.client.{ChildShard, HashKeyRange, KinesisRecord, ThroughputExceeded}
import io.sparkkinesis.errors.{KinesisErrors, KinesisIllegalStateException}
import org.slf4j.LoggerFactory

/** What one fetch from a shard gave. */
private[sparkkinesis] sealed trait FetchOutcome

private[sparkkinesis] object FetchOutcome {

  /** Records in shard order. `shardEnded`: the shard is closed and nothing follows these records. */
  final case class Fetched(
      records: Seq[KinesisRecord],
      millisBehindLatest: Option[Long],
      shardEnded: Boolean,
      childShards: Seq[ChildShard]
  ) extends FetchOutcome

  /** Kinesis refused the read for lack of throughput; the fetcher has already backed off. */
  case object Throttled extends FetchOutcome

  /** The shard no longer exists (expired or deleted). */
  final case class Gone(reason: String) extends FetchOutcome
}

/** What [[ShardReader.advance]] did. */
private[sparkkinesis] sealed trait ReadStep

private[sparkkinesis] object ReadStep {

  /** Moved to the next record: see [[ShardReader.current]]. */
  case object Record extends ReadStep

  /** The batch's part of the shard is exhausted. */
  case object Exhausted extends ReadStep

  /** The reader waits for a fetch; advance again once the fetcher's outcome is at hand. */
  case object Waiting extends ReadStep
}

/** Where a task reads one shard, and when it stops. */
private[sparkkinesis] final case class ShardReadSpec(
    streamName: String,
    shardId: String,
    start: ShardPosition,
    hashKeyRange: HashKeyRange,
    maxRecords: Long,
    maxTimeMs: Option[Long],
    recordsPerFetch: Int,
    failOnDataLoss: Boolean,
    maxConsecutiveThrottles: Int,
    maxBytes: Option[Long] = None,
    bound: RunBound = RunBound.Unbounded,
    deliverOutsideRange: Boolean = false
) {
  def describe: String = s"shard $shardId of stream $streamName"
}

private[sparkkinesis] final class DataLossException(
    shard: String,
    stream: String,
    position: String,
    why: String
) extends KinesisIllegalStateException("KINESIS_DATA_LOSS.RECORDS_LOST", Seq(shard, stream, position, why))

/**
 * Reads one shard for one batch, for any fetcher. It de-aggregates KPL records, tracks the exact position (down to
 * the sub-record), and decides when to stop. KPL sub-records whose hash key lies outside the shard's range are
 * delivered when `spec.deliverOutsideRange` (service-managed record distribution places an aggregate regardless of
 * its sub-records' keys), else dropped and counted ([[droppedOutsideRange]]); a replay decides as its recorded run did
 * ([[ShardEnd.deliveredOutsideRange]]).
 *   - a first run stops at `maxRecords`, before the record that would pass `maxBytes` (never before the first), at
 *     `maxTimeMs`, at the tip of the shard (a response that reports zero milliseconds behind latest), at the end of
 *     a closed shard, or at the shard's [[RunBound]] in a `Trigger.AvailableNow` run or a batch read. A pending
 *     bound is resolved by `probe`: one probe that finds nothing put since the start confirms every page fetched
 *     before it, so the reader holds pages back unconsumed and fetches ahead until the tip (or the end, a limit, a
 *     throttled call, `heldBytesBudget` bytes held, or [[ShardReader.HeldNanosBudget]] since the last probe), then
 *     confirms them all with one probe before consuming any;
 *   - a replay (`replayEnd` given) ignores those limits and stops exactly where the recorded run stopped.
 */
private[sparkkinesis] final class ShardReader(
    spec: ShardReadSpec,
    fetcher: RecordFetcher,
    replayEnd: Option[ShardEnd],
    nanoTime: () => Long = () => System.nanoTime(),
    probe: Option[TipProbe] = None,
    warn: String => Unit = ShardReader.warn,
    heldBytesBudget: Long = ShardReader.HeldBytesBudget
) {
  private val log = LoggerFactory.getLogger(classOf[ShardReader])
  private val startedNanos = nanoTime()

  private var position: ShardPosition = spec.start
  private var pending: Iterator[(KinesisRecord, UserRecord)] = Iterator.empty
  private var currentRecord: (KinesisRecord, UserRecord) = _
  private var emitted = 0L
  private var done = false
  private var shardEnded = false
  private var atTip = false
  private var lost = false
  private var children: Seq[ChildShard] = Nil
  private var millisBehind: Option[Long] = None
  private var consecutiveThrottles = 0
  private var emittedBytes = 0L
  // Kinesis records consumed whole in this run, and their user records: the sub-records per record that sizes a fetch.
  private var wholeRecords = 0L
  private var userRecordsInWhole = 0L
  // A first run that stopped inside a fetched page (a byte or run limit, or an unconfirmed page it dropped).
  private var cutShort = false
  private var bound: RunBound = if (replayEnd.isDefined) RunBound.Unbounded else spec.bound
  private var boundReached = false
  private var emptyAtTip = false
  // Pages fetched under a pending bound that no probe has confirmed yet: never consumed before one does.
  private var held = Vector.empty[KinesisRecord]
  private var heldBytes = 0L
  // When the pending bound's iterator was last renewed by a probe (or the reader started, after the plan took it).
  private var pinRenewedNanos = startedNanos

  /** Sub-records already consumed by an earlier batch, when the start lies inside an aggregate. */
  private val resumeInside: Option[ShardPosition.After] =
    Some(spec.start).collect { case a: ShardPosition.After if !a.wholeRecord => a }

  /** KPL sub-records outside the shard's hash-key range that this reader dropped (never when it delivers them). */
  var droppedOutsideRange = 0L

  /** Whether sub-records outside the shard's range are delivered: as the recorded run did in a replay. */
  val deliversOutsideRange: Boolean = replayEnd.fold(spec.deliverOutsideRange)(_.deliveredOutsideRange)

  /** Records that start with the KPL magic bytes but are no valid aggregate; each is read as one plain record. */
  var malformedAggregates = 0L

  private def malformed(record: KinesisRecord)(reason: String): Unit = {
    malformedAggregates += 1
    if (malformedAggregates <= ShardReader.MaxMalformedWarnings) {
      val more =
        if (malformedAggregates == ShardReader.MaxMalformedWarnings)
          " Further such records read by this task are passed through without a warning."
        else ""
      warn(
        s"Record ${record.sequenceNumber} of ${spec.describe} starts with the KPL aggregation magic bytes but is " +
          s"not a valid aggregate: $reason. It is passed through as one plain record (data as stored).$more"
      )
    }
  }
  var throttles = 0L

  /** Bytes of the user records emitted. */
  def bytes: Long = emittedBytes

  /** What this task learnt about the run bound; None outside `Trigger.AvailableNow` runs and in replays. */
  def runOutcome: Option[RunOutcome] =
    if (replayEnd.isDefined || spec.bound == RunBound.Unbounded) None
    else {
      // A pending bound is reached by an empty fetch at the tip: every record that predates the start was in the
      // shard before that fetch. (A full page reporting zero lag is not enough: the lag is a time difference, and
      // records put within the same millisecond may still follow.)
      val tipWithoutNewRecords = bound.isInstanceOf[RunBound.Pending] && emptyAtTip
      Some(RunOutcome(bound, boundReached || tipWithoutNewRecords || shardEnded && !pending.hasNext || lost))
    }

  // A replay whose recorded end is its start has nothing to read: it takes the recorded outcome without a call. (A
  // closed shard's end is known from the record; the service need not deliver the end again, which kinesis-local's
  // subscriptions never do.)
  replayEnd.foreach(e => if (e.lost || e.end == spec.start) reachRecordedEnd(e))

  /** Ends a replay at its recorded end, reporting the recorded outcome (closed, its children, lost). */
  private def reachRecordedEnd(e: ShardEnd): Unit = {
    done = true
    shardEnded = e.finished && !e.lost
    children = e.childShards
    lost = e.lost
  }

  /** Moves to the next record; false when the batch's part of this shard is exhausted. */
  def next(): Boolean = step(waitForFetch = true) == ReadStep.Record

  /** Moves to the next record unless that needs a fetch whose outcome is not at hand yet ([[RecordFetcher.poll]]). */
  def advance(): ReadStep = step(waitForFetch = false)

  // Set while a fetch is asked for and its outcome not yet taken: the reader then takes it before anything else.
  private var fetchLimit: Option[Int] = None

  private def step(waitForFetch: Boolean): ReadStep = {
    while (!done)
      if (pending.hasNext) {
        if (consume(pending.next())) return ReadStep.Record
      } else if (held.nonEmpty && fetchLimit.isEmpty && !readsAhead) {
        confirmHeld()
      } else if (shardEnded) {
        done = true
      } else if (fetchLimit.isDefined || !stopBeforeFetch()) {
        val limit = fetchLimit.getOrElse(nextFetchLimit)
        val outcome = if (waitForFetch) Some(fetcher.fetch(limit)) else fetcher.poll(limit)
        fetchLimit = if (outcome.isEmpty) Some(limit) else None
        outcome match {
          case Some(o) => take(o)
          case None => return ReadStep.Waiting
        }
      }
    ReadStep.Exhausted
  }

  def current: (KinesisRecord, UserRecord) = currentRecord

  /** True when the last fetch found the shard open with no record after this reader's position. */
  def emptyAtTipOfOpenShard: Boolean = emptyAtTip && !pending.hasNext && held.isEmpty

  /**
   * The tip iterator to probe right after a fetch that gave `outcome`, when this reader will confirm its held pages
   * as soon as it takes that outcome; None otherwise. (An [[AsyncFetcher]] probes on its fetching thread.)
   */
  def probeAfter(outcome: FetchOutcome): Option[String] = (bound, outcome) match {
    case (RunBound.Pending(iterator), FetchOutcome.Fetched(records, behind, ended, _))
        if replayEnd.isEmpty && (held.nonEmpty || records.nonEmpty) =>
      val bytes = heldBytes + sizeOf(records)
      if (readsAheadWith(ShardReader.tipOf(behind, records), ended, held.size + records.size, bytes)) None
      else Some(iterator)
    case _ => None
  }

  /** Whether the reader fetches another page before confirming the ones it holds. */
  private def readsAhead: Boolean =
    consecutiveThrottles == 0 && readsAheadWith(atTip, shardEnded, held.size, heldBytes)

  private def readsAheadWith(tip: Boolean, ended: Boolean, heldRecords: Int, bytes: Long): Boolean =
    !tip && !ended && bytes < heldBytesBudget && emitted + heldRecords < spec.maxRecords &&
      spec.maxBytes.forall(emittedBytes + bytes < _) && !timeUp &&
      nanoTime() - pinRenewedNanos < ShardReader.HeldNanosBudget

  private def sizeOf(records: Seq[KinesisRecord]): Long = records.iterator.map(_.data.length.toLong).sum

  /** Consumes the held pages if a probe made now confirms them; otherwise drops them and ends the batch before them. */
  private def confirmHeld(): Unit = {
    val records = held
    held = Vector.empty
    heldBytes = 0L
    if (confirmPage()) pending = deaggregated(records)
    else {
      cutShort = true
      done = true
    }
  }

  private def deaggregated(records: Seq[KinesisRecord]): Iterator[(KinesisRecord, UserRecord)] =
    records.iterator.flatMap(r =>
      KplAggregation.deaggregate(r.data, r.partitionKey, malformed(r)).map(u => (r, u))
    )

  def startedAt: ShardPosition = spec.start

  /** True when the fetcher's iterator points exactly at `result.end`: every fetched record was consumed. */
  def endsOnFetchBoundary: Boolean =
    !pending.hasNext && held.isEmpty && !shardEnded && !lost && !cutShort && fetchLimit.isEmpty

  /** The outcome to record once `next()` has returned false (or the task ends early). */
  def result: ShardEnd = ShardEnd(
    end = position,
    finished = shardEnded && !pending.hasNext || lost,
    childShards = children,
    recordCount = emitted,
    millisBehindLatest = millisBehind,
    reachedTip = atTip,
    lost = lost,
    deliveredOutsideRange = deliversOutsideRange
  )

  // Runs once per user record: matches instead of closures, which would be allocated for every call.
  private def consume(item: (KinesisRecord, UserRecord)): Boolean = {
    val (record, user) = item
    val last = !user.aggregated || user.subIndex == user.subCount - 1
    val next =
      ShardPosition.After(record.sequenceNumber, if (last) ShardPosition.WholeRecord else user.subIndex)
    resumeInside match {
      case Some(r) if r.sequenceNumber == record.sequenceNumber && user.subIndex <= r.subIndex => return false
      case _ =>
    }
    if (replayEnd.isDefined) replayEnd.get.end match {
      case e: ShardPosition.After if ShardPosition.compareAfter(next, e) > 0 =>
        throw KinesisErrors.recordedBatchLost(spec.describe, s"$e", s"the next record is $next")
      case _ =>
    }
    val inRange = !user.aggregated || deliversOutsideRange || spec.hashKeyRange.contains(user.hashKey)
    if (replayEnd.isEmpty && stopsBefore(record, user, inRange)) {
      done = true
      cutShort = true
      return false
    }
    position = next
    if (last) {
      wholeRecords += 1
      userRecordsInWhole += (if (user.aggregated) user.subCount else 1)
    }
    replayEnd match {
      case Some(e) if e.end == position => reachRecordedEnd(e)
      case _ =>
    }
    if (!inRange) {
      droppedOutsideRange += 1
      false
    } else {
      emitted += 1
      emittedBytes += user.data.length
      currentRecord = item
      if (replayEnd.isEmpty && emitted >= spec.maxRecords) done = true
      true
    }
  }

  /** First-run limits checked before a record is consumed: the run bound, then the byte limit. */
  private def stopsBefore(record: KinesisRecord, user: UserRecord, inRange: Boolean): Boolean =
    bound match {
      case b: RunBound.Before if !b.admits(record.sequenceNumber, user.subIndex) =>
        boundReached = true
        true
      case _ =>
        inRange && emitted > 0 && (spec.maxBytes match {
          case Some(most) => emittedBytes + user.data.length > most
          case None => false
        })
    }

  /**
   * With a pending run bound, decides whether the pages held lie inside it, by polling the run's tip iterator AFTER
   * their fetches: if nothing was put since the start, every fetched record predates the start. False when they
   * cannot be confirmed (the probe was throttled or stayed inconclusive); the batch then ends before them.
   */
  private def confirmPage(): Boolean = bound match {
    case RunBound.Pending(iterator) =>
      var current = iterator
      var attempts = 0
      while (attempts < 5) {
        attempts += 1
        pinRenewedNanos = nanoTime()
        val result =
          try probe.get.poll(current)
          catch { case _: ThroughputExceeded => throttles += 1; return false }
        bound = RunBound.of(result)
        result match {
          case TipProbe.Unknown(next) => current = next
          case _ => return true
        }
      }
      false
    case _ => true
  }

  /** Stop conditions checked between fetches; true when the reader is done. */
  private def stopBeforeFetch(): Boolean = {
    if (replayEnd.isEmpty && (atTip || emitted >= spec.maxRecords || timeUp)) done = true
    done
  }

  private def timeUp: Boolean = spec.maxTimeMs.exists((nanoTime() - startedNanos) / 1000000L >= _)

  /**
   * Kinesis records to ask for: a replay reads full pages (it stops at its recorded end, not at maxRecords, which may
   * have changed since); a first run asks for the user records it may still read, divided by the user records per
   * Kinesis record seen so far, so that a page of KPL aggregates ends near the limit instead of far past it, where
   * the next batch would fetch the same records again.
   */
  private def nextFetchLimit: Int = {
    val remaining = (spec.maxRecords - emitted - held.size).toDouble
    val records =
      if (replayEnd.isDefined) spec.recordsPerFetch.toDouble
      else if (wholeRecords == 0) remaining
      else math.ceil(remaining * wholeRecords / userRecordsInWhole)
    math.max(1.0, math.min(spec.recordsPerFetch.toDouble, records)).toInt
  }

  private def take(outcome: FetchOutcome): Unit =
    outcome match {
      case FetchOutcome.Fetched(records, behind, ended, childShards) =>
        consecutiveThrottles = 0
        millisBehind = behind.orElse(millisBehind)
        if (replayEnd.isEmpty && bound.isInstanceOf[RunBound.Pending]) {
          held ++= records
          heldBytes += sizeOf(records)
        } else pending = deaggregated(records)
        shardEnded = ended
        children = childShards
        atTip = ShardReader.tipOf(behind, records)
        emptyAtTip = records.isEmpty && (behind.isEmpty || behind.contains(0L)) && !ended
        if (replayEnd.nonEmpty && atTip && records.isEmpty && !ended)
          throw KinesisErrors.recordedBatchLost(
            spec.describe,
            s"${replayEnd.get.end}",
            s"it reached the tip at $position"
          )
      case FetchOutcome.Throttled =>
        throttles += 1
        consecutiveThrottles += 1
        val limitReached = consecutiveThrottles > spec.maxConsecutiveThrottles
        if (replayEnd.isEmpty && held.isEmpty && (emitted > 0 || limitReached)) {
          log.warn(
            s"Reading ${spec.describe} was throttled $consecutiveThrottles times in a row; ending this batch early"
          )
          done = true
        } else if (limitReached && consecutiveThrottles > 10 * spec.maxConsecutiveThrottles)
          throw KinesisErrors.readThrottled(s"Replaying ${spec.describe}", consecutiveThrottles)
      case FetchOutcome.Gone(reason) =>
        val error = new DataLossException(spec.shardId, spec.streamName, s"$position", reason)
        if (spec.failOnDataLoss) throw error
        log.warn(s"Skipping lost records, as kinesis.failOnDataLoss is false: ${error.getMessage}")
        lost = true
        done = true
    }
}

private[sparkkinesis] object ShardReader {
  private val log = LoggerFactory.getLogger(classOf[ShardReader])

  /** Malformed aggregates warned about per task; the rest are only counted. */
  val MaxMalformedWarnings = 5

  /** Bytes of record data a reader fetches ahead under a pending bound before one probe confirms them (plus a page). */
  val HeldBytesBudget: Long = 4L << 20

  /**
   * How long a reader fetches ahead under a pending bound without a probe. Each probe renews the bound's iterator, so
   * a reader that stays behind a busy shard's tip confirms its pages long before Kinesis expires the iterator (after
   * five minutes), however few bytes its pages hold.
   */
  val HeldNanosBudget: Long = 10L * 1000000000L

  /** Whether a GetRecords response stands at the shard's tip: zero lag, or no lag reported and no record. */
  private def tipOf(behind: Option[Long], records: Seq[KinesisRecord]): Boolean =
    behind.contains(0L) || behind.isEmpty && records.isEmpty

  private def warn(message: String): Unit = log.warn(message)

  /**
   * The one warning of a task that dropped `dropped` KPL sub-records of a shard because their hash key lies outside
   * the shard's range (nothing when it dropped none). `where`: the read, as the message names it.
   */
  def warnDroppedOutsideRange(
      dropped: Long,
      stream: String,
      shardId: String,
      where: String,
      logWarning: String => Unit = warn
  ): Unit =
    if (dropped > 0)
      logWarning(
        s"Dropped $dropped KPL sub-record(s) of shard $shardId of stream $stream in $where whose hash key lies " +
          "outside the shard's hash-key range. The stream places records by partition key " +
          "(RecordDistributionStrategy USER_PARTITION_KEY), so " +
          "these are copies that the KPL wrote again to the right shard after its shard map went stale during a " +
          "reshard, and the KCL drops them too. Another writer that aggregates records of several shards into one " +
          "Kinesis record loses them here: disable its aggregation. They are counted in the source metric " +
          "droppedOutsideRange."
      )
}
