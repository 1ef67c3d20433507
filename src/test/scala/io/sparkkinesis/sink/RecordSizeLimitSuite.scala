package io.sparkkinesis.sink

import io.sparkkinesis.client.StreamSummary
import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.errors.KinesisIllegalArgumentException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.AnonymousCredentialsProvider

/**
 * The sink's record size limit: the stream's MaxRecordSizeInKiB as the driver learnt it (1 MiB when it could not ask),
 * handed to the KPL (maxUserRecordSize, aggregation size) and checked per row before a row reaches the producer.
 */
class RecordSizeLimitSuite extends AnyFunSuite {

  private val config = SinkConfig.parse(
    Map(
      "kinesis.streamName" -> "big",
      "kinesis.region" -> "eu-west-1",
      "kinesis.endpointUrl" -> "https://localhost:4567",
      "kinesis.sink.aggregationMaxSize" -> "1048576"
    ),
    () => None
  )

  private val tenMiB = 10L * 1024 * 1024

  test("a summary without MaxRecordSizeInKiB means Kinesis' default of 1 MiB") {
    val summary = StreamSummary("big", "arn", "ACTIVE", 24)
    assert(summary.maxRecordBytes == 1048576L)
    assert(summary.copy(maxRecordSizeKiB = Some(10240)).maxRecordBytes == tenMiB)
  }

  test("the stream's limit sets the KPL's maxUserRecordSize and caps its aggregates") {
    val big = TargetStreamCheck.withRecordLimit(config, Some(tenMiB))
    assert(big.recordLimitKnown && big.producer.maxRecordBytes == tenMiB)
    val kpl = KplProducer.configuration(big.producer, AnonymousCredentialsProvider.create())
    assert(kpl.getMaxUserRecordSize == tenMiB)
    assert(kpl.getAggregationMaxSize == 1048576L, "aggregates stay within kinesis.sink.aggregationMaxSize")

    val unknown = TargetStreamCheck.withRecordLimit(config, None)
    assert(!unknown.recordLimitKnown && unknown.producer.maxRecordBytes == 1048576L)
    assert(unknown.producer != big.producer, "producers for different limits are not shared")
    val small = KplProducer.configuration(unknown.producer, AnonymousCredentialsProvider.create())
    assert(small.getMaxUserRecordSize == 1048576L)
  }

  /** Fails the test when any record reaches it. */
  private object NoProducer extends RecordProducer {

    override def add(streamName: String, record: SinkRecord, onOutcome: RecordOutcome => Unit): Unit =
      fail(s"a record of ${record.data.length} bytes reached the producer")
    override def outstandingRecords: Long = 0
    override def flush(): Unit = ()
  }

  private val columns =
    SinkColumns(data = 0, dataIsString = false, partitionKey = Some(1), explicitHashKey = None)

  private def row(bytes: Int, key: String) = InternalRow(new Array[Byte](bytes), UTF8String.fromString(key))

  test(
    "a row over the stream's limit fails in write(), naming limit, size and key, before the producer sees it"
  ) {
    val writer =
      new KinesisDataWriter(TargetStreamCheck.withRecordLimit(config, Some(tenMiB)), columns, NoProducer, 7)
    val error = intercept[KinesisIllegalArgumentException](writer.write(row(tenMiB.toInt, "order-42")))
    val message = error.getMessage
    assert(message.contains("Row 0 of partition 7 cannot be written to Kinesis"), message)
    assert(message.contains(s"the record is ${tenMiB + 8} bytes"), message)
    assert(message.contains(s"over the stream's limit of $tenMiB bytes (MaxRecordSizeInKiB 10240)"), message)
    assert(message.contains("partition key 'order-42'"), message)
    assert(!message.contains("DescribeStreamSummary"), message)
  }

  test("when the driver could not read the limit, 1 MiB applies and the message says how to lift it") {
    val writer =
      new KinesisDataWriter(TargetStreamCheck.withRecordLimit(config, None), columns, NoProducer, 0)
    val message =
      intercept[KinesisIllegalArgumentException](writer.write(row(2 * 1024 * 1024, "k"))).getMessage
    assert(message.contains("over the stream's limit of 1048576 bytes"), message)
    assert(message.contains("grant kinesis:DescribeStreamSummary"), message)
  }
}
