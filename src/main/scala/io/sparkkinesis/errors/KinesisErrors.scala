package io.sparkkinesis.errors

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper

/** One error condition of the connector: its stable name, its SQLSTATE and its message template. */
final case class ErrorCondition(name: String, sqlState: String, template: String) {

  /** The template with each `<parameter>` replaced; a parameter the template names must be given. */
  def render(parameters: Map[String, String]): String =
    ErrorCondition.Parameter.replaceAllIn(
      template,
      m =>
        scala.util.matching.Regex.quoteReplacement(
          parameters.getOrElse(
            m.group(1),
            throw new IllegalStateException(s"Error condition $name: no value for parameter <${m.group(1)}>")
          )
        )
    )
}

object ErrorCondition {
  private[errors] val Parameter = "<([a-zA-Z0-9_]+)>".r

  /** Five characters of digits and capital letters, as SQL and Spark write SQLSTATEs. */
  val SqlStatePattern = "[0-9A-Z]{5}".r
}

/**
 * The connector's error conditions, read from [[ErrorConditions.ResourcePath]] in the jar (the same layout as
 * Spark's own error-conditions files: each name maps to `message`, a list of lines, and `sqlState`).
 */
object ErrorConditions {
  val ResourcePath = "META-INF/spark-kinesis/error-conditions.json"

  lazy val all: Map[String, ErrorCondition] = {
    val stream = Option(getClass.getClassLoader.getResourceAsStream(ResourcePath))
      .getOrElse(throw new IllegalStateException(s"$ResourcePath is missing from the connector's jar"))
    val root =
      try new ObjectMapper().readTree(stream)
      finally stream.close()
    root
      .fields()
      .asScala
      .map { entry =>
        val node = entry.getValue
        val template = node.get("message").elements().asScala.map(_.asText()).mkString("\n")
        entry.getKey -> ErrorCondition(entry.getKey, node.get("sqlState").asText(), template)
      }
      .toMap
  }

  def apply(name: String): ErrorCondition =
    all.getOrElse(
      name,
      throw new IllegalStateException(s"Unknown error condition $name (not in $ResourcePath)")
    )
}

/** The Scala side of [[KinesisConnectorException]]: the condition and its parameters give every answer. */
trait KinesisError extends KinesisConnectorException {
  def condition: ErrorCondition
  def parameters: Map[String, String]

  def getCondition: String = condition.name
  override def getSqlState: String = condition.sqlState
  override def getMessageParameters: java.util.Map[String, String] = parameters.asJava
  def getMessageTemplate: String = condition.template
}

/** A user's mistake in the options or the input (Spark and user code may catch `IllegalArgumentException`). */
class KinesisIllegalArgumentException(
    val condition: ErrorCondition,
    val parameters: Map[String, String],
    cause: Throwable = null
) extends IllegalArgumentException(condition.render(parameters), cause)
    with KinesisError

/** A state the connector cannot go on from: data lost, an attempt that lost a race, a stuck store. */
class KinesisIllegalStateException(
    val condition: ErrorCondition,
    val parameters: Map[String, String],
    cause: Throwable = null
) extends IllegalStateException(condition.render(parameters), cause)
    with KinesisError

/** Something this build does not do. */
class KinesisUnsupportedOperationException(
    val condition: ErrorCondition,
    val parameters: Map[String, String]
) extends UnsupportedOperationException(condition.render(parameters))
    with KinesisError

/** A failure of Kinesis or of the producer while writing. */
class KinesisRuntimeException(
    val condition: ErrorCondition,
    val parameters: Map[String, String],
    cause: Throwable = null
) extends RuntimeException(condition.render(parameters), cause)
    with KinesisError

/**
 * The errors the connector raises, one factory per condition (tests check that every condition in the JSON has
 * one and that the JSON lists every name used here). The texts are built at the error sites and passed as `reason`
 * where a condition covers sentences of many shapes.
 */
object KinesisErrors {

  /** A bad option value, a missing or unknown option, or options that do not go together. */
  def invalidOption(reason: String): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(ErrorConditions("KINESIS_INVALID_OPTION"), Map("reason" -> reason))

  /** An option, a value or a combination this build does not support (yet). */
  def unsupportedOption(reason: String): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(
      ErrorConditions("KINESIS_UNSUPPORTED_OPTION"),
      Map("reason" -> reason)
    )

  /** As [[unsupportedOption]], where Spark's API asks for an `UnsupportedOperationException`. */
  def unsupportedOperation(reason: String): KinesisUnsupportedOperationException =
    new KinesisUnsupportedOperationException(
      ErrorConditions("KINESIS_UNSUPPORTED_OPTION"),
      Map("reason" -> reason)
    )

  def streamNotFound(
      stream: String,
      region: String,
      endpoint: String,
      operation: String,
      cause: Throwable
  ): KinesisIllegalArgumentException = new KinesisIllegalArgumentException(
    ErrorConditions("KINESIS_STREAM_NOT_FOUND"),
    Map("stream" -> stream, "region" -> region, "endpoint" -> endpoint, "operation" -> operation),
    cause
  )

  /**
   * A stream deleted and re-created under the name a checkpoint or a positions document was written for (its
   * creation time, or its ARN, differs), with `kinesis.failOnDataLoss=true`.
   */
  def streamRecreated(reason: String): KinesisIllegalStateException =
    new KinesisIllegalStateException(ErrorConditions("KINESIS_STREAM_RECREATED"), Map("reason" -> reason))

  /** Data loss that shows in the user's options: a per-shard position document naming expired shards. */
  def dataLossInOptions(reason: String): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(ErrorConditions("KINESIS_DATA_LOSS"), Map("reason" -> reason))

  def metadataStoreFailed(reason: String): KinesisIllegalStateException =
    new KinesisIllegalStateException(
      ErrorConditions("KINESIS_METADATA_STORE_FAILED"),
      Map("reason" -> reason)
    )

  def consumerNotActive(reason: String): KinesisIllegalStateException =
    new KinesisIllegalStateException(ErrorConditions("KINESIS_CONSUMER_NOT_ACTIVE"), Map("reason" -> reason))

  def sinkInvalidSchema(reason: String): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(
      ErrorConditions("KINESIS_SINK_INVALID_SCHEMA"),
      Map("reason" -> reason)
    )

  def sinkInvalidRow(row: Long, partition: Int, reason: String): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(
      ErrorConditions("KINESIS_SINK_INVALID_ROW"),
      Map("row" -> row.toString, "partition" -> partition.toString, "reason" -> reason)
    )

}
