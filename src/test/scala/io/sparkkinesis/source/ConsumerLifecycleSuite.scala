package io.sparkkinesis.source

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.scalatest.funsuite.AnyFunSuite

class ConsumerLifecycleSuite extends AnyFunSuite {
  private val StreamArn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"
  private val Name = "fraud-detector"
  private val Arn = s"$StreamArn/consumer/$Name:1"

  /**
   * A consumer client whose DescribeStreamConsumer answers follow `states` (None: no such consumer), one per call,
   * the last repeated; a successful RegisterStreamConsumer makes the next answers CREATING and then ACTIVE unless
   * `states` says otherwise. Register failures are scripted in `registerFailures`, one per call.
   */
  private final class FakeConsumers(states: Seq[Option[String]]) extends StreamConsumerClient {
    val calls: mutable.Buffer[String] = mutable.ArrayBuffer.empty[String]
    private var script = states
    var registerFailures: Seq[RuntimeException] = Nil
    var afterRegister: Seq[Option[String]] = Seq(Some("CREATING"), Some("ACTIVE"))
    var deregisterFailure: Option[Exception] = None

    def describeConsumer(streamArn: String, consumerName: String): Option[StreamConsumer] = {
      calls += "describe"
      assert(streamArn == StreamArn && consumerName == Name)
      val state = script.head
      if (script.size > 1) script = script.tail
      state.map(StreamConsumer(Name, Arn, _))
    }

    var registeredTags: Option[Map[String, String]] = None

    def registerConsumer(
        streamArn: String,
        consumerName: String,
        tags: Map[String, String]
    ): StreamConsumer = {
      calls += "register"
      registeredTags = Some(tags)
      registerFailures match {
        case failure +: rest =>
          registerFailures = rest
          throw failure
        case _ =>
          script = afterRegister
          StreamConsumer(Name, Arn, "CREATING")
      }
    }

    def deregisterConsumer(streamArn: String, consumerName: String): Unit = {
      calls += "deregister"
      deregisterFailure.foreach(e => throw e)
    }

    def listConsumers(streamArn: String): Seq[StreamConsumer] = {
      calls += "list"
      Nil
    }
  }

  private final class Clock {
    var now = 1000000L
    val sleeps: mutable.Buffer[Long] = mutable.ArrayBuffer.empty[Long]
    def sleep(ms: Long): Unit = { sleeps += ms; now += ms }
  }

  private def lifecycle(
      client: FakeConsumers,
      clock: Clock,
      deregisterOnStop: Boolean = true,
      timeoutMs: Long = 60000L,
      tags: Map[String, String] = Map.empty
  ) = new ConsumerLifecycle(
    client,
    StreamArn,
    Name,
    deregisterOnStop,
    tags,
    timeoutMs = timeoutMs,
    baseDelayMs = 250L,
    maxDelayMs = 2000L,
    sleep = clock.sleep,
    nowMillis = () => clock.now
  )

  test("an absent consumer is registered, then awaited through CREATING until ACTIVE") {
    val client = new FakeConsumers(Seq(None))
    val clock = new Clock
    val l = lifecycle(client, clock)
    assert(l.activate() == Arn)
    assert(client.calls == Seq("describe", "register", "describe", "describe"))
    assert(l.registered && client.registeredTags.contains(Map.empty))
    assert(clock.sleeps.size == 2, "one wait after registering, one while CREATING")
    val tagged = new FakeConsumers(Seq(None))
    lifecycle(tagged, new Clock, tags = Map("team" -> "risk")).activate()
    assert(tagged.registeredTags.contains(Map("team" -> "risk")), "the registration carries the tags")
  }

  test("an existing ACTIVE consumer is reused: one DescribeStreamConsumer, no registration, no wait") {
    val client = new FakeConsumers(Seq(Some("ACTIVE")))
    val clock = new Clock
    val l = lifecycle(client, clock)
    assert(l.activate() == Arn)
    assert(client.calls == Seq("describe"))
    assert(!l.registered && clock.sleeps.isEmpty)
  }

  test("an existing consumer still CREATING is awaited, not registered again") {
    val client = new FakeConsumers(Seq(Some("CREATING"), Some("CREATING"), Some("ACTIVE")))
    val l = lifecycle(client, new Clock)
    assert(l.activate() == Arn)
    assert(client.calls == Seq("describe", "describe", "describe"))
    assert(!l.registered)
  }

