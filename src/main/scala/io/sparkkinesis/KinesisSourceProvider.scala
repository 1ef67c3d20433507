package io.sparkkinesis

import java.util

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config._
import io.sparkkinesis.credentials.{AwsCredentials, SecretHygiene}
import io.sparkkinesis.sink.KinesisWriteBuilder
import io.sparkkinesis.source.KinesisScan
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog._
import org.apache.spark.sql.connector.catalog.TableCapability._
import org.apache.spark.sql.connector.expressions.Transform
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, WriteBuilder}
import org.apache.spark.sql.sources.DataSourceRegister
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * The connector's data source: validates options when the DataFrame (or the writer) is defined, and builds the table.
 * Spark does not say yet whether the table will be read or written, so options are checked against the whole table;
 * the read or write then refuses options of the other side. Registered as [[SparkKinesisProvider]], `spark-kinesis`
 * (only this connector registers it; the Python builders and the docs use it), and as [[KinesisSourceProvider]],
 * `aws-kinesis`, the awslabs connector's name, which Spark resolves to that connector where it is on the classpath
 * too (Amazon EMR 7.1+ puts it there: its provider class is under `org.apache.spark`).
 */
sealed abstract class KinesisTableProvider extends TableProvider with DataSourceRegister {

  // Spark makes a provider for each load() or save(), then asks it for the schema and for the table with the same
  // options: they are checked once, and the table keeps what the check parsed.
  private var lastChecked: Option[(Map[String, String], CheckedOptions)] = None

  private def checked(options: util.Map[String, String]): CheckedOptions = {
    val raw = options.asScala.toMap
    lastChecked.collect { case (`raw`, done) => done }.getOrElse {
      val done = KinesisSourceProvider.validate(raw)
      lastChecked = Some(raw -> done)
      done
    }
  }

  override def inferSchema(options: CaseInsensitiveStringMap): StructType =
    checked(options.asCaseSensitiveMap()).schema

  override def getTable(
      schema: StructType,
      partitioning: Array[Transform],
      properties: util.Map[String, String]
  ): Table = {
    // Every read and write is defined through a table, before Spark prints its options in a plan string: the
    // session redacts every secret option there from now on.
    SparkSession.getActiveSession.foreach(SecretHygiene.registerRedaction)
    new KinesisTable(checked(properties), properties.asScala.toMap)
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

  val ShortName = "spark-kinesis"
  val CompatibleShortName = "aws-kinesis"

  /** A read's options (keys in any case), checked as when the query is defined; `defaultRegion` when they name none. */
  def parse(
      options: Map[String, String],
      defaultRegion: () => Option[String] = AwsClientConfig.environmentRegion
  ): SourceConfig = withProviderClass(SourceConfig.parse(options, defaultRegion))(_.client)

  /** A write's options, checked as when the query is defined (see [[parse]]). */
  def parseSink(
      options: Map[String, String],
      defaultRegion: () => Option[String] = AwsClientConfig.environmentRegion
  ): SinkConfig = withProviderClass(SinkConfig.parse(options, defaultRegion))(_.client)

  // `config`, once its custom credentials class loads: a missing or wrong class fails when the query is defined.
  private def withProviderClass[C](config: C)(client: C => AwsClientConfig): C = {
    client(config).credentials.providerClass.foreach(AwsCredentials.checkCustomClass)
    config
  }

  /**
   * Checks every option's key and value and that the stream is named (by name, or by ARN for reads). When the options
   * belong to one side only, that side's full check runs too, and its parsed config is kept.
   */
  def validate(raw: Map[String, String]): CheckedOptions = {
    val scopes = raw.keys.flatMap(KinesisOptions.lookup).map(_.scope).toSet
    def given(spec: OptionSpec[String]) =
      raw.collectFirst { case (key, value) if key.equalsIgnoreCase(spec.fullKey) => value.trim }
    // Each branch has checked that one of the two is given.
    def named = given(KinesisOptions.StreamName).orElse(given(KinesisOptions.StreamArn)).get
    if (!scopes.contains(OptionScope.Sink)) {
      val source = parse(raw)
      CheckedOptions(named, KinesisScan.schema(source.includeSubSequenceNumber), Some(source), None)
    } else if (!scopes.contains(OptionScope.Source)) {
      CheckedOptions(named, KinesisScan.Schema, None, Some(parseSink(raw)))
    } else {
      // Options of both sides: each is checked now; the read or the write refuses the other side's.
      val view = new OptionValues(raw, OptionScope.Both)
      if (given(KinesisOptions.StreamName).isEmpty && given(KinesisOptions.StreamArn).isEmpty)
        view.required(KinesisOptions.StreamName)
      val schema = KinesisScan.schema(view.getOrDefault(KinesisOptions.IncludeSubSequenceNumber))
      CheckedOptions(named, schema, None, None)
    }
  }
}

/**
 * The options of one load() or save(), checked: the stream as they name it, the read schema, and the parsed config
 * of the side they belong to (neither with options of both sides: the read or the write parses them then).
 */
private[sparkkinesis] final case class CheckedOptions(
    streamName: String,
    schema: StructType,
    source: Option[SourceConfig],
    sink: Option[SinkConfig]
)

/** The stream as a table: read by batch or micro-batch queries, written by batch or streaming queries. */
final class KinesisTable(private[sparkkinesis] val checked: CheckedOptions, options: Map[String, String])
    extends Table
    with SupportsRead
    with SupportsWrite {
  override def name(): String = s"aws-kinesis[${checked.streamName}]"

  /** A streaming sink's description in progress JSON and the UI: the name, never the options. */
  override def toString: String = name()
  override def schema(): StructType = checked.schema

  /** ACCEPT_ANY_SCHEMA: a write's input has the sink's columns, not the read schema; the sink checks them itself. */
  override def capabilities(): util.Set[TableCapability] =
    util.EnumSet.of(BATCH_READ, MICRO_BATCH_READ, BATCH_WRITE, STREAMING_WRITE, ACCEPT_ANY_SCHEMA)

  override def newScanBuilder(scanOptions: CaseInsensitiveStringMap): ScanBuilder = {
    val config = checked.source.getOrElse(KinesisSourceProvider.parse(options))
    () => new KinesisScan(config)
  }

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder =
    new KinesisWriteBuilder(checked.sink.getOrElse(KinesisSourceProvider.parseSink(options)), info)
}
