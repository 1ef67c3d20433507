package io.sparkkinesis.sink

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.{CompletableFuture, LinkedBlockingQueue, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.util.control.NonFatal

import io.sparkkinesis.client._
import io.sparkkinesis.config.{AwsClientConfig, ProducerSettings}
import io.sparkkinesis.reader.{KplAggregateBuilder, KplAggregation}
import org.slf4j.LoggerFactory

/** The stream's open shards, sorted by their starting hash key: which shard a hash key goes to. */
private[sparkkinesis] final class ShardMap(open: Seq[ShardDescription]) {
  private val shards = open.sortBy(_.hashKeyRange.start).toVector
  private val starts = shards.map(_.hashKeyRange.start)

  def shardIds: Set[String] = shards.map(_.shardId).toSet

  /** The open shard whose range holds `hashKey` (None in a gap, which an open shard list never has). */
  def shardFor(hashKey: BigInt): Option[String] = {
    var lo = 0
    var hi = shards.size - 1
    while (lo <= hi) { // the last shard starting at or before hashKey
      val mid = (lo + hi) >>> 1
      if (starts(mid) <= hashKey) lo = mid + 1 else hi = mid - 1
    }
    if (hi >= 0 && shards(hi).hashKeyRange.contains(hashKey)) Some(shards(hi).shardId) else None
  }

  def range(shardId: String): Option[HashKeyRange] = shards.find(_.shardId == shardId).map(_.hashKeyRange)
}

/**
 * A [[RecordProducer]] that runs in the JVM: PutRecords through the AWS SDK ([[PutRecordsClient]]), with the KPL's
 * aggregation format, and no native process. One sender thread owns every buffer; tasks hand records over through a
 * queue, and request completions come back through it.
 *
 *   - Shard map: ListShards (open shards) per stream, when a stream is first written and again once a put lands on
 *     a shard the map did not predict (a reshard). Records are buffered per predicted shard; on a stream with
 *     service-managed distribution (AUTO), or while the map cannot be listed, records are sent one by one, unpaced.
 *   - Aggregation (`aggregationEnabled`): records bound for one shard share KPL aggregates of at most
 *     `aggregationMaxCount` records and `min(aggregationMaxSize, maxRecordBytes)` bytes. An aggregate that landed on
 *     another shard than predicted, with a sub-record outside that shard's range, is put again whole (the KCL drops
 *     such an aggregate whole, other readers that sub-record): every row gets a copy that lands within its shard.
 *   - Sending: a shard's records go when its aggregate is full, when they have waited `recordMaxBufferedTimeMs`, on
 *     `flush()`, or at once when no request is in flight (so a few rows are never held for the buffering time). At
 *     most `maxConnections` requests are in flight, each of at most 500 records and the request size limit.
 *   - Pacing: per shard, `rateLimit`% of 1,000 records/s and 1 MiB/s (token buckets of one second).
 *   - Failures: a record Kinesis failed (throttled, internal error) or whose request failed is retried after the
 *     connector's back-off ([[Backoff]]) until `recordTtlMs` after it was added, then fails; errors that retrying
 *     cannot cure (access denied, KMS key unusable, invalid request) fail it at once.
 */
private[sparkkinesis] final class JvmProducer(
    client: PutRecordsClient,
    settings: ProducerSettings,
    backoff: Backoff,
    resources: AutoCloseable = () => (),
    nanoTime: () => Long = () => System.nanoTime()
) extends RecordProducer {
  import JvmProducer._

  private val events = new LinkedBlockingQueue[Event]()
  private val outstanding = new AtomicLong()
  @volatile private var crashed: Option[Throwable] = None
  @volatile private var stopping = false

  private val ttlNanos = TimeUnit.MILLISECONDS.toNanos(settings.recordTtlMs)
  private val bufferedNanos = TimeUnit.MILLISECONDS.toNanos(settings.recordMaxBufferedTimeMs)
  private val maxInFlight = math.max(1L, settings.maxConnections).toInt
  private val aggregateLimit = math.min(settings.aggregationMaxSize, settings.maxRecordBytes)
  private val requestLimit = math.min(math.max(MinRequestBytes, settings.maxRecordBytes), MaxRequestBytes)
  private val recordsPerSecond = ShardRecordsPerSecond * settings.rateLimit / 100.0
  private val bytesPerSecond = ShardBytesPerSecond * settings.rateLimit / 100.0
  private val aggregate = settings.aggregationEnabled && !settings.serviceManagedDistribution

  // Owned by the sender thread.
  private val streams = mutable.LinkedHashMap.empty[String, StreamState]

  private val retries =
    new java.util.PriorityQueue[Pending](16, (a: Pending, b: Pending) => a.notBefore.compare(b.notBefore))
  private val toRoute = mutable.ArrayBuffer.empty[Pending]
  private var inFlight = 0
  private var flushing = false
  private var rotation = 0
  private var rateBound = false

  private val sender = new Thread(() => run(), "spark-kinesis-jvm-producer")
  sender.setDaemon(true)
  sender.start()

  /** Whether the sender thread stopped on an unexpected error; the pool then starts a new producer. */
  def isDead: Boolean = crashed.isDefined

  override def add(streamName: String, record: SinkRecord, onOutcome: RecordOutcome => Unit): Unit = {
    crashed.foreach(e => throw new IllegalStateException(s"The in-JVM Kinesis producer stopped: $e", e))
    outstanding.incrementAndGet()
    events.put(Add(new Pending(streamName, record, onOutcome, nanoTime() + ttlNanos)))
  }

  override def outstandingRecords: Long = outstanding.get()

  override def flush(): Unit = events.put(Flush)

  /** Sends what is buffered, waits at most `timeoutMs` for it, then stops; records still unsettled fail. */
  def close(timeoutMs: Long): Unit =
    try {
      flush()
      val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
      while (outstanding.get() > 0 && crashed.isEmpty && System.nanoTime() < deadline) Thread.sleep(10)
      stopping = true
      events.put(Flush)
      sender.join(TimeUnit.MILLISECONDS.toMillis(timeoutMs) + 1000)
    } finally
      try client.close()
      finally resources.close()

  // --- the sender thread -------------------------------------------------------------------------------------------

  private def run(): Unit =
    try {
      var wait = 0L
      while (!stopping) {
        val first = events.poll(wait, TimeUnit.NANOSECONDS)
        if (first != null) {
          handle(first)
          var next = events.poll()
          while (next != null) { handle(next); next = events.poll() }
        }
        wait = step(nanoTime())
      }
      abandon("the producer was closed before it could write it")
    } catch {
      case e: Throwable =>
        crashed = Some(e)
        log.error("The in-JVM Kinesis producer stopped on an unexpected error", e)
        abandon(s"the in-JVM producer stopped on an unexpected error: $e")
    }

  private def handle(event: Event): Unit = event match {
    case Add(p) => toRoute += p
    case Flush => flushing = true
    case Done(stream, sent, results, error) => inFlight -= 1; completed(stream, sent, results, error)
  }

  /** One pass over the buffers; returns how long to wait for the next event at most. */
  private def step(now: Long): Long = {
    while (!retries.isEmpty && retries.peek().notBefore <= now) toRoute += retries.poll()
    for (p <- toRoute.map(_.stream).distinct) streamState(p)
    if (!settings.serviceManagedDistribution)
      streams.values.foreach(s => if ((s.map == null || s.stale) && now >= s.nextListAt) refresh(s, now))
    val routing = toRoute.toVector
    toRoute.clear()
    routing.foreach(route(_, now))
    send(now)
    if (flushing && streams.values.forall(_.buckets.values.forall(b => b.open == null && b.ready.isEmpty)))
      flushing = false
    nextWake(now)
  }

  private def streamState(name: String): StreamState = streams.getOrElseUpdate(name, new StreamState(name))

  /** Lists the stream's open shards; on a new map, what is buffered for the stream is routed again. */
  private def refresh(s: StreamState, now: Long): Unit =
    try {
      val open = client.listShards(s.name, openOnly = true).filterNot(_.isClosed)
      if (open.isEmpty) throw new IllegalStateException("ListShards returned no open shard")
      val map = new ShardMap(open)
      val changed = s.map == null || s.map.shardIds != map.shardIds
      s.map = map
      s.stale = false
      s.listFailures = 0
      if (changed) {
        s.buckets.values.foreach { b =>
          toRoute ++= b.openMembers
          b.ready.forEach(o => toRoute ++= o.members)
        }
        s.buckets.clear()
      }
    } catch {
      case NonFatal(e) =>
        s.listFailures += 1
        s.nextListAt = now + TimeUnit.MILLISECONDS.toNanos(backoff.delayMs(s.listFailures))
        if (s.listFailures == 1)
          log.warn(
            s"Could not list the open shards of stream ${s.name} ($e); " +
              (if (s.map == null) "writing its rows one Kinesis record each, unaggregated, until it can"
               else "keeping the shard map it had") + " (ListShards is retried)"
          )
    }

  private def route(p: Pending, now: Long): Unit = {
    if (now >= p.deadline) return expire(p)
    val s = streamState(p.stream)
    val shard =
      if (settings.serviceManagedDistribution || s.map == null) None
      else {
        if (p.hashKey == null) p.hashKey = hashKeyOf(p.record)
        s.map.shardFor(p.hashKey)
      }
    val b = s.bucket(shard.orNull, now)
    if (aggregate && shard.isDefined) addToAggregate(b, p, now) else b.enqueue(plain(p, b.shard, now))
  }

  private def addToAggregate(b: Bucket, p: Pending, now: Long): Unit = {
    val r = p.record
    if (b.open != null) {
      val grown =
        b.open.size + b.open.sizeIncrease(r.partitionKey, r.explicitHashKey, r.data) + b.openKeyBytes
      if (b.open.count >= settings.aggregationMaxCount || grown > aggregateLimit) closeAggregate(b)
    }
    if (b.open == null) {
      val alone = new KplAggregateBuilder
      val needed = alone.size + alone.sizeIncrease(r.partitionKey, r.explicitHashKey, r.data) + p.keyBytes
      if (needed > aggregateLimit) return b.enqueue(plain(p, b.shard, now))
      b.open = alone
      b.openedAt = now
      b.openKeyBytes = p.keyBytes
    }
    b.open.add(r.partitionKey, r.explicitHashKey, r.data)
    b.openMembers += p
    if (b.open.count >= settings.aggregationMaxCount) closeAggregate(b)
  }

  private def closeAggregate(b: Bucket): Unit = {
    val members = b.openMembers.toVector
    val first = members.head
    b.enqueue(
      if (members.size == 1) plain(first, b.shard, b.openedAt)
      else
        new Outgoing(
          b.shard,
          first.record.partitionKey,
          first.hashKey.toString,
          b.open.result(),
          members,
          b.openedAt
        )
    )
    b.open = null
    b.openMembers.clear()
  }

  private def plain(p: Pending, shard: String, since: Long) =
    new Outgoing(shard, p.record.partitionKey, p.record.explicitHashKey, p.record.data, Vector(p), since)

  /** Sends requests while a connection is free and something is due. */
  private def send(now: Long): Unit = {
    rateBound = false
    val all = streams.values.toVector
    all.foreach(_.buckets.values.foreach { b =>
      // An aggregate that waits behind records held back by the shard's rate keeps filling instead.
      val due = flushing || inFlight == 0 || now - b.openedAt >= bufferedNanos
      if (b.open != null && b.ready.isEmpty && due) closeAggregate(b)
    })
    for (s <- all) {
      var more = true
      while (more && inFlight < maxInFlight) {
        val buckets = s.buckets.values.toVector
        val readyCount = buckets.map(_.ready.size).sum
        val readyBytes = buckets.map(_.readyBytes).sum
        val due = readyCount > 0 && (flushing || inFlight == 0 || readyCount >= MaxRequestRecords ||
          readyBytes >= requestLimit || buckets.exists(b =>
            !b.ready.isEmpty && now - b.ready.peek().since >= bufferedNanos
          ))
        more = due && sendOne(s, buckets, now)
        // Due, with a connection free, yet nothing could go: the shards' rates are used up for now.
        if (due && !more && inFlight < maxInFlight) rateBound = true
      }
    }
  }

  /** One request of what the stream's shards may send now; false when none could go. */
  private def sendOne(s: StreamState, buckets: Vector[Bucket], now: Long): Boolean = {
    val entries = Vector.newBuilder[Outgoing]
    var count = 0
    var bytes = 0L
    var full = false
    rotation += 1
    val n = buckets.size
    var i = 0
    while (i < n && !full) {
      val b = buckets((rotation + i) % n)
      b.refill(now)
      var open = true
      while (open && !b.ready.isEmpty && !full) {
        val o = b.ready.peek()
        if (count >= MaxRequestRecords || bytes + o.bytes > requestLimit) full = true
        else if (!b.take(o.bytes)) open = false
        else {
          b.dequeue()
          if (o.members.exists(now >= _.deadline)) {
            // Some of its rows are past their TTL: they fail, the others are sent again in another record.
            o.members.foreach(m => if (now >= m.deadline) expire(m) else toRoute += m)
          } else {
            entries += o
            count += 1
            bytes += o.bytes
          }
        }
      }
      i += 1
    }
    val sent = entries.result()
    if (sent.isEmpty) return false
    inFlight += 1
    val request = sent.map(o => PutEntry(o.partitionKey, o.explicitHashKey, o.data))
    val future =
      try client.putRecords(s.name, request)
      catch { case NonFatal(e) => CompletableFuture.failedFuture[IndexedSeq[PutResult]](e) }
    future.whenComplete { (results: IndexedSeq[PutResult], error: Throwable) =>
      events.put(Done(s.name, sent, results, error))
      ()
    }
    true
  }

  private def completed(
      stream: String,
      sent: Vector[Outgoing],
      results: IndexedSeq[PutResult],
      error: Throwable
  ): Unit = {
    val now = nanoTime()
    val s = streamState(stream)
    // One back-off per attempt count for the request: its retried records go out together again.
    val delays = mutable.HashMap.empty[Int, Long]
    // Ranges of shards the map does not hold, listed at most once per response.
    val unmapped = mutable.HashMap.empty[String, Option[HashKeyRange]]
    def failed(o: Outgoing, code: String, message: String): Unit =
      retryOrFail(o, code, message, now, n => delays.getOrElseUpdate(n, backoff.delayMs(n)))
    if (error != null || results == null || results.size != sent.size) {
      val (code, message) = describe(error, results)
      sent.foreach(o => failed(o, code, message))
    } else
      sent.iterator.zip(results.iterator).foreach { case (o, r) =>
        if (r.errorCode != null) failed(o, r.errorCode, String.valueOf(r.errorMessage))
        else landed(s, o, r.shardId, now, unmapped)
      }
  }

  private def landed(
      s: StreamState,
      o: Outgoing,
      shardId: String,
      now: Long,
      unmapped: mutable.Map[String, Option[HashKeyRange]]
  ): Unit = {
    val predicted = o.shard != null && o.shard == shardId
    if (o.shard != null && !predicted && !s.stale) {
      log.info(
        s"A record for stream ${s.name} landed on $shardId, not on ${o.shard}: listing its shards again"
      )
      s.stale = true
    }
    if (predicted || o.members.size == 1) o.members.foreach(acknowledge)
    else {
      // An aggregate on a shard the map did not predict. If a sub-record is outside that shard's range, the KCL
      // drops the whole aggregate (others drop that sub-record): every row of it is put again.
      if (s.stale && now >= s.nextListAt) refresh(s, now)
      val range = Option(s.map)
        .flatMap(_.range(shardId))
        .orElse(unmapped.getOrElseUpdate(shardId, listedRange(s.name, shardId)))
      if (range.exists(r => o.members.forall(m => r.contains(m.hashKey)))) o.members.foreach(acknowledge)
      else toRoute ++= o.members
    }
  }

  private def listedRange(stream: String, shardId: String): Option[HashKeyRange] =
    try client.listShards(stream, openOnly = false).find(_.shardId == shardId).map(_.hashKeyRange)
    catch { case NonFatal(_) => None }

  private def retryOrFail(o: Outgoing, code: String, message: String, now: Long, delayMs: Int => Long): Unit =
    if (Permanent(code))
      o.members.foreach(settle(_, RecordOutcome.Failed(s"Kinesis refused it: $code: $message")))
    else
      o.members.foreach { m =>
        m.attempts += 1
        m.lastError = s"$code: $message"
        if (now >= m.deadline) expire(m)
        else {
          m.notBefore = math.min(now + TimeUnit.MILLISECONDS.toNanos(delayMs(m.attempts)), m.deadline)
          retries.add(m)
        }
      }

  private def expire(p: Pending): Unit =
    settle(
      p,
      RecordOutcome.Failed(
        s"it was not written within kinesis.sink.recordTtl (${settings.recordTtlMs} ms)" +
          (if (p.attempts == 0)
             ", and never sent (the producer's requests were all in flight or the shard's rate was used up)"
           else s" after ${p.attempts} failed attempt(s); the last: ${p.lastError}")
      )
    )

  private def acknowledge(p: Pending): Unit = settle(p, RecordOutcome.Acknowledged)

  private def settle(p: Pending, outcome: RecordOutcome): Unit = {
    outstanding.decrementAndGet()
    try p.onOutcome(outcome)
    catch { case NonFatal(e) => log.warn(s"A record's outcome callback failed: $e") }
  }

  /** Fails every record not settled yet (the producer stops). */
  private def abandon(reason: String): Unit = {
    val left = mutable.ArrayBuffer.empty[Pending]
    var e = events.poll()
    while (e != null) {
      e match {
        case Add(p) => left += p; case Done(_, sent, _, _) => sent.foreach(left ++= _.members); case _ =>
      }
      e = events.poll()
    }
    left ++= toRoute
    while (!retries.isEmpty) left += retries.poll()
    streams.values.foreach(_.buckets.values.foreach { b =>
      left ++= b.openMembers
      b.ready.forEach(o => left ++= o.members)
    })
    toRoute.clear()
    streams.clear()
    left.foreach(settle(_, RecordOutcome.Failed(reason)))
  }

  /**
   * How long the sender may wait for an event: until a retry is due, a listing may be tried again, an aggregate or
   * a ready record has waited its buffering time, or (when the shards' rates held records back) shortly. With every
   * connection busy, a completion wakes it.
   */
  private def nextWake(now: Long): Long = {
    var wake = MaxWaitNanos
    def atMost(at: Long): Unit = wake = math.max(0L, math.min(wake, at - now))
    if (!retries.isEmpty) atMost(retries.peek().notBefore)
    if (toRoute.nonEmpty) wake = 0L
    if (rateBound) atMost(now + TokenWaitNanos)
    streams.values.foreach { s =>
      if (!settings.serviceManagedDistribution && (s.map == null || s.stale)) atMost(s.nextListAt)
      if (inFlight < maxInFlight) s.buckets.values.foreach { b =>
        // After send, an open aggregate behind no ready record, and a ready record not held by the rate, are
        // younger than the buffering time.
        if (!b.ready.isEmpty) atMost(math.max(b.ready.peek().since + bufferedNanos, now + TokenWaitNanos))
        else if (b.open != null) atMost(b.openedAt + bufferedNanos)
      }
    }
    wake
  }

  // --- buffers ------------------------------------------------------------------------------------------------------

  private final class StreamState(val name: String) {
    var map: ShardMap = _
    var stale = false
    var nextListAt = 0L
    var listFailures = 0
    val buckets = mutable.LinkedHashMap.empty[String, Bucket]

    /** The buffer of `shard` (null: records whose shard is not predicted). */
    def bucket(shard: String, now: Long): Bucket =
      buckets.getOrElseUpdate(if (shard == null) "" else shard, new Bucket(shard, now))
  }

  /** One shard's records: the aggregate being filled, the Kinesis records ready to send, and the shard's rate. */
  private final class Bucket(val shard: String, now: Long) {
    var open: KplAggregateBuilder = _
    val openMembers = mutable.ArrayBuffer.empty[Pending]
    var openedAt = 0L
    var openKeyBytes = 0L
    val ready = new java.util.ArrayDeque[Outgoing]()
    var readyBytes = 0L
    private var recordTokens = recordsPerSecond
    private var byteTokens = bytesPerSecond
    private var refilledAt = now

    def enqueue(o: Outgoing): Unit = { ready.add(o); readyBytes += o.bytes }
    def dequeue(): Outgoing = { val o = ready.poll(); readyBytes -= o.bytes; o }

    def refill(now: Long): Unit = {
      val seconds = (now - refilledAt) / 1e9
      refilledAt = now
      recordTokens = math.min(recordsPerSecond, recordTokens + seconds * recordsPerSecond)
      byteTokens = math.min(bytesPerSecond, byteTokens + seconds * bytesPerSecond)
    }

    /** Takes a record's share of the shard's rate, when there is one (unpredicted records are not paced). */
    def take(bytes: Long): Boolean =
      if (shard == null) true
      else if (recordTokens >= 1 && (byteTokens >= bytes || byteTokens >= bytesPerSecond)) {
        recordTokens -= 1
        byteTokens -= bytes
        true
      } else false
  }
}

private[sparkkinesis] object JvmProducer {
  private val log = LoggerFactory.getLogger(classOf[JvmProducer])

  val MaxRequestRecords = 500

  /** PutRecords takes up to 10 MiB; up to 5 MiB unless the stream's records may be larger (older endpoints). */
  val MinRequestBytes: Long = 5L * 1024 * 1024
  val MaxRequestBytes: Long = 10L * 1024 * 1024
  val ShardRecordsPerSecond = 1000.0
  val ShardBytesPerSecond: Double = 1024.0 * 1024
  private val MaxWaitNanos = TimeUnit.MILLISECONDS.toNanos(100)
  private val TokenWaitNanos = TimeUnit.MILLISECONDS.toNanos(5)

  /** Error codes that retrying cannot cure: the records fail at once. */
  val Permanent: Set[String] = Set(
    "AccessDeniedException",
    "KMSAccessDeniedException",
    "KMSDisabledException",
    "KMSInvalidStateException",
    "KMSNotFoundException",
    "KMSOptInRequired",
    "InvalidArgumentException",
    "ValidationException",
    "SerializationException",
    "ProxyRefused"
  )

  /** The 128-bit hash key Kinesis places a record by. */
  def hashKeyOf(record: SinkRecord): BigInt =
    if (record.explicitHashKey != null) BigInt(record.explicitHashKey)
    else KplAggregation.partitionKeyHash(record.partitionKey)

  private def describe(error: Throwable, results: IndexedSeq[PutResult]): (String, String) = error match {
    case null => ("InternalError", s"PutRecords answered ${Option(results).map(_.size).getOrElse(0)} results")
    case f: PutRequestFailed => (f.code, f.detail)
    case e: ProxyRefused => ("ProxyRefused", e.getMessage)
    case e => (e.getClass.getSimpleName, String.valueOf(e.getMessage))
  }

  /** A record handed over, until it is settled. Owned by the sender thread once added. */
  private final class Pending(
      val stream: String,
      val record: SinkRecord,
      val onOutcome: RecordOutcome => Unit,
      val deadline: Long
  ) {
    var hashKey: BigInt = _
    var attempts = 0
    var lastError: String = _
    var notBefore = 0L

    lazy val keyBytes: Long =
      if (record.partitionKey == null) 0L else record.partitionKey.getBytes(UTF_8).length.toLong
  }

  /**
   * One Kinesis record: a user record alone, or an aggregate of `members`. `shard`: where the map said it goes (null
   * when not predicted); `since`: when its oldest member was buffered.
   */
  private final class Outgoing(
      val shard: String,
      val partitionKey: String,
      val explicitHashKey: String,
      val data: Array[Byte],
      val members: Vector[Pending],
      val since: Long
  ) {

    /** Its size as Kinesis counts it: data and partition key (the first member's). */
    val bytes: Long = data.length + members.head.keyBytes
  }

  private sealed trait Event
  private final case class Add(p: Pending) extends Event
  private case object Flush extends Event

  private final case class Done(
      stream: String,
      sent: Vector[Outgoing],
      results: IndexedSeq[PutResult],
      error: Throwable
  ) extends Event

  /** A producer over the SDK for these settings and client options. */
  def start(settings: ProducerSettings, config: AwsClientConfig): JvmProducer = {
    log.info(
      s"Starting an in-JVM Kinesis producer for ${config.endpointUrl} (region ${config.region}, aggregation " +
        s"${settings.aggregationEnabled && !settings.serviceManagedDistribution}, ${config.credentials})"
    )
    // One connection more than requests in flight, for ListShards.
    val client =
      new SdkPutClient(
        config,
        settings.maxConnections.toInt + 1,
        settings.requestTimeoutMs,
        !settings.verifyCertificate
      )
    new JvmProducer(client, settings, Backoff(config.retryBaseDelayMs, config.retryMaxDelayMs))
  }
}
