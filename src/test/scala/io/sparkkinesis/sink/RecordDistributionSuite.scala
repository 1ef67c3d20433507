package io.sparkkinesis.sink

import io.sparkkinesis.client.StreamSummary
import io.sparkkinesis.config.SinkConfig
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{BinaryType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.AnonymousCredentialsProvider
import software.amazon.kinesis.producer.KinesisProducerConfiguration.RecordDistributionStrategyDefault

/**
 * What the sink does on a stream with service-managed record distribution (RecordDistributionStrategy AUTO), once the
 * driver learnt the mode: no aggregation, the KPL told up front, no producer shared with a write that aggregates, and
 * rows without a partition key accepted there only.
 */
class RecordDistributionSuite extends AnyFunSuite {

  private val config = SinkConfig.parse(
    Map(
      "kinesis.streamName" -> "orders",
      "kinesis.region" -> "eu-west-1",
      "kinesis.endpointUrl" -> "https://localhost:4567"
    ),
    () => None
  )

  test(
    "on an AUTO stream the write never aggregates, whatever aggregationEnabled says, and tells the KPL so"
  ) {
    assert(config.producer.aggregationEnabled, "aggregation is on by default")
    val auto = TargetStreamCheck.applyTo(config, RecordDistribution.ServiceManaged)
    assert(!auto.producer.aggregationEnabled && auto.producer.serviceManagedDistribution)
    val kpl = KplProducer.configuration(auto.producer, AnonymousCredentialsProvider.create())
    assert(!kpl.isAggregationEnabled)
    assert(kpl.getRecordDistributionStrategyDefault == RecordDistributionStrategyDefault.AUTO)
  }

  test(
    "on a stream placed by partition key, or one the driver could not describe, the options decide as before"
  ) {
    for (d <- Seq(RecordDistribution.ByPartitionKey, RecordDistribution.Unknown)) {
      val c = TargetStreamCheck.applyTo(config, d)
      assert(c.producer == config.producer, d)
      val kpl = KplProducer.configuration(c.producer, AnonymousCredentialsProvider.create())
      assert(kpl.isAggregationEnabled)
      assert(kpl.getRecordDistributionStrategyDefault == RecordDistributionStrategyDefault.USER_PARTITION_KEY)
    }
  }

  test("a producer made for a stream that aggregates is never the one of an AUTO stream (pool keys differ)") {
    val auto = TargetStreamCheck.applyTo(config, RecordDistribution.ServiceManaged)
    val byKey = TargetStreamCheck.applyTo(config, RecordDistribution.ByPartitionKey)
    assert(
      ProducerKey(auto.producer, auto.client.credentials) != ProducerKey(
        byKey.producer,
        byKey.client.credentials
      )
    )
    // Even with aggregation off by option, the KPL's starting strategy differs, so the producers do too.
    val off = config.copy(producer = config.producer.copy(aggregationEnabled = false))
    assert(
      TargetStreamCheck.applyTo(off, RecordDistribution.ServiceManaged).producer !=
        TargetStreamCheck.applyTo(off, RecordDistribution.ByPartitionKey).producer
    )
  }

  private val dataOnly = StructType(Seq(StructField("data", BinaryType)))

  private val withKey = StructType(
    Seq(StructField("data", StringType), StructField("partitionKey", StringType))
  )

  test(
    "an input without a partitionKey column is refused for a stream placed by key, accepted for an AUTO one"
  ) {
    val columns = SinkSchema.validate(dataOnly, keyOptional = true).toOption.get
    assert(columns.partitionKey.isEmpty)
    val refused = columns.forStream(serviceManaged = false, "orders").swap.toOption.get.getMessage
    assert(refused.startsWith("The Kinesis sink needs a column 'partitionKey' (string) for stream orders"))
    assert(refused.contains("USER_PARTITION_KEY") && refused.contains("AUTO"))
    assert(columns.forStream(serviceManaged = true, "orders").toOption.get.keyOptional)
    // Without the stream's say-so the column stays required, as before.
    assert(SinkSchema.validate(dataOnly).isLeft)
  }

  test(
    "rows without a key: written without one on an AUTO stream, refused with the column, the fix, elsewhere"
  ) {
    val byKey = SinkSchema.validate(withKey).toOption.get.forStream(serviceManaged = false, "s").toOption.get
    val auto = SinkSchema.validate(withKey).toOption.get.forStream(serviceManaged = true, "s").toOption.get
    val keyless = InternalRow(UTF8String.fromString("v"), null)
    val problem = UserRecords.fromRow(keyless, byKey).swap.toOption.get
    assert(problem.startsWith("partitionKey is null; every row needs a partition key"))
    assert(problem.contains("coalesce(partitionKey, uuid())") && problem.contains("(AUTO)"))
    val record = UserRecords.fromRow(keyless, auto).toOption.get
    assert(record.partitionKey == null && record.data.sameElements("v".getBytes("UTF-8")))
    // A key that is there is kept; an empty one is still refused (Kinesis refuses it on any stream).
    assert(
      UserRecords
        .fromRow(InternalRow(UTF8String.fromString("v"), UTF8String.fromString("k")), auto)
        .toOption
        .get
        .partitionKey == "k"
    )
    assert(UserRecords.check("", null, Array[Byte](1), keyOptional = true).isLeft)
    // No partitionKey column at all.
    val noColumn =
      SinkSchema.validate(dataOnly, keyOptional = true).toOption.get.forStream(true, "s").toOption.get
    assert(UserRecords.fromRow(InternalRow(Array[Byte](1, 2)), noColumn).toOption.get.partitionKey == null)
    // The size limit counts no key bytes.
    assert(
      UserRecords
        .check(null, null, new Array[Byte](StreamSummary.DefaultMaxRecordBytes.toInt), keyOptional = true)
        .isRight
    )
  }
}
