package io.sparkkinesis.errors

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/**
 * One error condition of the connector: its stable name, its SQLSTATE and its message template. A condition whose
 * sentences have several shapes lists them as sub-conditions (`subClass`, as in Spark's files): each shape is an
 * [[ErrorCondition]] of the condition's name and SQLSTATE whose template is the shape's whole sentence.
 */
private[sparkkinesis] final case class ErrorCondition(name: String, sqlState: String, template: String) {

  /** The template with each `<parameter>` replaced; a parameter the template names must be given. */
  def render(parameters: Map[String, String]): String =
    ErrorCondition.Parameter.replaceAllIn(
      template,
      m =>
        scala.util.matching.Regex.quoteReplacement(
          parameters.getOrElse(
            m.group(1),
            throw KinesisErrors.internal(s"error condition $name: no value for parameter <${m.group(1)}>")
          )
        )
    )
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

/** The Scala side of [[KinesisConnectorException]]: the condition and its parameters give every answer. */
private[sparkkinesis] trait KinesisError extends KinesisConnectorException {
  def condition: ErrorCondition
  def parameters: Map[String, String]

  def getCondition: String = condition.name
  override def getSqlState: String = condition.sqlState
  override def getMessageParameters: java.util.Map[String, String] = parameters.asJava
  def getMessageTemplate: String = condition.template
}

/** A user's mistake in the options or the input (Spark and user code may catch `IllegalArgumentException`). */
private[sparkkinesis] class KinesisIllegalArgumentException(
    val condition: ErrorCondition,
    val parameters: Map[String, String],
    cause: Throwable = null
) extends IllegalArgumentException(condition.render(parameters), cause)
    with KinesisError

/** A state the connector cannot go on from: data lost, an attempt that lost a race, a stuck store. */
private[sparkkinesis] class KinesisIllegalStateException(
    val condition: ErrorCondition,
    val parameters: Map[String, String],
    cause: Throwable = null
) extends IllegalStateException(condition.render(parameters), cause)
    with KinesisError

/** Something this build does not do. */
private[sparkkinesis] class KinesisUnsupportedOperationException(
    val condition: ErrorCondition,
    val parameters: Map[String, String]
) extends UnsupportedOperationException(condition.render(parameters))
    with KinesisError

/** A failure of Kinesis or of the producer while writing. */
private[sparkkinesis] class KinesisRuntimeException(
    val condition: ErrorCondition,
    val parameters: Map[String, String],
    cause: Throwable = null
) extends RuntimeException(condition.render(parameters), cause)
    with KinesisError

/**
 * The errors the connector raises: one factory per condition or sub-condition, whose named parameters are its
 * template's (ErrorConditionsSuite calls each factory and checks that it fills exactly its template). The exception
 * classes that callers catch by type (DataLossException, LostToOtherAttempt, ProxyRefused, OptionRuleViolation)
 * take their parameters in their constructors the same way.
 */
private[sparkkinesis] object KinesisErrors {

  /** A state that only a bug in the connector leads to: not a condition, the user cannot act on it. */
  def internal(what: String): IllegalStateException =
    new IllegalStateException(
      s"Internal error of spark-kinesis (a bug in the connector, please report it): $what"
    )

  private[sparkkinesis] def parameters(values: Seq[(String, Any)]): Map[String, String] =
    values.map { case (k, v) => k -> String.valueOf(v) }.toMap

  private def argument(key: String, values: (String, Any)*) =
    new KinesisIllegalArgumentException(ErrorConditions(key), parameters(values))

  private def state(key: String, cause: Throwable, values: (String, Any)*) =
    new KinesisIllegalStateException(ErrorConditions(key), parameters(values), cause)

  private def runtime(key: String, values: (String, Any)*) =
    new KinesisRuntimeException(ErrorConditions(key), parameters(values))
  private def quoted(value: String) = s"'$value'"

  // KINESIS_INVALID_OPTION: a bad value, a missing or unknown option, options that do not go together.
  def expectedValue(option: String, value: String, allowed: String, secret: Boolean = false) = argument(
    "KINESIS_INVALID_OPTION.EXPECTED_VALUE",
    "option" -> option,
    "value" -> (if (secret) "<redacted>" else quoted(value)),
    "allowed" -> allowed
  )

  def badValue(option: String, value: String, problem: String) =
    argument(
      "KINESIS_INVALID_OPTION.BAD_VALUE",
      "option" -> option,
      "value" -> quoted(value),
      "problem" -> problem
    )

  def badValueNotShown(option: String, problem: String) =
    argument("KINESIS_INVALID_OPTION.BAD_VALUE_NOT_SHOWN", "option" -> option, "problem" -> problem)

  def unknownOption(option: String, suggestion: String) =
    argument("KINESIS_INVALID_OPTION.UNKNOWN_KEY", "option" -> option, "suggestion" -> suggestion)

  def optionOfOtherSide(option: String, side: String) =
    argument("KINESIS_INVALID_OPTION.OTHER_SIDE", "option" -> option, "side" -> side)

  def requiredOption(option: String, doc: String) =
    argument("KINESIS_INVALID_OPTION.REQUIRED", "option" -> option, "doc" -> doc)
  def noRegion() = argument("KINESIS_INVALID_OPTION.NO_REGION")

  def arnRegionsDiffer(option: String, regions: Seq[String]) =
    argument(
      "KINESIS_INVALID_OPTION.ARN_REGIONS_DIFFER",
      "option" -> option,
      "regions" -> regions.mkString(", ")
    )

  def arnRegionConflict(option: String, arnRegion: String, region: String) = argument(
    "KINESIS_INVALID_OPTION.ARN_REGION_CONFLICT",
    "option" -> option,
    "arnRegion" -> arnRegion,
    "region" -> region
  )
  def endingPositionInStream() = argument("KINESIS_INVALID_OPTION.ENDING_POSITION_IN_STREAM")

  def unknownShards(option: String, stream: String, shards: Seq[String], listed: Seq[String]) = argument(
    "KINESIS_INVALID_OPTION.UNKNOWN_SHARDS",
    "option" -> option,
    "stream" -> stream,
    "shards" -> shards.mkString(", "),
    "listed" -> listed.sorted.mkString(", ")
  )

  def tableKeySchema(option: String, table: String, keySchema: String, needed: String) = argument(
    "KINESIS_INVALID_OPTION.TABLE_KEY_SCHEMA",
    "option" -> option,
    "table" -> table,
    "keySchema" -> keySchema,
    "needed" -> needed
  )

  def classNotFound(option: String, className: String) =
    argument("KINESIS_INVALID_OPTION.CLASS_NOT_FOUND", "option" -> option, "className" -> className)

  def classNotLoaded(option: String, className: String, missing: String) = argument(
    "KINESIS_INVALID_OPTION.CLASS_NOT_LOADED",
    "option" -> option,
    "className" -> className,
    "missing" -> missing
  )

  def classNotProvider(option: String, className: String, interface: String) = argument(
    "KINESIS_INVALID_OPTION.CLASS_NOT_PROVIDER",
    "option" -> option,
    "className" -> className,
    "interface" -> interface
  )

  def noConstructor(option: String, className: String) =
    argument("KINESIS_INVALID_OPTION.NO_CONSTRUCTOR", "option" -> option, "className" -> className)

  def noStringConstructor(option: String, className: String) =
    argument("KINESIS_INVALID_OPTION.NO_STRING_CONSTRUCTOR", "option" -> option, "className" -> className)

  def constructorFailed(option: String, className: String, error: String) = argument(
    "KINESIS_INVALID_OPTION.CONSTRUCTOR_FAILED",
    "option" -> option,
    "className" -> className,
    "error" -> error
  )

  def providerReturnedNull(option: String, className: String) =
    state("KINESIS_INVALID_OPTION.PROVIDER_RETURNED_NULL", null, "option" -> option, "className" -> className)

  def badSystemProperty(property: String, value: String, allowed: String) = argument(
    "KINESIS_INVALID_OPTION.BAD_SYSTEM_PROPERTY",
    "property" -> property,
    "value" -> quoted(value),
    "allowed" -> allowed
  )

  // KINESIS_UNSUPPORTED_OPTION: an option, a value or a combination this build does not support (yet).
  def optionNotYetSupported(option: String, why: String) =
    argument("KINESIS_UNSUPPORTED_OPTION.OPTION_NOT_YET", "option" -> option, "why" -> why)

  def valueNotYetSupported(option: String, value: String, why: String) =
    argument("KINESIS_UNSUPPORTED_OPTION.VALUE_NOT_YET", "option" -> option, "value" -> value, "why" -> why)

  def s3aWithoutConditionalWrites(path: String, hadoopVersion: String) = argument(
    "KINESIS_UNSUPPORTED_OPTION.S3A_WITHOUT_CONDITIONAL_WRITES",
    "path" -> path,
    "hadoopVersion" -> hadoopVersion
  )

  def crossAccountSink(arn: String, account: String, found: String) = argument(
    "KINESIS_UNSUPPORTED_OPTION.CROSS_ACCOUNT_SINK",
    "arn" -> arn,
    "account" -> account,
    "found" -> found
  )

  /** Spark's API asks for an `UnsupportedOperationException` here. */
  def batchReadFanOut() = new KinesisUnsupportedOperationException(
    ErrorConditions("KINESIS_UNSUPPORTED_OPTION.BATCH_READ_FAN_OUT"),
    Map.empty
  )

  def streamNotFound(stream: String, region: String, endpoint: String, operation: String, cause: Throwable) =
    new KinesisIllegalArgumentException(
      ErrorConditions("KINESIS_STREAM_NOT_FOUND"),
      parameters(
        Seq("stream" -> stream, "region" -> region, "endpoint" -> endpoint, "operation" -> operation)
      ),
      cause
    )

  /**
   * A stream deleted and re-created under the name a checkpoint or a positions document was written for (its
   * creation time, or its ARN, differs), with `kinesis.failOnDataLoss=true`.
   */
  def streamRecreated(stream: String, recordedIn: String, recorded: String, current: String, fixes: String) =
    state(
      "KINESIS_STREAM_RECREATED",
      null,
      "stream" -> stream,
      "recordedIn" -> recordedIn,
      "recorded" -> recorded,
      "current" -> current,
      "fixes" -> fixes
    )

  /** Data loss that shows in the user's options: a per-shard position document naming expired shards. */
  def expiredShardsInOptions(option: String, stream: String, shards: Seq[String]) = argument(
    "KINESIS_DATA_LOSS.EXPIRED_SHARDS_IN_OPTIONS",
    "option" -> option,
    "stream" -> stream,
    "shards" -> shards.mkString(", ")
  )

  /** A replay of a recorded batch cannot reach the end the batch recorded: its records left the shard. */
  def recordedBatchLost(read: String, recordedEnd: String, found: String) = state(
    "KINESIS_DATA_LOSS.RECORDED_BATCH_LOST",
    null,
    "read" -> read,
    "recordedEnd" -> recordedEnd,
    "found" -> found
  )

  // KINESIS_CHECKPOINT_INVALID: the query's offsets or the ends in its metadata store cannot be used.
  def checkpointUnreadable(problem: String, cause: Throwable = null) = new KinesisIllegalArgumentException(
    ErrorConditions("KINESIS_CHECKPOINT_INVALID.UNREADABLE"),
    Map("problem" -> problem),
    cause
  )

  def checkpointNewerFormat(what: String, version: Int, newest: Int) = state(
    "KINESIS_CHECKPOINT_INVALID.NEWER_FORMAT",
    null,
    "what" -> what,
    "version" -> version,
    "newest" -> newest
  )

  def recordedEndMissing(shard: String, batch: Long, reader: String) = state(
    "KINESIS_CHECKPOINT_INVALID.END_MISSING",
    null,
    "shard" -> shard,
    "batch" -> batch,
    "reader" -> reader
  )

  // KINESIS_SHARD_READ_FAILED: Kinesis did not let a read reach the end its batch needs.
  def readThrottled(read: String, times: Int) =
    state("KINESIS_SHARD_READ_FAILED.THROTTLED", null, "read" -> read, "times" -> times)

  def pinnedEndExpired(shard: String, stream: String, cause: Throwable) =
    state("KINESIS_SHARD_READ_FAILED.PINNED_END_EXPIRED", cause, "shard" -> shard, "stream" -> stream)

  def realTimeTasksLate(batch: Long, shards: Int, late: Seq[String]) = state(
    "KINESIS_REAL_TIME_TASKS_LATE",
    null,
    "batch" -> batch,
    "shards" -> shards,
    "late" -> late.sorted.mkString(", ")
  )

  def metadataDeletesUnprocessed(table: String, pending: Int, calls: Int) = state(
    "KINESIS_METADATA_STORE_FAILED.DELETES_UNPROCESSED",
    null,
    "table" -> table,
    "pending" -> pending,
    "calls" -> calls
  )

  def metadataTableNotActive(table: String, timeoutSec: Long, status: String) = state(
    "KINESIS_METADATA_STORE_FAILED.TABLE_NOT_ACTIVE",
    null,
    "table" -> table,
    "timeoutSec" -> timeoutSec,
    "status" -> status
  )

  def consumerNotActive(consumer: String, streamArn: String, timeoutSec: Long, lastState: String) = state(
    "KINESIS_CONSUMER_NOT_ACTIVE",
    null,
    "consumer" -> consumer,
    "streamArn" -> streamArn,
    "timeoutSec" -> timeoutSec,
    "lastState" -> lastState
  )

  /** A SubscribeToShard answer that says the consumer is missing or not ACTIVE (see SubscriptionErrors). */
  def consumerUnusable(consumerArn: String, problem: String, cause: Throwable) =
    state("KINESIS_CONSUMER_UNUSABLE", cause, "consumerArn" -> consumerArn, "problem" -> problem)

  // KINESIS_SINK_INVALID_SCHEMA: the columns of the DataFrame written.
  def sinkKeyColumnNeeded(column: String, stream: String) =
    argument("KINESIS_SINK_INVALID_SCHEMA.KEY_COLUMN_NEEDED", "column" -> column, "stream" -> stream)

  def sinkMissingColumn(column: String, allowed: String, columns: String) = argument(
    "KINESIS_SINK_INVALID_SCHEMA.MISSING_COLUMN",
    "column" -> column,
    "allowed" -> allowed,
    "columns" -> columns
  )

  def sinkWrongType(column: String, dataType: String, allowed: String) = argument(
    "KINESIS_SINK_INVALID_SCHEMA.WRONG_TYPE",
    "column" -> column,
    "type" -> dataType,
    "allowed" -> allowed,
    "castTo" -> (if (allowed.contains("binary")) "BINARY" else "STRING")
  )

  def sinkUnknownColumn(column: String) =
    argument("KINESIS_SINK_INVALID_SCHEMA.UNKNOWN_COLUMN", "column" -> column)

  def sinkInvalidRow(row: Long, partition: Int, problem: String) =
    argument("KINESIS_SINK_INVALID_ROW", "row" -> row, "partition" -> partition, "problem" -> problem)

  /** A row that Kinesis (through the KPL) did not take. */
  def sinkRecordFailed(row: Long, partition: Int, key: String, stream: String, producerError: String) =
    runtime(
      "KINESIS_SINK_RECORD_FAILED",
      "row" -> row,
      "partition" -> partition,
      "key" -> key,
      "stream" -> stream,
      "producerError" -> producerError
    )

  /** A producer that stopped answering. */
  def sinkAckTimeout(pending: Long, sent: Long, partition: Int, timeoutMs: Long) = runtime(
    "KINESIS_SINK_ACK_TIMEOUT",
    "pending" -> pending,
    "sent" -> sent,
    "partition" -> partition,
    "timeoutMs" -> timeoutMs
  )
}
