package io.sparkkinesis.client

import java.time.Instant

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.core.SdkBytes
import software.amazon.awssdk.services.kinesis.model.{Record, StreamDescriptionSummary, SubscribeToShardEvent}

/**
 * Records without a partition key (a stream with service-managed record distribution takes them) come out of both
 * read paths' SDK models with a null key, which the read row shows as a null `partitionKey`. GetRecords answers and
 * SubscribeToShard events carry the same SDK `Record`, translated by the one [[SdkModel.records]]: this covers
 * polling, fan-out, batch and real-time reads (the emulator tests cover polling and batch reads end to end; the test
 * proxy does not rewrite HTTP/2 event streams, so fan-out keyless reads are covered here).
 */
class KeylessRecordSuite extends AnyFunSuite {

  private def record(seq: String, key: Option[String]) = {
    val b = Record
      .builder()
      .data(SdkBytes.fromUtf8String(s"data-$seq"))
      .sequenceNumber(seq)
      .approximateArrivalTimestamp(Instant.ofEpochMilli(1000L))
    key.foreach(b.partitionKey)
    b.build()
  }

  test("a record without a partition key has a null key, in GetRecords answers and SubscribeToShard events") {
    val records = List(record("1", None), record("2", Some("k")))
    val polled = SdkModel.records(records.asJava)
    assert(polled.map(_.partitionKey) == Seq(null, "k"))
    val event =
      SubscribeToShardEvent.builder().records(records.asJava).continuationSequenceNumber("2").build()
    assert(SdkModel.records(event.records()).map(_.partitionKey) == Seq(null, "k"))
  }

  test("DescribeStreamSummary's RecordDistributionStrategy decides whether the stream is service-managed") {
    def summary(strategy: Option[String]) = {
      val d = strategy
        .fold(StreamDescriptionSummary.builder())(s =>
          StreamDescriptionSummary.builder().recordDistributionStrategy(s)
        )
        .build()
      StreamSummary("s", "arn", "ACTIVE", 24, None, Option(d.recordDistributionStrategyAsString()))
    }
    assert(summary(Some("AUTO")).serviceManagedDistribution)
    assert(!summary(Some("USER_PARTITION_KEY")).serviceManagedDistribution)
    assert(!summary(None).serviceManagedDistribution, "an answer without the field: placed by partition key")
  }
}
