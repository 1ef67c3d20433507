package io.sparkkinesis

import java.util

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config.{
  AwsClientConfig,
  KinesisOptions,
  OptionScope,
  OptionValues,
  SinkConfig,
  SourceConfig
}
import io.sparkkinesis.credentials.{AwsCredentials, SecretHygiene}
import io.sparkkinesis.sink.KinesisWriteBuilder
import io.sparkkinesis.source.KinesisScan
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{
  SupportsRead,
  SupportsWrite,
  Table,
  TableCapability,
  TableProvider
}
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain

/**
 * The connector's data source: validates options when the DataFrame (or the writer) is defined, and builds the table.
 * Spark does not say yet whether the table will be read or written, so options are checked here against the whole
 * table; the read or write then checks that no option of the other side is given. Reads are the `source` package's
 * ([[KinesisScan]]), writes the `sink` package's; the two do not know each other.
 *
 * It is registered under two short names, one class each (a `DataSourceRegister` has one name):
 *  - [[SparkKinesisProvider]], `spark-kinesis`: a name only this connector registers, so it selects this connector
 *    whatever else is on the classpath. The Python builders and the docs use it.
 *  - [[KinesisSourceProvider]], `aws-kinesis`: the awslabs connector's name, for jobs written for it. Where that
 *    connector is on the classpath too (Amazon EMR 7.1+ puts it there), Spark resolves `aws-kinesis` to it, because
 *    its provider class is under `org.apache.spark`.
 */
sealed abstract class KinesisTableProvider extends TableProvider with DataSourceRegister {

  override def inferSchema(options: CaseInsensitiveStringMap): StructType = {
    KinesisSourceProvider.validate(options)
    KinesisSourceProvider.readSchema(options.asCaseSensitiveMap().asScala.toMap)
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

/** `format("aws-kinesis")`: the name shared with the awslabs connector (see [[KinesisTableProvider]]). */
final class KinesisSourceProvider extends KinesisTableProvider {
  override def shortName(): String = KinesisSourceProvider.CompatibleShortName
}

/** `format("spark-kinesis")`: the name only this connector registers (see [[KinesisTableProvider]]). */
final class SparkKinesisProvider extends KinesisTableProvider {
  override def shortName(): String = KinesisSourceProvider.ShortName
}

object KinesisSourceProvider {

  /** The short name only this connector registers. */
  val ShortName = "spark-kinesis"

  /** The short name this connector shares with the awslabs connector. */
  val CompatibleShortName = "aws-kinesis"

  /** The region of the environment (AWS SDK's default region chain), when the options name none. */
  val awsDefaultRegion: () => Option[String] = () =>
    scala.util.Try(new DefaultAwsRegionProviderChain().getRegion.id()).toOption

  /**
   * A read's options (keys in any case), checked as when the query is defined; `defaultRegion` is where the region
   * comes from when the options do not say.
   */
  def parse(
      options: Map[String, String],
      defaultRegion: () => Option[String] = awsDefaultRegion
  ): SourceConfig = withProviderClass(SourceConfig.parse(options, defaultRegion))(_.client)

  /** The read schema for these options (`kinesis.includeSubSequenceNumber` adds a column); options already checked. */
  def readSchema(options: Map[String, String]): StructType =
    KinesisScan.schema(
      new OptionValues(options, OptionScope.Both).getOrDefault(KinesisOptions.IncludeSubSequenceNumber)
    )

  /** A write's options, checked as when the query is defined (see [[parse]]). */
  def parseSink(
      options: Map[String, String],
      defaultRegion: () => Option[String] = awsDefaultRegion
  ): SinkConfig = withProviderClass(SinkConfig.parse(options, defaultRegion))(_.client)

  // `config`, once its custom credentials class loads: a missing or wrong class fails when the query is defined.
  private def withProviderClass[C](config: C)(client: C => AwsClientConfig): C = {
    client(config).credentials.providerClass.foreach(AwsCredentials.checkCustomClass)
    config
  }

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
    if (scopes.contains(OptionScope.Sink) && !scopes.contains(OptionScope.Source)) parseSink(raw)
    else if (!scopes.contains(OptionScope.Sink)) parse(raw)
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
  override def schema(): StructType = KinesisSourceProvider.readSchema(raw)

  /** ACCEPT_ANY_SCHEMA: a write's input has the sink's columns, not the read schema; the sink checks them itself. */
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(
    TableCapability.BATCH_READ,
    TableCapability.MICRO_BATCH_READ,
    TableCapability.BATCH_WRITE,
    TableCapability.STREAMING_WRITE,
    TableCapability.ACCEPT_ANY_SCHEMA
  )

  private def raw = options.asCaseSensitiveMap().asScala.toMap

  override def newScanBuilder(scanOptions: CaseInsensitiveStringMap): ScanBuilder = {
    val config = KinesisSourceProvider.parse(raw)
    () => new KinesisScan(config)
  }

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder =
    new KinesisWriteBuilder(KinesisSourceProvider.parseSink(raw), info)
}
