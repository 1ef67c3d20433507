package io.sparkkinesis.sink

import java.net.URI

import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import io.sparkkinesis.testutil.{Ministack, RefusingEndpoint}
import org.scalatest.concurrent.Eventually._
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.{Millis, Seconds, Span}
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.kinesis.KinesisClient
import software.amazon.awssdk.services.kinesis.model.{CreateStreamRequest, DescribeStreamSummaryRequest}

/** The sink's check of its stream when a write starts, through the real SDK against ministack. */
class TargetStreamCheckSuite extends AnyFunSuite {

  /** The sink's config for `stream` at `endpoint` (parsed with an https URL, as the KPL needs, then pointed here). */
  private def config(stream: String, endpoint: String): SinkConfig = {
    val parsed = SinkConfig.parse(
      Map(
        "kinesis.streamName" -> stream,
        "kinesis.region" -> "us-east-1",
        "kinesis.endpointUrl" -> "https://localhost:4567",
        "kinesis.clientNumRetries" -> "0"
      ),
      () => None
    )
    parsed.copy(client = parsed.client.copy(endpointUrl = endpoint))
  }

  test("a missing stream fails at once, naming the stream, the region and the endpoint") {
    val stream = s"missing-${System.nanoTime()}"
    val error =
      intercept[IllegalArgumentException](TargetStreamCheck.verify(config(stream, Ministack.endpoint)))
    assertCondition(error, "KINESIS_STREAM_NOT_FOUND")
    assert(
      error.getMessage.startsWith(
        s"Stream $stream does not exist in region us-east-1 at endpoint ${Ministack.endpoint}: " +
          "DescribeStreamSummary found no such stream."
      ),
      error.getMessage
    )
  }

  test("an existing stream passes") {
    val stream = s"present-${System.nanoTime()}"
    val sdk = KinesisClient
      .builder()
      .region(Region.US_EAST_1)
      .endpointOverride(URI.create(Ministack.endpoint))
      .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
      .build()
    try {
      sdk.createStream(CreateStreamRequest.builder().streamName(stream).shardCount(1).build())
      def status = sdk
        .describeStreamSummary(DescribeStreamSummaryRequest.builder().streamName(stream).build())
        .streamDescriptionSummary()
        .streamStatusAsString()
      eventually(timeout(Span(90, Seconds)), interval(Span(100, Millis)))(assert(status == "ACTIVE"))
      assert(
        TargetStreamCheck.look(config(stream, Ministack.endpoint)).isInstanceOf[TargetStreamCheck.Exists]
      )
      TargetStreamCheck.verify(config(stream, Ministack.endpoint))
    } finally sdk.close()
  }

  test("credentials that may not call DescribeStreamSummary do not fail the write") {
    // An endpoint that answers every call as Kinesis answers a caller without the permission.
    RefusingEndpoint.using(_ => "AccessDeniedException") { (endpoint, _) =>
      val c = config("orders", endpoint)
      assert(TargetStreamCheck.look(c) == TargetStreamCheck.NotAllowed("AccessDeniedException"))
      TargetStreamCheck.verify(c) // logs a warning, and the write goes on
    }
  }
}
