package io.sparkkinesis.reader.efo

import java.io.IOException

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.client.SubscriptionErrors._
import io.sparkkinesis.reader._
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.awscore.exception.AwsErrorDetails
import software.amazon.awssdk.core.exception.SdkClientException
import software.amazon.awssdk.services.kinesis.model.{
  InternalFailureException,
  InvalidArgumentException,
  KinesisException,
  KmsAccessDeniedException,
  KmsThrottlingException,
  LimitExceededException,
  ResourceInUseException,
  ResourceNotFoundException
}

class ShardSubscriptionSuite extends AnyFunSuite {

  private val Shard = "shardId-000000000007"

  /** A clock that only moves when the code under test sleeps. */
  private final class FakeClock {
    var nanos = 0L
    val sleeps: mutable.Buffer[Long] = mutable.ArrayBuffer.empty[Long]
    def sleep(ms: Long): Unit = { sleeps += ms; nanos += ms * 1000000L }
    def advance(ms: Long): Unit = nanos += ms * 1000000L
  }

  private def subscription(
      client: ShardSubscriptionClient,
      clock: FakeClock,
      start: IteratorStart = IteratorStart.TrimHorizon,
      settings: SubscriptionSettings = SubscriptionSettings(timeoutMs = 60000, maxRetries = 3)
  ) = new ShardSubscription(client, "arn:consumer", Shard, start, settings, clock.sleep, () => clock.nanos)

  private def spec(maxRecords: Long = Long.MaxValue, failOnDataLoss: Boolean = true) = ShardReadSpec(
    "s",
    Shard,
    ShardPosition.TrimHorizon,
    HashKeyRange(0, (BigInt(1) << 128) - 1),
    maxRecords,
    None,
    10000,
    failOnDataLoss,
    3
  )

  /** Reads a batch through the one base reader, as a task does. */
  private def readBatch(fetcher: EfoFetcher, s: ShardReadSpec): (Seq[String], ShardEnd) = {
    val reader = new ShardReader(s, fetcher.beginTask(replaying = false), None)
    val seqs = mutable.ArrayBuffer.empty[String]
    while (reader.next()) seqs += reader.current._1.sequenceNumber
    (seqs.toSeq, reader.result)
  }

  private def seqs(range: Range): Seq[String] = range.map(_.toString)

  private def awsError[E <: KinesisException](
      builder: KinesisException.Builder,
      code: String,
      message: String,
      status: Int
  ) =
    builder
      .awsErrorDetails(AwsErrorDetails.builder().errorCode(code).errorMessage(message).build())
      .statusCode(status)
      .message(message)
      .build()

  test("normal delivery: every record once, in order, and the task ends at the tip without waiting") {
    val clock = new FakeClock
    val client = new FakeSubscriptionClient(95)
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val (read, end) = readBatch(fetcher, spec())
    assert(read == seqs(1 to 95))
    assert(end.reachedTip && end.end == ShardPosition.After("95", ShardPosition.WholeRecord))
    assert(client.calls.size == 1 && client.calls.head.start == IteratorStart.TrimHorizon)
    // Caught up: the next fetch returns at once with nothing, reporting the tip.
    assert(fetcher.fetch(100) == FetchOutcome.Fetched(Nil, Some(0L), shardEnded = false, Nil))
    assert(clock.sleeps.isEmpty)
  }

  test("batch limits split an event; the next batch goes on with the same subscription exactly there") {
    val clock = new FakeClock
    val client = new FakeSubscriptionClient(50, eventSize = 25)
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val (first, end1) = readBatch(fetcher, spec(maxRecords = 10))
    assert(first == seqs(1 to 10) && !end1.reachedTip)
    assert(fetcher.subscribeCallsThisTask == 1, "the first task subscribed")
    val (second, end2) = readBatch(fetcher, spec(maxRecords = 30))
    assert(second == seqs(11 to 40))
    assert(fetcher.subscribeCallsThisTask == 0, "the next task made no SubscribeToShard call")
    val (third, end3) = readBatch(fetcher, spec(maxRecords = 30))
    assert(third == seqs(41 to 50) && end3.reachedTip)
    assert(end2.end == ShardPosition.After("40", -1))
    assert(client.calls.size == 1, "one subscription served all three batches")
  }