  test("a refused registration (LimitExceeded) is retried with a growing back-off, capped at maxDelayMs") {
    val client = new FakeConsumers(Seq(None))
    client.registerFailures = Seq.fill(8)(new ConsumerLimitExceeded("5 consumers CREATING", null))
    val clock = new Clock
    val l = lifecycle(client, clock)
    assert(l.activate() == Arn)
    assert(client.calls.count(_ == "register") == 9)
    assert(l.registered)
    // Jittered within [ceiling / 2, ceiling], ceilings 250, 500, 1000, 2000, 2000, ...
    val ceilings = clock.sleeps.indices.map(i => math.min(2000L, 250L << math.min(i, 16)))
    clock.sleeps.zip(ceilings).foreach { case (slept, ceiling) =>
      assert(slept >= ceiling / 2 && slept <= ceiling, s"$slept for a ceiling of $ceiling")
    }
    assert(clock.sleeps.max <= 2000L && clock.sleeps.drop(3).forall(_ >= 1000L), clock.sleeps)
  }

  test("losing a registration race (ConsumerAlreadyExists) reuses the consumer the other client registered") {
    // Absent at first; the other client's consumer shows up after our register call failed.
    val racing = new FakeConsumers(Seq(None, Some("CREATING"), Some("ACTIVE")))
    racing.registerFailures = Seq(new ConsumerAlreadyExists("in use", null))
    val r = lifecycle(racing, new Clock)
    assert(r.activate() == Arn)
    assert(racing.calls == Seq("describe", "register", "describe", "describe"))
    assert(!r.registered, "the consumer was registered by someone else")
  }

  test("a DELETING leftover of an earlier run is waited out, then registered anew") {
    val client = new FakeConsumers(Seq(Some("DELETING"), Some("DELETING"), None))
    val l = lifecycle(client, new Clock)
    assert(l.activate() == Arn)
    assert(client.calls == Seq("describe", "describe", "describe", "register", "describe", "describe"))
    assert(l.registered)
  }

  test("a consumer that never becomes ACTIVE fails after the timeout with a message saying what was seen") {
    val client = new FakeConsumers(Seq(None))
    client.afterRegister = Seq(Some("CREATING"))
    val clock = new Clock
    val l = lifecycle(client, clock, timeoutMs = 30000L)
    val e = intercept[IllegalStateException](l.activate())
    assertCondition(e, "KINESIS_CONSUMER_NOT_ACTIVE")
    val m = e.getMessage
    assert(m.contains(Name) && m.contains(StreamArn), m)
    assert(m.contains("did not become ACTIVE within 30 s") && m.contains("the consumer is CREATING"), m)
    assert(m.contains("5 consumers in CREATING") && m.contains("list-stream-consumers"), m)
    assert(clock.now - 1000000L >= 30000L && clock.now - 1000000L <= 30000L + 2000L)
    assert(client.calls.count(_ == "register") == 1)
  }

  test("a registration refused until the timeout says so in the message") {
    val client = new FakeConsumers(Seq(None))
    client.registerFailures = Seq.fill(1000)(new ConsumerLimitExceeded("rate exceeded", null))
    val m =
      intercept[IllegalStateException](lifecycle(client, new Clock, timeoutMs = 10000L).activate()).getMessage
    assert(m.contains("registration refused for now: rate exceeded"), m)
  }

  test("release() makes no call when the consumer is kept") {
    val client = new FakeConsumers(Seq(Some("ACTIVE")))
    val l = lifecycle(client, new Clock, deregisterOnStop = false)
    l.activate()
    client.calls.clear()
    l.release()
    assert(client.calls.isEmpty)
  }

  test("release() deregisters when asked to, and never throws") {
    val client = new FakeConsumers(Seq(Some("ACTIVE")))
    val l = lifecycle(client, new Clock)
    l.activate()
    l.release()
    assert(client.calls.last == "deregister")
    client.deregisterFailure = Some(new ConsumerLimitExceeded("too many calls", null))
    l.release()
    client.deregisterFailure = Some(new RuntimeException("connection reset"))
    l.release()
    assert(client.calls.count(_ == "deregister") == 3)
  }

  /**
   * Every consumer call of a query, as (operation, stream ARN, consumer name): consumers become ACTIVE at once.
   * Synchronized, since StreamConsumers activates the streams' consumers from parallel threads.
   */
  private final class AnyStreamConsumers extends StreamConsumerClient {
    private val recorded = mutable.ArrayBuffer.empty[(String, String, String)]
    private val registered = mutable.Set.empty[(String, String)]
    def calls: Seq[(String, String, String)] = synchronized(recorded.toList)

    def describeConsumer(streamArn: String, name: String): Option[StreamConsumer] = synchronized {
      recorded += (("describe", streamArn, name))
      Some(StreamConsumer(name, s"$streamArn/consumer/$name:7", "ACTIVE")).filter(_ =>
        registered((streamArn, name))
      )
    }

    def registerConsumer(streamArn: String, name: String, tags: Map[String, String]): StreamConsumer =
      synchronized {
        recorded += (("register", streamArn, name))
        registered += ((streamArn, name))
        StreamConsumer(name, s"$streamArn/consumer/$name:7", "CREATING")
      }

