package io.sparkkinesis.errors

import scala.jdk.CollectionConverters._
import scala.util.matching.Regex

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/**
 * One error condition of the connector: its stable name, its SQLSTATE and its message template. A condition whose
 * sentences have several shapes lists them as sub-conditions (`subClass`, as in Spark's files): each shape is an
 * [[ErrorCondition]] of the condition's name and SQLSTATE whose template is the shape's whole sentence.
 */
private[sparkkinesis] final case class ErrorCondition(name: String, sqlState: String, template: String) {

  /** The template's parameters, in the order it names them first. */
  val parameterNames: Seq[String] =
    ErrorCondition.Parameter.findAllMatchIn(template).map(_.group(1)).toList.distinct

  /** The template with each `<parameter>` replaced; a parameter the template names must be given. */
  def render(parameters: Map[String, String]): String = ErrorCondition.Parameter.replaceAllIn(
    template,
    m => Regex.quoteReplacement(parameters.getOrElse(m.group(1), throw missing(m.group(1))))
  )

  private def missing(parameter: String) =
    KinesisErrors.internal(s"error condition $name: no value for parameter <$parameter>")
}

private[sparkkinesis] object ErrorCondition {
  private[errors] val Parameter = "<([a-zA-Z0-9_]+)>".r
}

/**
 * The connector's error conditions, read from [[ErrorConditions.ResourcePath]] in the jar (the layout of Spark's own
 * error-conditions files: each name maps to `sqlState` and either `message`, a list of lines, or `subClass`, whose
 * entries each have a `message`). Keys are the condition's name, or `NAME.SUB` for a sub-condition.
 */
private[sparkkinesis] object ErrorConditions {
  val ResourcePath = "META-INF/spark-kinesis/error-conditions.json"

  lazy val all: Map[String, ErrorCondition] = {
    val stream = Option(getClass.getClassLoader.getResourceAsStream(ResourcePath))
      .getOrElse(throw KinesisErrors.internal(s"$ResourcePath is missing from the connector's jar"))
    val root =
      try new ObjectMapper().readTree(stream)
      finally stream.close()
    def template(node: JsonNode) = node.get("message").elements().asScala.map(_.asText()).mkString("\n")
    root
      .properties()
      .iterator()
      .asScala
      .flatMap { entry =>
        val (name, node) = (entry.getKey, entry.getValue)
        val shapes = Option(node.get("subClass")).fold(Iterator("" -> node))(
          _.properties().iterator().asScala.map(s => s".${s.getKey}" -> s.getValue)
        )
        shapes.map { case (sub, shape) =>
          name + sub -> ErrorCondition(name, node.get("sqlState").asText(), template(shape))
        }
      }
      .toMap
  }

  /** The condition `key`: a condition's name, or `NAME.SUB` for one of its sub-conditions. */
  def apply(key: String): ErrorCondition =
    all.getOrElse(key, throw KinesisErrors.internal(s"unknown error condition $key (not in $ResourcePath)"))
}

/**
 * The Scala side of [[KinesisConnectorException]]: the condition `key` (`NAME` or `NAME.SUB`) and the values of its
 * template's parameters, in the order the template names them first, give every answer.
 */
private[sparkkinesis] trait KinesisError extends Throwable with KinesisConnectorException {
  def key: String
  protected def values: Seq[Any]
  val condition: ErrorCondition = ErrorConditions(key)
  val parameters: Map[String, String] = condition.parameterNames.zip(values.map(String.valueOf)).toMap
  private val rendered = condition.render(parameters)

  override def getMessage: String = rendered
  def getCondition: String = condition.name
  override def getSqlState: String = condition.sqlState
  override def getMessageParameters: java.util.Map[String, String] = parameters.asJava
  def getMessageTemplate: String = condition.template
}

/** A user's mistake in the options or the input (Spark and user code may catch `IllegalArgumentException`). */
private[sparkkinesis] class KinesisIllegalArgumentException(
    val key: String,
    val values: Seq[Any],
    cause: Throwable = null
) extends IllegalArgumentException(cause)
    with KinesisError

/** A state the connector cannot go on from: data lost, an attempt that lost a race, a stuck store. */
private[sparkkinesis] class KinesisIllegalStateException(
    val key: String,
    val values: Seq[Any],
    cause: Throwable = null
) extends IllegalStateException(cause)
    with KinesisError