  test("the service ends the subscription: renewed after the last continuation, 5 s after the last accept") {
    val clock = new FakeClock
    var n = 0
    lazy val client: FakeSubscriptionClient = new FakeSubscriptionClient(
      60,
      script = call => {
        n += 1
        if (n == 1) call.serveThen(2) { c => clock.advance(1000); c.end() } else call.serve()
      }
    )
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val (read, end) = readBatch(fetcher, spec())
    assert(read == seqs(1 to 60))
    assert(end.reachedTip)
    assert(client.calls.map(_.start) == Seq(IteratorStart.TrimHorizon, IteratorStart.AfterSequence("20")))
    assert(fetcher.subscription.renewals == 1)
    assert(
      fetcher.subscribeCallsThisTask == 2,
      "the task's metrics count the renewal as a SubscribeToShard call"
    )
    assert(clock.sleeps == Seq(4000L), "renewal waits until 5 s after the accepted subscription")
  }

  test("recoverable errors renew from the continuation without loss or duplicates") {
    val errors: Seq[Throwable] = Seq(
      new IOException("connection reset"),
      awsError(LimitExceededException.builder(), "LimitExceededException", "Rate exceeded", 400),
      awsError(InternalFailureException.builder(), "InternalFailure", "oops", 500),
      SdkClientException.create(
        "Unable to execute HTTP request",
        new java.nio.channels.ClosedChannelException
      )
    )
    val clock = new FakeClock
    var n = 0
    lazy val client: FakeSubscriptionClient = new FakeSubscriptionClient(
      100,
      script = call => {
        n += 1
        if (n <= errors.size) call.serveThen(2) { c => clock.advance(10000); c.fail(errors(n - 1)) }
        else call.serve()
      }
    )
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val (read, _) = readBatch(fetcher, spec())
    assert(read == seqs(1 to 100))
    assert(
      client.calls.map(_.start) == Seq(IteratorStart.TrimHorizon) ++
        Seq("20", "40", "60", "80").map(IteratorStart.AfterSequence)
    )
    assert(client.calls.init.forall(_.cancelled))
    assert(clock.sleeps.size == 4 && clock.sleeps.forall(ms => ms >= 100 && ms <= 5000))
  }

  test("the recoverable list: what each error means") {
    def v(e: Throwable) = SubscriptionErrors.classify(e, Shard)
    assert(v(awsError(ResourceInUseException.builder(), "ResourceInUseException", "in use", 400)) == InUse)
    assert(v(awsError(LimitExceededException.builder(), "LimitExceededException", "x", 400)) == Transient)
    assert(v(awsError(KmsThrottlingException.builder(), "KMSThrottlingException", "x", 400)) == Transient)
    assert(v(awsError(InternalFailureException.builder(), "InternalFailure", "x", 500)) == Transient)
    assert(v(awsError(KinesisException.builder(), "ServiceUnavailable", "x", 503)) == Transient)
    assert(v(new IOException("reset")) == Transient)
    assert(v(new SubscriptionTimedOut("silent")) == Transient)
    assert(v(new java.util.concurrent.CompletionException(new IOException("wrapped"))) == Transient)
    assert(v(SdkClientException.create("x", new java.net.ConnectException("refused"))) == Transient)
    val shardMissing = s"Shard $Shard in stream s under account 1 does not exist"
    assert(
      v(
        awsError(ResourceNotFoundException.builder(), "ResourceNotFoundException", shardMissing, 400)
      ) == ShardGone
    )
    val consumerMissing = "Consumer arn:aws:kinesis:us-east-1:1:stream/s/consumer/c:1 not found"
    assert(
      v(
        awsError(ResourceNotFoundException.builder(), "ResourceNotFoundException", consumerMissing, 400)
      ) == Fatal
    )
    assert(v(awsError(KinesisException.builder(), "AccessDeniedException", "no", 400)) == Fatal)
    assert(v(awsError(InvalidArgumentException.builder(), "InvalidArgumentException", "bad", 400)) == Fatal)
    assert(v(awsError(KmsAccessDeniedException.builder(), "KMSAccessDeniedException", "no", 400)) == Fatal)
    assert(v(SdkClientException.create("Unable to load credentials")) == Fatal)
    assert(v(new IllegalStateException("bug")) == Fatal)
  }

