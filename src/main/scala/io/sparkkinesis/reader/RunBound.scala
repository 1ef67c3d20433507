package io.sparkkinesis.reader

import io.sparkkinesis.client.ShardRecordsClient

/**
 * How far a first-run task may read a shard during a `Trigger.AvailableNow` run: up to the shard's tip at the moment
 * the run started. That moment is pinned, per open shard, by a LATEST shard iterator taken when the run starts; the
 * first record that iterator ever yields is the first record put after the start, and Kinesis sequence numbers grow
 * within a shard, so every record below it belongs to the run and no record from it on does. Polling and fan-out
 * tasks confirm it alike, with GetRecords calls on that iterator ([[efo.PolledChecks]] for fan-out).
 */
private[sparkkinesis] sealed trait RunBound extends Serializable

private[sparkkinesis] object RunBound {

  /** No bound: the shard is read as in any batch (a closed shard, or a query that is not AvailableNow). */
  case object Unbounded extends RunBound

  /**
   * Only the records with a sequence number below `sequenceNumber` (for an AvailableNow run, the first record put
   * after the start), and of record `sequenceNumber` itself its first `subRecords` user records (a KPL aggregate's
   * sub-records 0 to `subRecords` - 1; a plain record counts as one). An end given by the user may lie inside an
   * aggregate; `Int.MaxValue` admits the whole record.
   */
  final case class Before(sequenceNumber: String, subRecords: Int = 0) extends RunBound {

    /** Whether user record `subIndex` (-1 for a plain record) of record `otherSequenceNumber` lies before the bound. */
    def admits(otherSequenceNumber: String, subIndex: Int = -1): Boolean = {
      val bySeq = BigInt(otherSequenceNumber).compare(BigInt(sequenceNumber))
      bySeq < 0 || bySeq == 0 && math.max(subIndex, 0) < subRecords
    }
  }

  /**
   * Not known yet: no record has been put since the start, as far as `tipIterator` (the LATEST iterator of the start,
   * or a continuation of it) has shown. Records a task reads BEFORE it next polls that iterator and finds it still
   * empty are therefore all from before the start.
   */
  final case class Pending(tipIterator: String) extends RunBound {
    override def toString: String = "Pending(<iterator>)"
  }

  /** The bound a poll of the tip iterator tells: the first record after the start, none, or not known yet. */
  def of(probed: TipProbe.Result): RunBound = probed match {
    case TipProbe.FirstAfter(seq) => Before(seq)
    case TipProbe.ClosedWithoutMore => Unbounded
    case TipProbe.NothingYet(next) => Pending(next)
    case TipProbe.Unknown(next) => Pending(next)
  }
}

/**
 * What a task learnt about its shard's run bound. `bound` is the bound as now known (a `Pending` one carries a fresh
 * iterator, which a task refreshes on every poll so the 5-minute iterator expiry does not end the run); `reached` is
 * true when the task has read every record of the shard inside the bound.
 */
private[sparkkinesis] final case class RunOutcome(bound: RunBound, reached: Boolean)

/** Polls a run's tip iterator: one GetRecords call of at most one record. */
private[sparkkinesis] trait TipProbe {
  def poll(iterator: String): TipProbe.Result
}

private[sparkkinesis] object TipProbe {
  sealed trait Result

  /** A record was put after the start; `sequenceNumber` is the first one. */
  final case class FirstAfter(sequenceNumber: String) extends Result

  /** Nothing has been put since the start, as of this call; `next` continues the iterator. */
  final case class NothingYet(next: String) extends Result

  /** The shard was closed after the start with no record after it: the rest of the shard belongs to the run. */
  case object ClosedWithoutMore extends Result

  /** Kinesis returned no record but reported records after the iterator; poll again with `next`. */
  final case class Unknown(next: String) extends Result

  def apply(client: ShardRecordsClient): TipProbe = (iterator: String) => {
    val response = client.getRecords(iterator, 1)
    (response.records.headOption, response.nextIterator) match {
      case (Some(first), _) => FirstAfter(first.sequenceNumber)
      case (None, None) => ClosedWithoutMore
      case (None, Some(next)) if response.millisBehindLatest.exists(_ > 0) => Unknown(next)
      case (None, Some(next)) => NothingYet(next)
    }
  }
}

/**
 * What one task's reading of one shard cost and gave, for metrics. The call counts are the Kinesis requests the
 * task made (tip probes included; a subscription taken over from an earlier task counts in that one).
 * `droppedOutsideRange`: KPL sub-records outside the shard's hash-key range, dropped ([[ShardReader]]).
 */
private[sparkkinesis] final case class ReadStats(
    bytes: Long = 0L,
    throttles: Long = 0L,
    getRecordsCalls: Long = 0L,
    getShardIteratorCalls: Long = 0L,
    subscribeToShardCalls: Long = 0L,
    droppedOutsideRange: Long = 0L
)
