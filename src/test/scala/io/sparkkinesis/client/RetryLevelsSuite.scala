package io.sparkkinesis.client

import io.sparkkinesis.config.{AwsClientConfig, CredentialsConfig}
import io.sparkkinesis.source.ConsumerLifecycle
import io.sparkkinesis.testutil.RefusingEndpoint
import io.sparkkinesis.testutil.RefusingEndpoint.Counts
import org.scalatest.funsuite.AnyFunSuite

/**
 * The real SDK client against a loopback HTTP endpoint that refuses every request (the emulators never throttle
 * nor refuse): a throttled read, or a refused consumer registration, is retried at one level only. The suite's JVM speaks JSON to Kinesis (`aws.cborEnabled=false`).
 */
class RetryLevelsSuite extends AnyFunSuite {

  private def withRefusingEndpoint(answer: String => String)(body: (String, Counts) => Unit): Unit =
    RefusingEndpoint.using(answer)(body)

  private def withThrottlingEndpoint(body: (String, Counts) => Unit): Unit =
    withRefusingEndpoint(_ => "ProvisionedThroughputExceededException")(body)

  private def client(endpoint: String) = new SdkKinesisClient(
    AwsClientConfig(
      "us-east-1",
      endpoint,
      numRetries = 3,
      retryBaseDelayMs = 1L,
      retryMaxDelayMs = 2L,
      credentials = CredentialsConfig(accessKeyId = Some("AKIDTEST"), secretKey = Some("secret"))
    )
  )

  test("the shard readers' GetRecords and GetShardIterator are not retried by the SDK when throttled") {
    withThrottlingEndpoint { (endpoint, requests) =>
      val c = client(endpoint)
      try {
        intercept[ThroughputExceeded](c.forReaders.getRecords("iterator", 10))
        assert(requests.get == 1, "one request: the reader decides whether to fetch again")
        intercept[ThroughputExceeded](
          c.forReaders.getShardIterator("s", "shardId-0", IteratorStart.TrimHorizon)
        )
        assert(requests.get == 2)
      } finally c.close()
    }
  }

  test("the driver's reads keep the SDK's retries: nothing above it retries them") {
    withThrottlingEndpoint { (endpoint, requests) =>
      val c = client(endpoint)
      try {
        intercept[ThroughputExceeded](c.getShardIterator("s", "shardId-0", IteratorStart.Latest))
        assert(requests.get == 4, "the first request and kinesis.clientNumRetries = 3 retries")
      } finally c.close()
    }
  }

  test("a refused consumer registration is not retried by the SDK: ConsumerLifecycle retries it") {
    val refusals: String => String = {
      case "DescribeStreamConsumer" => "ResourceNotFoundException"
      case _ => "LimitExceededException"
    }
    withRefusingEndpoint(refusals) { (endpoint, requests) =>
      val c = client(endpoint)
      try {
        intercept[ConsumerLimitExceeded](
          c.registerConsumer("arn:aws:kinesis:us-east-1:1:stream/s", "app", Map.empty)
        )
        assert(requests("RegisterStreamConsumer") == 1)
        assert(!requests.lastBody.get("RegisterStreamConsumer").contains("Tags"), "no tags: no Tags member")
        var now = 0L
        val lifecycle = new ConsumerLifecycle(
          c,
          "arn:aws:kinesis:us-east-1:1:stream/s",
          "app",
          deregisterOnStop = false,
          timeoutMs = 10000L,
          sleep = ms => now += ms,
          nowMillis = () => now
        )
        intercept[IllegalStateException](lifecycle.activate())
        val attempts = requests("DescribeStreamConsumer")
        assert(attempts > 3, "the lifecycle retried the refused registration until its deadline")
        assert(requests("RegisterStreamConsumer") == 1 + attempts, "one request per attempt of the lifecycle")
      } finally c.close()
    }
  }

  // kinesis-local 0.6.2 accepts RegisterStreamConsumer's Tags but does not store them (ListTagsForResource on the
  // consumer answers no tags), so the request on the wire is checked here.
  test("kinesis.consumerTags reach RegisterStreamConsumer's Tags member on the wire") {
    withRefusingEndpoint(_ => "LimitExceededException") { (endpoint, requests) =>
      val c = client(endpoint)
      val tags = Map("team" -> "risk", "cost-center" -> "a=42")
      try
        intercept[ConsumerLimitExceeded](
          c.registerConsumer("arn:aws:kinesis:us-east-1:1:stream/s", "app", tags)
        )
      finally c.close()
      val body = new com.fasterxml.jackson.databind.ObjectMapper()
        .readTree(requests.lastBody.get("RegisterStreamConsumer"))
      assert(body.get("ConsumerName").asText == "app")
      assert(body.get("Tags").size == 2, body)
      tags.foreach { case (k, v) => assert(body.get("Tags").get(k).asText == v, body) }
    }
  }

  test("the other consumer calls keep the SDK's retries: nothing above it retries them") {
    withRefusingEndpoint(_ => "LimitExceededException") { (endpoint, requests) =>
      val c = client(endpoint)
      try {
        intercept[ConsumerLimitExceeded](c.describeConsumer("arn:aws:kinesis:us-east-1:1:stream/s", "app"))
        assert(
          requests("DescribeStreamConsumer") == 4,
          "the first request and kinesis.clientNumRetries = 3 retries"
        )
        intercept[ConsumerLimitExceeded](c.deregisterConsumer("arn:aws:kinesis:us-east-1:1:stream/s", "app"))
        assert(requests("DeregisterStreamConsumer") == 4)
      } finally c.close()
    }
  }
}

/** Requests received, by operation. */