  test("a non-recoverable error fails the task with a message that says what happened") {
    val clock = new FakeClock
    val denied =
      awsError(KinesisException.builder(), "AccessDeniedException", "not authorized to SubscribeToShard", 400)
    val client = new FakeSubscriptionClient(30, script = call => call.serveThen(1)(_.fail(denied)))
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val error = intercept[SubscriptionFailed](readBatch(fetcher, spec()))
    assert(error.getMessage.contains("not authorized to SubscribeToShard"))
    assert(error.getMessage.contains(Shard) && error.getMessage.contains("arn:consumer"))
    assert(error.getMessage.contains("not one a renewed subscription can fix"))
    assert(client.calls.size == 1)
  }

  test("a shard that is gone is a data loss, per failOnDataLoss") {
    val gone = awsError(
      ResourceNotFoundException.builder(),
      "ResourceNotFoundException",
      s"Shard $Shard does not exist",
      400
    )
    val strict = new FakeSubscriptionClient(10, script = _.fail(gone))
    val error = intercept[DataLossException](
      readBatch(new EfoFetcher(subscription(strict, new FakeClock), 1000), spec())
    )
    assert(error.getMessage.contains("kinesis.failOnDataLoss=false"))
    val lenient = new FakeSubscriptionClient(10, script = _.fail(gone))
    val (read, end) =
      readBatch(new EfoFetcher(subscription(lenient, new FakeClock), 1000), spec(failOnDataLoss = false))
    assert(read.isEmpty && end.lost && end.finished)
  }

  test(
    "ResourceInUseException: the renewal respects the 5 s rule, then backs off one more second per refusal"
  ) {
    val clock = new FakeClock
    var n = 0
    val inUse =
      awsError(ResourceInUseException.builder(), "ResourceInUseException", "Another active subscription", 400)
    lazy val client: FakeSubscriptionClient = new FakeSubscriptionClient(
      40,
      script = call => {
        n += 1
        n match {
          case 1 => call.serveThen(1) { c => clock.advance(1500); c.fail(new IOException("reset")) }
          case 2 | 3 => call.fail(inUse)
          case _ => call.serve()
        }
      }
    )
    val sub = subscription(client, clock)
    val (read, _) = readBatch(new EfoFetcher(sub, 1000), spec())
    assert(read == seqs(1 to 40))
    // After the reset 1.5 s after the accept: at least until 5 s after it. Then 2 s and 3 s after two refusals
    // (1 s per refusal in a row, counting the reset), each also at least 5 s after the last accept.
    assert(clock.sleeps.head >= 3500)
    assert(clock.sleeps.tail == Seq(2000L, 3000L))
    assert(client.calls.drop(1).map(_.start).distinct == Seq(IteratorStart.AfterSequence("10")))
  }

  test("too many recoverable errors in a row fail the task, naming the option") {
    val clock = new FakeClock
    val inUse =
      awsError(ResourceInUseException.builder(), "ResourceInUseException", "Another active subscription", 400)
    val client = new FakeSubscriptionClient(10, script = _.fail(inUse))
    val settings = SubscriptionSettings(timeoutMs = 60000, maxRetries = 2)
    val error = intercept[SubscriptionFailed](
      readBatch(new EfoFetcher(subscription(client, clock, settings = settings), 1000), spec())
    )
    assert(client.calls.size == 3)
    assert(
      error.getMessage.contains("3 times in a row") && error.getMessage.contains(
        "kinesis.subscribeToShard.maxRetries"
      )
    )
  }

  test("a silent subscription times out and is renewed") {
    var n = 0
    lazy val client: FakeSubscriptionClient = new FakeSubscriptionClient(
      20,
      script = call => {
        n += 1
        if (n == 1) () // never answers
        else call.serve()
      }
    )
    val settings = SubscriptionSettings(timeoutMs = 200, maxRetries = 1, inUseGapMs = 0)
    val sub =
      new ShardSubscription(client, "arn:consumer", Shard, IteratorStart.TrimHorizon, settings, _ => ())
    val started = System.nanoTime()
    val (read, _) = readBatch(new EfoFetcher(sub, 1000), spec())
    assert(read == seqs(1 to 20))
    assert((System.nanoTime() - started) / 1000000L >= 200)
    assert(client.calls.size == 2 && client.calls.head.cancelled)
  }

  test("bounded buffer: the subscription holds at most bufferedEvents events ahead of the reader") {
    val clock = new FakeClock
    val client = new FakeSubscriptionClient(10000, eventSize = 10)
    val sub = subscription(client, clock, settings = SubscriptionSettings(60000, 3, bufferedEvents = 4))
    val fetcher = new EfoFetcher(sub, 1000)
    fetcher.beginTask(replaying = false)
    assert(fetcher.fetch(10).asInstanceOf[FetchOutcome.Fetched].records.size == 10)
    Thread.sleep(50) // nothing runs in between: a slow reader
    assert(client.calls.head.delivered == 5, "one taken, four buffered")
    for (_ <- 1 to 100) fetcher.fetch(10)
    assert(client.calls.head.delivered == 105)
    assert(sub.buffered == 4)
  }

