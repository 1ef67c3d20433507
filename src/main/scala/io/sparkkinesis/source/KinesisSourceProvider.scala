package io.sparkkinesis.source

import java.util

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client.KinesisClientCache
import io.sparkkinesis.config.{KinesisOptions, OptionScope, OptionValues, SinkConfig, SourceConfig}
import io.sparkkinesis.credentials.SecretHygiene
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.metadata.{DynamoDbMetadataStore, HadoopMetadataStore, SerializableHadoopConf}
import io.sparkkinesis.reader.{HashKeyRange, ShardPosition}
import io.sparkkinesis.sink.KinesisWriteBuilder
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{
  SupportsRead,
  SupportsWrite,
  Table,
  TableCapability,
  TableProvider
}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.metric.CustomMetric
import org.apache.spark.sql.connector.read.{Batch, Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types._
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain

/**
 * `format("aws-kinesis")`: validates options when the DataFrame (or the writer) is defined, and builds the table.
 * Spark does not say yet whether the table will be read or written, so options are checked here against the whole
 * table; the read or write then checks that no option of the other side is given.
 */
final class KinesisSourceProvider extends TableProvider with DataSourceRegister {
  override def shortName(): String = "aws-kinesis"

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = {
    KinesisSourceProvider.validate(options)
    KinesisSourceProvider.Schema
  }

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]
  ): Table = {
    // Every read and write is defined through a table, before Spark prints its options in a plan string: the
    // session redacts every secret option there from now on.
    SparkSession.getActiveSession.foreach(SecretHygiene.registerRedaction)
    val options = new CaseInsensitiveStringMap(properties)
    new KinesisTable(KinesisSourceProvider.validate(options), options)
  }
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

  private val defaultRegion = () =>
    scala.util.Try(new DefaultAwsRegionProviderChain().getRegion.id()).toOption

  def parse(options: CaseInsensitiveStringMap): SourceConfig =
    SourceConfig.parse(options.asCaseSensitiveMap().asScala.toMap, defaultRegion)

  def parseSink(options: CaseInsensitiveStringMap): SinkConfig =
    SinkConfig.parse(options.asCaseSensitiveMap().asScala.toMap, defaultRegion)

  /**
   * Checks every option's key and value and that the stream is named (by name, or by ARN for reads); returns the
   * stream name(s) or ARN(s). When the options belong to one side only (sink options and no source ones, or the
   * reverse), that side's full check runs now too.
   */
  def validate(options: CaseInsensitiveStringMap): String = {
    val raw = options.asCaseSensitiveMap().asScala.toMap
    val view = new OptionValues(raw, OptionScope.Both)
    val streamName = view.get(KinesisOptions.StreamName).orElse(view.get(KinesisOptions.StreamArn)).getOrElse {
      view.required(KinesisOptions.StreamName)
    }
    val scopes = raw.keys.flatMap(KinesisOptions.lookup).map(_.scope).toSet
    if (scopes.contains(OptionScope.Sink) && !scopes.contains(OptionScope.Source)) parseSink(options)
    else if (!scopes.contains(OptionScope.Sink)) parse(options)
    streamName
  }
}

/** The stream as a table: read by batch or micro-batch queries, written by batch or streaming queries. */
final class KinesisTable(streamName: String, options: CaseInsensitiveStringMap)
    extends Table
    with SupportsRead
    with SupportsWrite {
  override def name(): String = s"aws-kinesis[$streamName]"

  /** A streaming sink's description in progress JSON and the UI: the name, never the options. */
  override def toString: String = name()
  override def schema(): StructType = KinesisSourceProvider.Schema

  /** ACCEPT_ANY_SCHEMA: a write's input has the sink's columns, not the read schema; the sink checks them itself. */
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(
    TableCapability.BATCH_READ,
    TableCapability.MICRO_BATCH_READ,
    TableCapability.BATCH_WRITE,
    TableCapability.STREAMING_WRITE,
    TableCapability.ACCEPT_ANY_SCHEMA
  )

  override def newScanBuilder(scanOptions: CaseInsensitiveStringMap): ScanBuilder = {
    val config = KinesisSourceProvider.parse(options)
    () => new KinesisScan(config)
  }

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder =
    new KinesisWriteBuilder(KinesisSourceProvider.parseSink(options), info)
}

final class KinesisScan(config: SourceConfig) extends Scan {
  override def readSchema(): StructType = KinesisSourceProvider.Schema

  override def supportedCustomMetrics(): Array[CustomMetric] = KinesisTaskMetrics.supported

  /** Shown in plans and the UI: no credentials ever appear in the config it is built from. */
  override def description(): String =
    s"KinesisScan[stream=${config.streamName}, region=${config.client.region}, " +
      s"endpoint=${config.client.endpointUrl}, consumer=${config.consumerType}" +
      config.efo.map(e => s", consumerName=${e.consumerName}").getOrElse("") +
      s", credentials=${config.client.credentials.source.describe}]"

  /**
   * A batch read: from `startingPosition` to `endingPosition`, polling (see [[KinesisBatch]]). One per scan: Spark may
   * ask more than once while planning, and each batch lists the shards and pins their ends.
   */
  override def toBatch: Batch = batch

  private lazy val batch: Batch = {
    if (config.efo.isDefined) {
      throw KinesisErrors.unsupportedOperation(
        "A batch read (spark.read) with kinesis.consumerType = SubscribeToShard is not supported: enhanced fan-out " +
          "pushes records from a subscription with no end. Use kinesis.consumerType = GetRecords for batch reads."
      )
    }
    new KinesisBatch(config, () => KinesisClientCache.acquire(config.client))
  }

  override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
    config.endingPosition.foreach { _ =>
      throw KinesisErrors.invalidOption(
        "Option kinesis.endingPosition applies to batch reads (spark.read) only; a streaming query has no end. " +
          "Remove it, or read with spark.read."
      )
    }
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
      failOnDataLoss = config.failOnDataLoss,
      maxFetchRateMBps = config.maxFetchRateMBps,
      efo = None
    )
    metadataStore.prepare()
    // Leased until the stream stops.
    val client = KinesisClientCache.acquire(config.client)
    client
      .closeIfFails { c =>
        new KinesisMicroBatchStream(
          config,
          c,
          c,
          c,
          metadataStore.open,
          template,
          minBatches,
          releaseClients = () => client.close(),
          parallelism = () => Some(spark.sparkContext.defaultParallelism)
        )
      }
      .start()
  }
}
