package io.sparkkinesis.source

import java.util

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client.KinesisClientCache
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.credentials.SecretHygiene
import io.sparkkinesis.metadata.{DynamoDbMetadataStore, HadoopMetadataStore, SerializableHadoopConf}
import io.sparkkinesis.reader.{HashKeyRange, ShardPosition}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability, TableProvider}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain

/** `format("aws-kinesis")`: validates options when the DataFrame is defined, and builds the table. */
final class KinesisSourceProvider extends TableProvider with DataSourceRegister {
  override def shortName(): String = "aws-kinesis"

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = {
    KinesisSourceProvider.parse(options)
    KinesisSourceProvider.Schema
  }

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]
  ): Table = new KinesisTable(KinesisSourceProvider.parse(new CaseInsensitiveStringMap(properties)))
}

object KinesisSourceProvider {

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

  def parse(options: CaseInsensitiveStringMap): SourceConfig = {
    // Before Spark prints these options in a plan string: redact every secret one there.
    SparkSession.getActiveSession.foreach(SecretHygiene.registerRedaction)
    SourceConfig.parse(
      options.asCaseSensitiveMap().asScala.toMap,
      () => scala.util.Try(new DefaultAwsRegionProviderChain().getRegion.id()).toOption
    )
  }
}

final class KinesisTable(config: SourceConfig) extends Table with SupportsRead {
  override def name(): String = s"aws-kinesis[${config.streamName}]"
  override def schema(): StructType = KinesisSourceProvider.Schema
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.MICRO_BATCH_READ)
  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () => new KinesisScan(config)
}

final class KinesisScan(config: SourceConfig) extends Scan {
  override def readSchema(): StructType = KinesisSourceProvider.Schema

  /** Shown in plans and the UI: no credentials ever appear in the config it is built from. */
  override def description(): String =
    s"KinesisScan[stream=${config.streamName}, region=${config.client.region}, " +
      s"endpoint=${config.client.endpointUrl}, consumer=GetRecords, credentials=${config.client.credentials.source.describe}]"

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    val spark = SparkSession.active
    val minBatches = config.minBatchesToRetain.getOrElse(
      spark.conf.get("spark.sql.streaming.minBatchesToRetain", "100").toInt
    )
    val metadataStore = config.dynamoDb match {
      case Some(dynamo) => DynamoDbMetadataStore(dynamo, checkpointLocation)
      case None =>
        val hadoopConf = spark.sparkContext.hadoopConfiguration
        HadoopMetadataStore(
          config.metadataPath.getOrElse(s"$checkpointLocation/kinesis"),
          spark.sparkContext.broadcast(new SerializableHadoopConf(hadoopConf)),
          config.metadataRetry
        )
    }
    val template = KinesisInputPartition(
      streamName = config.streamName,
      shardId = "",
      batchId = -1,
      runId = "",
      start = ShardPosition.TrimHorizon,
      hashKeyRange = HashKeyRange(0, 0),
      client = config.client,
      metadataStore = metadataStore,
      maxRecords = config.maxRecordsPerShard,
      maxTimeMs = config.maxFetchTimePerShardMs,
      recordsPerFetch = config.recordsPerFetch,
      fetchIntervalMs = config.fetchIntervalMs,
      failOnDataLoss = config.failOnDataLoss
    )
    metadataStore.prepare()
    new KinesisMicroBatchStream(
      config,
      KinesisClientCache.get(config.client),
      metadataStore.open,
      template,
      minBatches
    )
  }
}