  test("events buffered between batches are all read by the next batch, not one per batch") {
    val clock = new FakeClock
    lazy val client: FakeSubscriptionClient = new FakeSubscriptionClient(
      0,
      script = call => {
        call.accept()
        call.offer(SubscriptionEvent(Seq(FakeSubscriptionClient.record(1)), Some("1"), Some(0L), Nil))
      }
    )
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    assert(readBatch(fetcher, spec())._1 == Seq("1"))
    // Three pushes arrive while no task runs (each said 0 ms behind when it was sent), then a heartbeat.
    val call = client.calls.head
    for (seq <- 2 to 4)
      call.offer(
        SubscriptionEvent(Seq(FakeSubscriptionClient.record(seq)), Some(seq.toString), Some(0L), Nil)
      )
    call.offer(SubscriptionEvent(Nil, Some("4"), Some(0L), Nil))
    val (read, end) = readBatch(fetcher, spec())
    assert(read == Seq("2", "3", "4") && end.reachedTip)
    assert(client.calls.size == 1)
  }

  test(
    "a first run waits for a push no longer than the task's time limit; a closed shard caught up is finished"
  ) {
    val clock = new FakeClock
    lazy val client: FakeSubscriptionClient =
      new FakeSubscriptionClient(0, script = _.accept()) // accepted, silent
    val settings = SubscriptionSettings(timeoutMs = 60000, maxRetries = 3)
    val sub =
      new ShardSubscription(client, "arn:consumer", Shard, IteratorStart.TrimHorizon, settings, _ => ())
    val fetcher = new EfoFetcher(sub, 1000)
    val started = System.nanoTime()
    fetcher.beginTask(replaying = false, deadlineNanos = Some(System.nanoTime() + 150L * 1000000L))
    assert(fetcher.fetch(10) == FetchOutcome.Fetched(Nil, None, shardEnded = false, Nil))
    assert((System.nanoTime() - started) / 1000000L >= 140)
    // The same silent subscription of a shard ListShards reports closed: not finished without an event.
    fetcher.beginTask(replaying = false, shardClosed = true, deadlineNanos = Some(System.nanoTime()))
    assert(fetcher.fetch(10) == FetchOutcome.Fetched(Nil, None, shardEnded = false, Nil))
    // A heartbeat received by the task, 0 ms behind: the closed shard is read to its end.
    client.calls.head.offer(SubscriptionEvent(Nil, Some("0"), Some(0L), Nil))
    fetcher.beginTask(replaying = false, shardClosed = true)
    assert(fetcher.fetch(10) == FetchOutcome.Fetched(Nil, Some(0L), shardEnded = true, Nil))
    assert(client.calls.head.cancelled)
  }

  test("the last event of a closed shard ends the read with its child shards") {
    val clock = new FakeClock
    val child = ChildShard("shardId-000000000009", Seq(Shard), HashKeyRange(0, 10))
    val client = new FakeSubscriptionClient(
      0,
      script = call => {
        call.accept()
        call.offer(
          SubscriptionEvent(Seq(FakeSubscriptionClient.record(1)), Some("1"), Some(5L), Nil),
          SubscriptionEvent(Seq(FakeSubscriptionClient.record(2)), None, Some(0L), Seq(child))
        )
      }
    )
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val (read, end) = readBatch(fetcher, spec())
    assert(read == Seq("1", "2"))
    assert(end.finished && end.childShards == Seq(child))
    assert(client.calls.head.cancelled)
  }

  test("a replay waits for records instead of stopping at a heartbeat") {
    val clock = new FakeClock
    lazy val client: FakeSubscriptionClient = new FakeSubscriptionClient(
      30,
      script = call => {
        call.accept()
        call.offer(SubscriptionEvent(Nil, Some("0"), Some(0L), Nil))
        call.offer(client.eventsAfter(IteratorStart.TrimHorizon): _*)
      }
    )
    val fetcher = new EfoFetcher(subscription(client, clock), 1000)
    val replayEnd = ShardEnd(ShardPosition.After("30", -1), false, Nil, 30, Some(0L), true, false)
    val reader = new ShardReader(spec(), fetcher.beginTask(replaying = true), Some(replayEnd))
    var count = 0
    while (reader.next()) count += 1
    assert(count == 30)
  }