    def deregisterConsumer(streamArn: String, name: String): Unit =
      synchronized(recorded += (("deregister", streamArn, name)))
    def listConsumers(streamArn: String): Seq[StreamConsumer] = Nil
  }

  private val Arns = Map("orders" -> StreamArn, "clicks" -> StreamArn.replace("orders", "clicks"))

  private def efoConfig(consumer: (String, String), more: (String, String)*) = {
    val options = Map(
      "kinesis.region" -> "us-east-1",
      "kinesis.consumerType" -> "SubscribeToShard",
      "kinesis.streamName" -> "orders,clicks",
      consumer
    ) ++ more
    val config = io.sparkkinesis.config.SourceConfig.parse(options, () => None)
    config -> config.readMode.asInstanceOf[io.sparkkinesis.config.ReadMode.FanOut].consumer
  }

  test(
    "several streams: one consumer of the same name registered on each stream, each deregistered on stop"
  ) {
    val (config, efo) = efoConfig("kinesis.consumerName" -> Name)
    val client = new AnyStreamConsumers
    val consumers = StreamConsumers.of(config, efo, client, Arns)
    assert(consumers.activate() == Arns.map { case (s, arn) => s -> s"$arn/consumer/$Name:7" })
    assert(client.calls.filter(_._1 == "register").map(_._2).toSet == Arns.values.toSet)
    consumers.release()
    assert(client.calls.filter(_._1 == "deregister").map(_._2).toSet == Arns.values.toSet)
  }

  test("consumers given by ARN: no consumer call at all; one of another account's stream is refused") {
    val given = Arns.map { case (s, arn) => s -> s"$arn/consumer/shared:1" }
    val (config, efo) = efoConfig("kinesis.consumerArn" -> given.values.mkString(","))
    val client = new AnyStreamConsumers
    val consumers = StreamConsumers.of(config, efo, client, Arns)
    assert(consumers.activate() == given)
    consumers.release()
    assert(client.calls.isEmpty)
    val elsewhere = Arns.updated("clicks", Arns("clicks").replace("123456789012", "999999999999"))
    val e = intercept[IllegalArgumentException](StreamConsumers.of(config, efo, client, elsewhere))
    assertCondition(e, "KINESIS_INVALID_OPTION")
    assert(
      e.getMessage.contains("kinesis.consumerArn") && e.getMessage.contains(given("clicks")),
      e.getMessage
    )
    assert(e.getMessage.contains(s"the stream 'clicks' read is ${elsewhere("clicks")}"), e.getMessage)
  }

  test(
    "SubscribeToShard answers that the consumer is missing or not ACTIVE become KINESIS_CONSUMER_UNUSABLE"
  ) {
    import software.amazon.awssdk.awscore.exception.AwsErrorDetails
    import software.amazon.awssdk.services.kinesis.model.{ResourceInUseException, ResourceNotFoundException}
    def details(m: String) = AwsErrorDetails.builder().errorMessage(m).build()
    val missing =
      ResourceNotFoundException.builder().awsErrorDetails(details(s"Consumer $Arn not found")).build()
    // Not ACTIVE, in Kinesis' words (quoted in awslabs/kinesis-hot-shard-advisor#37) and in kinesis-local's.
    val inactive = Seq(
      "Consumer orders-efo with creation timestamp 1731291806 under stream: orders , account 123456789012 is not in " +
        "ACTIVE status.",
      s"Consumer $Arn is not in an ACTIVE state"
    ).map(m => ResourceInUseException.builder().awsErrorDetails(details(m)).build())
    // Kinesis' answer to a second subscription (awslabs/amazon-kinesis-client#391), of a stream whose name has ACTIVE.
    val busy = ResourceInUseException
      .builder()
      .awsErrorDetails(
        details(
          "Another active subscription exists for this consumer: 123456789012:ACTIVE_ORDERS:shardId-1:efo"
        )
      )
      .build()
    val shardGone =
      ResourceNotFoundException.builder().awsErrorDetails(details("Shard shardId-1 not found")).build()
    for ((error, said) <- (missing -> "it does not exist") +: inactive.map(_ -> "it is not ACTIVE")) {
      val e = SubscriptionErrors.consumerFailure(error, Arn, "shardId-1").get
      assertCondition(e, "KINESIS_CONSUMER_UNUSABLE")
      assert(
        e.getMessage.contains(Arn) && e.getMessage.contains(said) && e.getMessage.contains(
          "kinesis.consumerArn"
        )
      )
    }
    assert(SubscriptionErrors.consumerFailure(busy, Arn, "shardId-1").isEmpty)
    assert(SubscriptionErrors.consumerFailure(shardGone, Arn, "shardId-1").isEmpty)
  }
}
