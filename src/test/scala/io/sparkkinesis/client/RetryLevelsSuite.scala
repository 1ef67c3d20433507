package io.sparkkinesis.client

import java.net.InetSocketAddress
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.atomic.AtomicInteger

import com.sun.net.httpserver.HttpServer
import io.sparkkinesis.config.{AwsClientConfig, CredentialsConfig}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The real SDK client against a loopback HTTP endpoint that throttles every request (the emulators never throttle):
 * a throttled read is retried at one level only. The suite's JVM speaks JSON to Kinesis (`aws.cborEnabled=false`).
 */
class RetryLevelsSuite extends AnyFunSuite {

  private def withThrottlingEndpoint(body: (String, AtomicInteger) => Unit): Unit = {
    val requests = new AtomicInteger
    val server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0)
    server.createContext(
      "/",
      exchange => {
        requests.incrementAndGet()
        exchange.getRequestBody.readAllBytes()
        val answer =
          """{"__type":"ProvisionedThroughputExceededException","message":"Rate exceeded for shard"}"""
            .getBytes(UTF_8)
        exchange.getResponseHeaders.add("Content-Type", "application/x-amz-json-1.1")
        exchange.getResponseHeaders.add("x-amzn-ErrorType", "ProvisionedThroughputExceededException")
        exchange.sendResponseHeaders(400, answer.length.toLong)
        exchange.getResponseBody.write(answer)
        exchange.close()
      }
    )
    server.start()
    try body(s"http://127.0.0.1:${server.getAddress.getPort}", requests)
    finally server.stop(0)
  }

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
}