  test("a replay of a closed shard that read nothing takes the recorded end without subscribing") {
    // kinesis-local never sends the event that ends a closed shard's subscription: a replay that waited for it failed
    // ("reached the tip ... before the recorded end"). Its outcome is recorded, so the replay makes no call.
    val client = new FakeSubscriptionClient(
      0,
      script = call => {
        call.accept()
        call.offer(SubscriptionEvent(Nil, Some("0"), Some(0L), Nil))
      }
    )
    val child = ChildShard("shardId-000000000009", Seq(Shard), HashKeyRange(0, 10))
    val recorded = ShardEnd(ShardPosition.TrimHorizon, true, Seq(child), 0, Some(0L), true, false)
    val settings = SubscriptionSettings(timeoutMs = 60000, maxRetries = 3)
    val sub =
      new ShardSubscription(client, "arn:consumer", Shard, IteratorStart.TrimHorizon, settings, _ => ())
    val fetcher = new EfoFetcher(sub, 200)
    val reader =
      new ShardReader(spec(), fetcher.beginTask(replaying = true, shardClosed = true), Some(recorded))
    assert(!reader.next())
    assert(reader.result.finished && reader.result.childShards == Seq(child))
    assert(reader.result.end == ShardPosition.TrimHorizon)
    assert(client.calls.isEmpty)
  }

  test("the cache hands a fetcher only to the task starting where the last one ended") {
    val clock = new FakeClock
    val key = SubscriptionCache.Key("http://e", "arn:consumer", Shard)
    val a = new EfoFetcher(subscription(new FakeSubscriptionClient(10), clock), 1000)
    SubscriptionCache.put(key, ShardPosition.After("5", -1), a)
    assert(SubscriptionCache.take(key, ShardPosition.After("5", -1)).contains(a))
    assert(SubscriptionCache.take(key, ShardPosition.After("5", -1)).isEmpty, "taken once")
    val client = new FakeSubscriptionClient(10)
    val b = new EfoFetcher(subscription(client, clock), 1000)
    b.beginTask(replaying = false).fetch(10)
    SubscriptionCache.put(key, ShardPosition.After("10", -1), b)
    assert(SubscriptionCache.take(key, ShardPosition.After("7", -1)).isEmpty)
    assert(
      client.calls.head.cancelled,
      "a subscription for another position is closed (one per consumer and shard)"
    )
    val c = new EfoFetcher(subscription(new FakeSubscriptionClient(10), clock), 1000)
    SubscriptionCache.put(key, ShardPosition.TrimHorizon, c, nowNanos = 0L)
    SubscriptionCache.sweep(SubscriptionCache.MaxIdleMs * 1000000L + 1)
    assert(SubscriptionCache.take(key, ShardPosition.TrimHorizon).isEmpty)
  }

  test("a fetcher holds its client until it is closed, kept in the cache or not") {
    val clock = new FakeClock
    val key = SubscriptionCache.Key("http://e", "arn:consumer-release", Shard)
    var released = 0
    val kept =
      new EfoFetcher(subscription(new FakeSubscriptionClient(10), clock), 1000, release = () => released += 1)
    kept.beginTask(replaying = false).fetch(5)
    SubscriptionCache.put(key, ShardPosition.After("5", -1), kept)
    assert(released == 0, "a cached live subscription keeps its client")
    assert(SubscriptionCache.take(key, ShardPosition.After("5", -1)).contains(kept))
    SubscriptionCache.put(key, ShardPosition.After("9", -1), kept)
    SubscriptionCache.closeConsumer("arn:consumer-release")
    assert(released == 1, "closing the cached fetcher hands its client back")
  }

  test("a closed shard is read only on a subscription opened knowing it closed") {
    val clock = new FakeClock
    val before = new EfoFetcher(subscription(new FakeSubscriptionClient(10), clock), 1000)
    val after =
      new EfoFetcher(
        subscription(new FakeSubscriptionClient(10), clock),
        1000,
        subscribedKnowingClosed = true
      )
    assert(
      before.usableFor(shardClosed = false) && after.usableFor(shardClosed = false)
    )
    assert(
      !before.usableFor(shardClosed = true),
      "opened while the shard was open: may miss records"
    )
    assert(after.usableFor(shardClosed = true))
  }
}
