package io.sparkkinesis.source

import io.sparkkinesis.client.KinesisApi
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.reader._

/**
 * Reads one shard in passes of [[ShardReader]]: a pass ends at the shard's tip (or before a page at a run bound it
 * cannot confirm yet), and the next goes on from where it stopped, with what it learnt of the bound.
 * `nextPass(spec, sameFetcher)` builds that pass; `sameFetcher`: the previous one stopped between two fetches, so its
 * fetcher stands exactly at the new start. How far the passes go is the caller's ([[advance]]). Counts add up.
 */
private[sparkkinesis] final class ShardPasses(
    first: ShardReader,
    firstSpec: ShardReadSpec,
    nextPass: (ShardReadSpec, Boolean) => ShardReader
) {
  private var spec = firstSpec
  private var current = first
  private var earlierRecords = 0L
  private var earlierBytes = 0L
  private var earlierThrottles = 0L
  private var earlierDropped = 0L
  private var lastBehind: Option[Long] = None
  private var stalled = 0

  /** Passes in a row, the current one included once exhausted, that were throttled without moving. */
  def stalledInARow: Int =
    if (current.throttles > 0 && current.result.end == current.startedAt) stalled + 1 else 0

  def pass: ShardReader = current

  /** The next step of the read: the current pass's, and once it is exhausted, a next pass's while `goesOn`. */
  def advance(goesOn: () => Boolean): ReadStep = {
    var step = current.advance()
    while (step == ReadStep.Exhausted && goesOn()) {
      startNextPass()
      step = current.advance()
    }
    step
  }

  private def startNextPass(): Unit = {
    val r = current.result
    earlierRecords += r.recordCount
    earlierBytes += current.bytes
    earlierThrottles += current.throttles
    earlierDropped += current.droppedOutsideRange
    lastBehind = r.millisBehindLatest.orElse(lastBehind)
    stalled = stalledInARow
    spec = spec.copy(start = r.end, bound = current.runOutcome.map(_.bound).getOrElse(RunBound.Unbounded))
    current = nextPass(spec, current.endsOnFetchBoundary)
  }

  /**
   * Whether the read is at its end once the current pass is exhausted: the end of a closed shard, the pass's run
   * bound, or (a bound fixed by a sequence number the shard has not reached yet) the tip of an open shard.
   */
  def reachedBound: Boolean = {
    val beyondTip =
      current.runOutcome.exists(_.bound.isInstanceOf[RunBound.Before]) && current.emptyAtTipOfOpenShard
    current.result.finished || current.runOutcome.exists(_.reached) || beyondTip
  }

  /** Where the read stands: after the last record returned; the records and lag of all passes. */
  def end: ShardEnd = {
    val r = current.result
    val behind = r.millisBehindLatest.orElse(lastBehind)
    r.copy(recordCount = earlierRecords + r.recordCount, millisBehindLatest = behind)
  }

  def bytes: Long = earlierBytes + current.bytes
  def throttles: Long = earlierThrottles + current.throttles
  def droppedOutsideRange: Long = earlierDropped + current.droppedOutsideRange

  /** The end as a task records it, with the Kinesis requests `fetcher` made. */
  def recordedEnd(fetcher: RecordFetcher, stream: Option[StreamIdentity]): RecordedEnd =
    RecordedEnd(
      end,
      ReadStats(
        bytes = bytes,
        throttles = throttles,
        getRecordsCalls = fetcher.calls(KinesisApi.GetRecords),
        getShardIteratorCalls = fetcher.calls(KinesisApi.GetShardIterator),
        subscribeToShardCalls = fetcher.calls(KinesisApi.SubscribeToShard),
        droppedOutsideRange = droppedOutsideRange
      ),
      current.runOutcome,
      stream
    )
}

private[sparkkinesis] object ShardPasses {

  /** Passes in a row that a batch read may be throttled without progress before it gives up. */
  val MaxStalledPasses = 20
}
