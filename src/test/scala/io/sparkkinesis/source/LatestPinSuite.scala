package io.sparkkinesis.source

import java.net.URI
import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID

import scala.collection.mutable

import io.sparkkinesis.client._
import io.sparkkinesis.reader.ShardPosition
import io.sparkkinesis.source.StreamFakes._
import io.sparkkinesis.testutil.Ministack
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}
import software.amazon.awssdk.core.SdkBytes
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.kinesis.KinesisClient
import software.amazon.awssdk.services.kinesis.model.{CreateStreamRequest, PutRecordRequest}

/**
 * `LATEST` is pinned to when the query started by Kinesis' clock, not the driver's: a driver clock that runs ahead
 * of Kinesis' skips no record put after the start.
 */
class LatestPinSuite extends AnyFunSuite {
  private val SkewMs = 5000L

  test("an HTTP date parses to epoch milliseconds; anything else is unknown") {
    assert(StreamSummary.httpDateMillis("Wed, 25 Nov 2026 07:59:58 GMT") == Some(1795593598000L))
    assert(StreamSummary.httpDateMillis(" Wed, 25 Nov 2026 07:59:58 GMT ") == Some(1795593598000L))
    assert(StreamSummary.httpDateMillis("yesterday").isEmpty)
  }

  test("LATEST starts at Kinesis' time of the start, and at the driver's only when Kinesis gave none") {
    val c = config("kinesis.startingPosition" -> "LATEST")
    def initial(servedAt: Option[Long]) = {
      val listing = new Listing(open("shardId-000000000000"), servedAt)
      val s = new KinesisMicroBatchStream(
        c,
        listing,
        noRecords,
        noConsumers,
        StreamFakes.StoreOf(_ => new Entries),
        template(c),
        10,
        () => 9000L
      )
      s.initialOffset().asInstanceOf[KinesisOffset].shards.values.map(_.position).toSet
    }
    assert(initial(Some(4000L)) == Set(ShardPosition.AtTimestamp(4000L)))
    assert(initial(None) == Set(ShardPosition.AtTimestamp(9000L)))
  }

  test("a driver clock running ahead of Kinesis' skips none of the records put after the start (ministack)") {
    val endpoint = Ministack.endpoint
    val stream = s"latest-pin-${UUID.randomUUID().toString.take(8)}"
    val sdk = KinesisClient
      .builder()
      .region(Region.US_EAST_1)
      .endpointOverride(URI.create(endpoint))
      .credentialsProvider(
        StaticCredentialsProvider.create(AwsBasicCredentials.create("test-access-key", "test-secret-key"))
      )
      .build()
    def put(text: String): Unit =
      sdk.putRecord(
        PutRecordRequest
          .builder()
          .streamName(stream)
          .partitionKey(text)
          .data(SdkBytes.fromString(text, UTF_8))
          .build()
      )
    try {
      sdk.createStream(CreateStreamRequest.builder().streamName(stream).shardCount(1).build())
      put("before")
      // Kinesis' time of the start is known to the second: start in a later second than the record put before.
      Thread.sleep(2000L - System.currentTimeMillis() % 1000L)

      val c = config(
        "kinesis.streamName" -> stream,
        "kinesis.endpointUrl" -> endpoint,
        "kinesis.awsAccessKeyId" -> "test-access-key",
        "kinesis.awsSecretKey" -> "test-secret-key",
        "kinesis.startingPosition" -> "LATEST"
      )
      val client = new SdkKinesisClient(c.client)
      val entries = new Entries
      try {
        val s = new KinesisMicroBatchStream(
          c,
          client,
          client,
          client,
          StreamFakes.StoreOf(_ => entries),
          template(c).copy(client = c.client),
          10,
          () => System.currentTimeMillis() + SkewMs
        )
        val start = s.initialOffset().asInstanceOf[KinesisOffset]
        put("after-1")
        put("after-2")
        val end = s.latestOffset(start, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
        val read = mutable.ArrayBuffer[String]()
        s.planInputPartitions(start, end).foreach { p =>
          val reader =
            new KinesisPartitionReader(template(c).copy(client = c.client), task(p), client, Some(entries))
          try while (reader.next()) read += new String(reader.get().getBinary(0), UTF_8)
          finally reader.close()
        }
        assert(read.toSeq == Seq("after-1", "after-2"))
        s.stop()
      } finally client.close()
    } finally sdk.close()
  }
}
