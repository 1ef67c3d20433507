package io.sparkkinesis.reader

import java.nio.charset.StandardCharsets.UTF_8

import scala.collection.mutable.ArrayBuffer

import io.sparkkinesis.client._

/** A clock for tests: time moves only when told to, or when someone sleeps. Records every sleep. */
final class FakeClock {
  private var nanos = 5000000000L
  val sleeps: ArrayBuffer[Long] = ArrayBuffer[Long]()

  def nanoTime(): Long = nanos
  def advanceMs(ms: Long): Unit = nanos += ms * 1000000L

  def sleep(ms: Long): Unit = {
    sleeps += ms
    advanceMs(ms)
  }
}

/**
 * One in-memory Kinesis shard behind [[ShardRecordsClient]]. Iterators encode the index of the next record, so any
 * number of iterators can be open. Failures are injected per GetRecords call number (1-based) or for the next calls;
 * every call is counted and recorded.
 */
final class FakeShard(
    val streamName: String = "orders",
    val shardId: String = "shardId-000000000000",
    firstSequence: BigInt = FakeShard.FirstSequence
) extends ShardRecordsClient {
  private val records = ArrayBuffer[KinesisRecord]()
  private var nextSeq = firstSequence
  private var issued = 0

  /** Closed shards end with a null next iterator and list their children. */
  var closed = false
  var children: Seq[ChildShard] = Nil

  /** When true, a closed shard first returns its last records with an iterator, then an empty final response. */
  var endInSeparateResponse = false

  /** Lag reported while records remain after a response. */
  var behindWhenLagging = 5000L

  var throttleNext = 0
  var throttleCalls: Set[Int] = Set.empty
  var expireCalls: Set[Int] = Set.empty
  var goneOnIterator = false
  var goneOnRecords = false

  /** Runs at the start of every GetRecords call (to move a fake clock, for example). */
  var onGetRecords: () => Unit = () => ()

  var getRecordsCalls = 0
  val iteratorStarts: ArrayBuffer[IteratorStart] = ArrayBuffer[IteratorStart]()
  val limits: ArrayBuffer[Int] = ArrayBuffer[Int]()
  var closedByReader = false

  def all: Seq[KinesisRecord] = records.toSeq

  def put(data: Array[Byte], partitionKey: String): KinesisRecord = {
    val r = KinesisRecord(data, partitionKey, nextSeq.toString, 1693422005000L + records.size * 10L)
    nextSeq += 1000
    records += r
    r
  }

  def putText(texts: String*): Seq[KinesisRecord] = texts.map(t => put(t.getBytes(UTF_8), s"pk-$t"))

  /** An aggregate whose sub-records carry `prefix.0`, `prefix.1`, ... as data. */
  def putAggregate(prefix: String, count: Int): KinesisRecord =
    put(
      KplAggregates.aggregate(
        (0 until count).map(i => KplAggregates.Entry(s"pk-$prefix.$i", None, s"$prefix.$i".getBytes(UTF_8)))
      ),
      s"pk-$prefix"
    )

  def putAggregate(entries: Seq[KplAggregates.Entry]): KinesisRecord =
    put(KplAggregates.aggregate(entries), "outer")

  private def indexOf(seq: String): Int = {
    val i = records.indexWhere(_.sequenceNumber == seq)
    if (i < 0) throw new IllegalArgumentException(s"fake shard: no record with sequence number $seq")
    i
  }

  def getShardIterator(stream: String, shard: String, start: IteratorStart): String = {
    require(stream == streamName && shard == shardId, s"fake shard asked for $stream/$shard")
    iteratorStarts += start
    if (goneOnIterator)
      throw new ShardNotFound(s"Shard $shardId in stream $streamName under account 1 does not exist", null)
    val index = start match {
      case IteratorStart.TrimHorizon => 0
      case IteratorStart.Latest => records.size
      case IteratorStart.AtTimestamp(ms) =>
        val i = records.indexWhere(_.approximateArrivalMillis >= ms)
        if (i < 0) records.size else i
      case IteratorStart.AtSequence(seq) => indexOf(seq)
      case IteratorStart.AfterSequence(seq) => indexOf(seq) + 1
    }
    issued += 1
    s"$shardId|$index|$issued"
  }

  def getRecords(iterator: String, limit: Int): RecordsResponse = {
    getRecordsCalls += 1
    if (getRecordsCalls > 5000) throw new AssertionError("runaway reader: more than 5000 GetRecords calls")
    limits += limit
    onGetRecords()
    require(limit >= 1 && limit <= 10000, s"limit $limit")
    if (goneOnRecords) throw new ShardNotFound(s"Shard $shardId in stream $streamName does not exist", null)
    if (throttleNext > 0 || throttleCalls(getRecordsCalls)) {
      throttleNext = math.max(0, throttleNext - 1)
      throw new ThroughputExceeded("Rate exceeded for shard", null)
    }
    if (expireCalls(getRecordsCalls)) throw new IteratorExpired("Iterator expired", null)
    val Array(id, index, _) = iterator.split('|')
    require(id == shardId, iterator)
    val from = index.toInt
    val batch = records.slice(from, from + limit).toSeq
    val nextIndex = from + batch.size
    val atEnd = nextIndex >= records.size
    val ends = closed && atEnd && !(endInSeparateResponse && batch.nonEmpty)
    issued += 1
    RecordsResponse(
      batch,
      if (ends) None else Some(s"$shardId|$nextIndex|$issued"),
      Some(if (atEnd) 0L else behindWhenLagging),
      if (ends) children else Nil
    )
  }

  def close(): Unit = closedByReader = true
}

object FakeShard {
  val FirstSequence: BigInt = BigInt("49590338271490256608559692538361571095921575989136588898")
}
