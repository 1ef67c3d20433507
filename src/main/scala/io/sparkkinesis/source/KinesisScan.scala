package io.sparkkinesis.source

import io.sparkkinesis.client.KinesisClientCache
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.metadata.{DynamoDbMetadataStore, HadoopMetadataStore}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.metric.CustomMetric
import org.apache.spark.sql.connector.read.{Batch, Scan}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types._
import org.apache.spark.util.SerializableConfiguration

private[sparkkinesis] final class KinesisScan(private[sparkkinesis] val config: SourceConfig) extends Scan {
  override def readSchema(): StructType = KinesisScan.schema(config.includeSubSequenceNumber)

  override def supportedCustomMetrics(): Array[CustomMetric] = KinesisTaskMetrics.supported

  /** Shown in plans and the UI: no credentials ever appear in the config it is built from. */
  override def description(): String =
    s"KinesisScan[stream=${config.streamName}, region=${config.client.region}, " +
      s"endpoint=${config.client.endpointUrl}, consumer=${config.readMode.describe}, credentials=${config.client.credentials.source.describe}]"

  /**
   * A batch read: from `startingPosition` to `endingPosition`, polling (see [[KinesisBatch]]). One per scan: Spark may
   * ask more than once while planning, and each batch lists the shards and pins their ends.
   */
  override lazy val toBatch: Batch = {
    if (!config.readMode.supportsBatchRead) throw KinesisErrors.batchReadFanOut()
    new KinesisBatch(
      config,
      () => KinesisClientCache.acquire(config.client),
      () => Some(SparkSession.active.sparkContext.defaultParallelism)
    )
  }

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    if (config.endingPosition.isDefined) throw KinesisErrors.endingPositionInStream()
    val spark = SparkSession.active
    val minBatches = config.minBatchesToRetain.getOrElse(
      spark.conf.get("spark.sql.streaming.minBatchesToRetain", "100").toInt
    )
    val metadataStore = config.dynamoDb match {
      case Some(dynamo) => DynamoDbMetadataStore(dynamo, checkpointLocation)
      case None =>
        HadoopMetadataStore(
          config.metadataPath.getOrElse(s"$checkpointLocation/kinesis"),
          spark.sparkContext.broadcast(new SerializableConfiguration(spark.sparkContext.hadoopConfiguration)),
          config.metadataRetry
        )
    }
    metadataStore.prepare()
    val client = KinesisClientCache.acquire(config.client) // leased until the stream stops
    client
      .closeIfFails { c =>
        new KinesisMicroBatchStream(
          config,
          c,
          c,
          c,
          metadataStore,
          ReadSettings.of(config),
          minBatches,
          releaseClients = () => client.close(),
          parallelism = () => Some(spark.sparkContext.defaultParallelism)
        )
      }
      .start()
  }
}

private[sparkkinesis] object KinesisScan {

  /** The read schema: the five columns of the public contract, in order, then the shard id. */
  val Schema: StructType = StructType(
    Seq(
      StructField("data", BinaryType),
      StructField("streamName", StringType),
      StructField("partitionKey", StringType),
      StructField("sequenceNumber", StringType),
      StructField("approximateArrivalTimestamp", TimestampType),
      StructField("shardId", StringType)
    )
  )

  /** The column `kinesis.includeSubSequenceNumber` adds, last. */
  val SubSequenceNumber = "subSequenceNumber"

  /**
   * The read schema: [[Schema]], then, with `kinesis.includeSubSequenceNumber`, the index of each user record in its
   * KPL aggregate (0 when not aggregated), never null, which makes each row's (stream, shard, sequence) key unique.
   */
  def schema(includeSubSequenceNumber: Boolean): StructType =
    if (includeSubSequenceNumber) Schema.add(StructField(SubSequenceNumber, LongType, nullable = false))
    else Schema
}