/** Something this build does not do. */
private[sparkkinesis] class KinesisUnsupportedOperationException(val key: String, val values: Seq[Any])
    extends UnsupportedOperationException
    with KinesisError

/** A failure of Kinesis or of the producer while writing. */
private[sparkkinesis] class KinesisRuntimeException(val key: String, val values: Seq[Any])
    extends RuntimeException
    with KinesisError

/**
 * The errors the connector raises: one factory per condition or sub-condition, with a named, typed parameter for
 * each of its template's parameters, in the template's order (ErrorConditionsSuite checks that each lands in the
 * template's parameter of its name). The exception classes that callers catch by type (DataLossException,
 * LostToOtherAttempt, ProxyRefused, OptionRuleViolation) take their parameters in their constructors the same way.
 */
private[sparkkinesis] object KinesisErrors {

  /** A state that only a bug in the connector leads to: not a condition, the user cannot act on it. */
  def internal(what: String): IllegalStateException =
    new IllegalStateException(
      s"Internal error of spark-kinesis (a bug in the connector, please report it): $what"
    )

  private def argument(key: String, values: Any*) = new KinesisIllegalArgumentException(key, values)
  private def state(key: String, values: Any*) = new KinesisIllegalStateException(key, values)
  private def invalid(sub: String, values: Any*) = argument(s"KINESIS_INVALID_OPTION.$sub", values: _*)

  private def unsupported(sub: String, values: Any*) =
    argument(s"KINESIS_UNSUPPORTED_OPTION.$sub", values: _*)
  private def quoted(value: String) = s"'$value'"

  // KINESIS_INVALID_OPTION: a bad value, a missing or unknown option, options that do not go together.
  def expectedValue(option: String, value: String, allowed: String, secret: Boolean = false) =
    invalid("EXPECTED_VALUE", if (secret) "<redacted>" else quoted(value), option, allowed)

  def badValue(option: String, value: String, problem: String) =
    invalid("BAD_VALUE", quoted(value), option, problem)
  def badValueNotShown(option: String, problem: String) = invalid("BAD_VALUE_NOT_SHOWN", option, problem)
  def unknownOption(option: String, suggestion: String) = invalid("UNKNOWN_KEY", option, suggestion)
  def optionOfOtherSide(option: String, side: String) = invalid("OTHER_SIDE", option, side)
  def requiredOption(option: String, doc: String) = invalid("REQUIRED", option, doc)
  def noRegion() = invalid("NO_REGION")

  def arnRegionsDiffer(option: String, regions: Seq[String]) =
    invalid("ARN_REGIONS_DIFFER", option, regions.mkString(", "))

  def arnRegionConflict(option: String, arnRegion: String, region: String) =
    invalid("ARN_REGION_CONFLICT", option, arnRegion, region)
  def endingPositionInStream() = invalid("ENDING_POSITION_IN_STREAM")

  def unknownShards(option: String, stream: String, shards: Seq[String], listed: Seq[String]) =
    invalid("UNKNOWN_SHARDS", option, stream, shards.mkString(", "), listed.sorted.mkString(", "))

  def tableKeySchema(option: String, table: String, keySchema: String, needed: String) =
    invalid("TABLE_KEY_SCHEMA", option, table, keySchema, needed)
  def classNotFound(option: String, className: String) = invalid("CLASS_NOT_FOUND", option, className)

  def classNotLoaded(option: String, className: String, missing: String) =
    invalid("CLASS_NOT_LOADED", option, className, missing)

  def classNotProvider(option: String, className: String, interface: String) =
    invalid("CLASS_NOT_PROVIDER", option, className, interface)
  def noConstructor(option: String, className: String) = invalid("NO_CONSTRUCTOR", option, className)

  def noStringConstructor(option: String, className: String) =
    invalid("NO_STRING_CONSTRUCTOR", option, className)

  def constructorFailed(option: String, className: String, error: String) =
    invalid("CONSTRUCTOR_FAILED", option, className, error)

  def providerReturnedNull(option: String, className: String) =
    state("KINESIS_INVALID_OPTION.PROVIDER_RETURNED_NULL", option, className)

  def badSystemProperty(property: String, value: String, allowed: String) =
    invalid("BAD_SYSTEM_PROPERTY", quoted(value), property, allowed)

  // KINESIS_TOOL_REQUEST_INVALID, KINESIS_TOOL_FAILED: the JVM side of a command of the spark-kinesis CLI.
  def toolRequestInvalid(command: String, problem: String) =
    argument("KINESIS_TOOL_REQUEST_INVALID", command, problem)
  def toolFailed(command: String, problem: String) = state("KINESIS_TOOL_FAILED", command, problem)

  // KINESIS_UNSUPPORTED_OPTION: an option, a value or a combination this build does not support (yet).
  def optionNotYetSupported(option: String, why: String) = unsupported("OPTION_NOT_YET", option, why)

  def valueNotYetSupported(option: String, value: String, why: String) =
    unsupported("VALUE_NOT_YET", option, value, why)

  def s3aWithoutConditionalWrites(path: String, hadoopVersion: String) =
    unsupported("S3A_WITHOUT_CONDITIONAL_WRITES", path, hadoopVersion)

  def crossAccountSink(arn: String, account: String, found: String) =
    unsupported("CROSS_ACCOUNT_SINK", arn, account, found)

  /** Spark's API asks for an `UnsupportedOperationException` here. */
  def batchReadFanOut() =
    new KinesisUnsupportedOperationException("KINESIS_UNSUPPORTED_OPTION.BATCH_READ_FAN_OUT", Nil)

  def streamNotFound(stream: String, region: String, endpoint: String, operation: String, cause: Throwable) =
    new KinesisIllegalArgumentException(
      "KINESIS_STREAM_NOT_FOUND",
      Seq(stream, region, endpoint, operation),
      cause
    )

  /**
   * A stream deleted and re-created under the name a checkpoint or a positions document was written for (its
   * creation time, or its ARN, differs), with `kinesis.failOnDataLoss=true`.
   */
  def streamRecreated(stream: String, recordedIn: String, recorded: String, current: String, fixes: String) =
    state("KINESIS_STREAM_RECREATED", stream, recordedIn, recorded, current, fixes)

  /** Data loss that shows in the user's options: a per-shard position document naming expired shards. */
  def expiredShardsInOptions(option: String, stream: String, shards: Seq[String]) =
    argument("KINESIS_DATA_LOSS.EXPIRED_SHARDS_IN_OPTIONS", option, stream, shards.mkString(", "))

  /** A replay of a recorded batch cannot reach the end the batch recorded: its records left the shard. */
  def recordedBatchLost(read: String, recordedEnd: String, found: String) =
    state("KINESIS_DATA_LOSS.RECORDED_BATCH_LOST", read, recordedEnd, found)

  // KINESIS_CHECKPOINT_INVALID: the query's offsets or the ends in its metadata store cannot be used.
  def checkpointUnreadable(problem: String, cause: Throwable = null) =
    new KinesisIllegalArgumentException("KINESIS_CHECKPOINT_INVALID.UNREADABLE", Seq(problem), cause)

  def checkpointNewerFormat(what: String, version: Int, newest: Int) =
    state("KINESIS_CHECKPOINT_INVALID.NEWER_FORMAT", what, version, newest)

  def recordedEndMissing(shard: String, batch: Long, reader: String) =
    state("KINESIS_CHECKPOINT_INVALID.END_MISSING", shard, batch, reader)

  // KINESIS_SHARD_READ_FAILED: Kinesis did not let a read reach the end its batch needs.
  def readThrottled(read: String, times: Int) = state("KINESIS_SHARD_READ_FAILED.THROTTLED", read, times)

  def pinnedEndExpired(shard: String, stream: String, cause: Throwable) =
    new KinesisIllegalStateException(
      "KINESIS_SHARD_READ_FAILED.PINNED_END_EXPIRED",
      Seq(shard, stream),
      cause
    )

  def realTimeTasksLate(batch: Long, shards: Int, late: Seq[String]) =
    state("KINESIS_REAL_TIME_TASKS_LATE", batch, shards, late.sorted.mkString(", "))

  def metadataDeletesUnprocessed(table: String, pending: Int, calls: Int) =
    state("KINESIS_METADATA_STORE_FAILED.DELETES_UNPROCESSED", table, pending, calls)

  def metadataTableNotActive(table: String, timeoutSec: Long, status: String) =
    state("KINESIS_METADATA_STORE_FAILED.TABLE_NOT_ACTIVE", table, timeoutSec, status)

  def consumerNotActive(consumer: String, streamArn: String, timeoutSec: Long, lastState: String) =
    state("KINESIS_CONSUMER_NOT_ACTIVE", consumer, streamArn, timeoutSec, lastState)

  /** A SubscribeToShard answer that says the consumer is missing or not ACTIVE (see SubscriptionErrors). */
  def consumerUnusable(consumerArn: String, problem: String, cause: Throwable) =
    new KinesisIllegalStateException("KINESIS_CONSUMER_UNUSABLE", Seq(consumerArn, problem), cause)

  // The payload functions (from_glue_schema_registry, to_glue_schema_registry, dynamodb_changes).
  def schemaRegistryFailed(operation: String, endpoint: String, problem: String) =
    state("KINESIS_SCHEMA_REGISTRY_FAILED", operation, endpoint, problem)

  def schemaNotFound(function: String, endpoint: String, schema: String) =
    argument("KINESIS_SCHEMA_NOT_FOUND.SCHEMA", function, endpoint, schema)

  def definitionNotRegistered(function: String, schema: String) =
    argument("KINESIS_SCHEMA_NOT_FOUND.DEFINITION", function, schema)

  private def undecodable(sub: String, values: Any*) = state(s"KINESIS_PAYLOAD_UNDECODABLE.$sub", values: _*)
  def badPayloadHeader(function: String, problem: String) = undecodable("BAD_HEADER", function, problem)

  def unknownSchemaVersion(function: String, version: String, endpoint: String) =
    undecodable("UNKNOWN_SCHEMA_VERSION", function, version, endpoint)

  def unresolvableSchema(function: String, version: String, schema: String, problem: String) =
    undecodable("UNRESOLVABLE_SCHEMA", function, version, schema, problem)

  def unsupportedPayloadFormat(function: String, version: String, format: String, readerFormat: String) =
    undecodable("UNSUPPORTED_FORMAT", function, version, format, readerFormat)

  def corruptPayload(function: String, version: String, problem: String) =
    undecodable("CORRUPT_PAYLOAD", function, version, problem)

  def dynamoDbRecord(function: String, problem: String) = undecodable("DYNAMODB_RECORD", function, problem)

  def dynamoDbValue(function: String, path: String, value: String, `type`: String, problem: String) =
    undecodable("DYNAMODB_VALUE", function, path, value, `type`, problem)

  def unencodable(function: String, schema: String, problem: String) =
    state("KINESIS_PAYLOAD_UNENCODABLE", function, schema, problem)

  def functionArgument(function: String, problem: String) =
    argument("KINESIS_FUNCTION_INVALID_ARGUMENT", function, problem)

  // KINESIS_SINK_INVALID_SCHEMA: the columns of the DataFrame written.
  private def schema(sub: String, values: Any*) = argument(s"KINESIS_SINK_INVALID_SCHEMA.$sub", values: _*)
  def sinkKeyColumnNeeded(column: String, stream: String) = schema("KEY_COLUMN_NEEDED", column, stream)

  def sinkMissingColumn(column: String, allowed: String, columns: String) =
    schema("MISSING_COLUMN", column, allowed, columns)

  def sinkWrongType(column: String, `type`: String, allowed: String) =
    schema("WRONG_TYPE", column, `type`, allowed, if (allowed.contains("binary")) "BINARY" else "STRING")
  def sinkUnknownColumn(column: String) = schema("UNKNOWN_COLUMN", column)

  def sinkInvalidRow(row: Long, partition: Int, problem: String) =
    argument("KINESIS_SINK_INVALID_ROW", row, partition, problem)

  /** A row that Kinesis (through the KPL) did not take. */
  def sinkRecordFailed(row: Long, partition: Int, key: String, stream: String, producerError: String) =
    new KinesisRuntimeException("KINESIS_SINK_RECORD_FAILED", Seq(row, partition, key, stream, producerError))

  /** The KPL's native process could not start on this executor; `reason` is why, as the KPL said it. */
  def sinkProducerStartFailed(platform: String, tempDirectory: String, reason: String) =
    new KinesisRuntimeException("KINESIS_SINK_PRODUCER_START_FAILED", Seq(platform, tempDirectory, reason))

  /** A producer that stopped answering. */
  def sinkAckTimeout(pending: Long, sent: Long, partition: Int, timeoutMs: Long) =
    new KinesisRuntimeException("KINESIS_SINK_ACK_TIMEOUT", Seq(pending, sent, partition, timeoutMs))
}
