package io.sparkkinesis.sink

import java.util.concurrent.{CompletableFuture, ConcurrentLinkedQueue, Executors}
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client._
import io.sparkkinesis.reader.KplAggregation

/**
 * A Kinesis stream as PutRecords and ListShards see it: records land on the open shard whose hash-key range holds
 * their explicit hash key (or the MD5 of their partition key), as Kinesis places them; shards can be split and
 * merged under the producer's feet, and entries or requests made to fail. Answers arrive on another thread.
 */
class FakeKinesisStream(shardCount: Int) extends PutRecordsClient {
  private val MaxKey = BigInt(2).pow(128) - 1

  private var shards: Vector[ShardDescription] = (0 until shardCount).toVector.map { i =>
    val start = MaxKey * i / shardCount + (if (i == 0) 0 else 1)
    val end = MaxKey * (i + 1) / shardCount
    ShardDescription(f"shardId-$i%012d", None, None, HashKeyRange(start, end), None)
  }
  private val executor = Executors.newFixedThreadPool(4)

  /** (shard, entry) of every Kinesis record that landed. */
  val landed = new ConcurrentLinkedQueue[(String, PutEntry)]()
  val requestSizes = new ConcurrentLinkedQueue[Int]()
  val listings = new AtomicInteger()
  private val inFlight = new AtomicInteger()
  val maxInFlight = new AtomicInteger()

  /** An entry's error code for this attempt (None: it lands); a whole request's failure. */
  @volatile var entryError: PutEntry => Option[String] = (_: PutEntry) => None
  @volatile var requestError: () => Option[Throwable] = () => None
  @volatile var delayMs: Long = 0

  /** Runs before the n-th request (from 1) places its records: a reshard there catches the producer's map stale. */
  @volatile var beforeRequest: Int => Unit = (_: Int) => ()
  private val requests = new AtomicInteger()

  /** When set, putRecords waits for it on the caller's thread (the producer's sender) before anything else. */
  @volatile var gate: java.util.concurrent.CountDownLatch = null
  def requestCount: Int = requests.get

  def openShards: Vector[ShardDescription] = synchronized(shards.filterNot(_.isClosed))
  def allShards: Vector[ShardDescription] = synchronized(shards)

  /** Where Kinesis places the record; one without keys (service-managed distribution) anywhere. */
  def hashKey(e: PutEntry): BigInt =
    if (e.explicitHashKey != null) BigInt(e.explicitHashKey)
    else if (e.partitionKey == null) BigInt(128, scala.util.Random)
    else KplAggregation.partitionKeyHash(e.partitionKey)

  def putRecords(stream: String, entries: IndexedSeq[PutEntry]): CompletableFuture[IndexedSeq[PutResult]] = {
    Option(gate).foreach(_.await())
    val now = inFlight.incrementAndGet()
    maxInFlight.accumulateAndGet(now, (a: Int, b: Int) => math.max(a, b))
    requestSizes.add(entries.size)
    val number = requests.incrementAndGet()
    CompletableFuture.supplyAsync[IndexedSeq[PutResult]](
      () =>
        try {
          if (delayMs > 0) Thread.sleep(delayMs)
          beforeRequest(number)
          requestError().foreach(e => throw e)
          entries.map { e =>
            entryError(e) match {
              case Some(code) => PutResult(null, code, s"$code for this entry")
              case None =>
                val key = hashKey(e)
                val shard = openShards.find(_.hashKeyRange.contains(key)).get.shardId
                landed.add((shard, e))
                PutResult(shard, null, null)
            }
          }
        } finally inFlight.decrementAndGet(),
      executor
    )
  }

  def listShards(stream: String, openOnly: Boolean): Seq[ShardDescription] = {
    listings.incrementAndGet()
    if (openOnly) openShards else allShards
  }

  private def nextId: String = f"shardId-${shards.size}%012d"

  /** Splits an open shard in the middle of its range. */
  def split(shardId: String): Unit = synchronized {
    val parent = shards.find(_.shardId == shardId).get
    val r = parent.hashKeyRange
    val middle = (r.start + r.end) / 2
    shards = shards.map(s => if (s.shardId == shardId) s.copy(endingSequenceNumber = Some("1")) else s)
    val left = ShardDescription(nextId, Some(shardId), None, HashKeyRange(r.start, middle), None)
    shards :+= left
    shards :+= ShardDescription(nextId, Some(shardId), None, HashKeyRange(middle + 1, r.end), None)
  }

  /** Merges two adjacent open shards. */
  def merge(a: String, b: String): Unit = synchronized {
    val (x, y) = (shards.find(_.shardId == a).get, shards.find(_.shardId == b).get)
    val range =
      HashKeyRange(x.hashKeyRange.start.min(y.hashKeyRange.start), x.hashKeyRange.end.max(y.hashKeyRange.end))
    shards =
      shards.map(s => if (s.shardId == a || s.shardId == b) s.copy(endingSequenceNumber = Some("1")) else s)
    shards :+= ShardDescription(nextId, Some(a), Some(b), range, None)
  }

  /**
   * The user records the KCL (3.x `AggregatorUtil`) gets: every landed record de-aggregated, except an aggregate with
   * a sub-record outside the range of the shard it was read from, which it drops whole; and the number of
   * sub-records dropped that way.
   */
  def readBack(): (Vector[(String, String, Array[Byte])], Int) = {
    val ranges = allShards.map(s => s.shardId -> s.hashKeyRange).toMap
    var dropped = 0
    val kept = landed.asScala.toVector.flatMap { case (shard, e) =>
      val users = KplAggregation.deaggregate(e.data, e.partitionKey)
      if (!users.head.aggregated) Vector((shard, e.partitionKey, e.data))
      else if (users.forall(u => ranges(shard).contains(u.hashKey)))
        users.map(u => (shard, u.partitionKey, u.data))
      else { dropped += users.size; Vector.empty }
    }
    (kept, dropped)
  }

  def close(): Unit = executor.shutdownNow()
}
