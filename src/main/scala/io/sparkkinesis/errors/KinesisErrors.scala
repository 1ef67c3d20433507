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
            throw new IllegalStateException(s"Error condition $name: no value for parameter <${m.group(1)}>")
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
      .getOrElse(throw new IllegalStateException(s"$ResourcePath is missing from the connector's jar"))
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

  /** The condition `name`, or its sub-condition `sub`. */
  def apply(name: String, sub: String = ""): ErrorCondition = {
    val key = if (sub.isEmpty) name else s"$name.$sub"
    all.getOrElse(
      key,
      throw new IllegalStateException(s"Unknown error condition $key (not in $ResourcePath)")
    )
  }
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
 * The errors the connector raises, one factory per condition (tests check that every condition in the JSON has one,
 * that the JSON lists every name used here, and that each call passes exactly the parameters of its template). Where
 * a condition has sub-conditions, `shape` names the one whose sentence fits; the call site passes the values.
 */
private[sparkkinesis] object KinesisErrors {

  /** A bad option value, a missing or unknown option, or options that do not go together. */
  def invalidOption(shape: String, values: (String, String)*): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(ErrorConditions("KINESIS_INVALID_OPTION", shape), values.toMap)

  /** An option, a value or a combination this build does not support (yet). */
  def unsupportedOption(shape: String, values: (String, String)*): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(ErrorConditions("KINESIS_UNSUPPORTED_OPTION", shape), values.toMap)

  /** As [[unsupportedOption]], where Spark's API asks for an `UnsupportedOperationException`. */
  def unsupportedOperation(shape: String, values: (String, String)*): KinesisUnsupportedOperationException =
    new KinesisUnsupportedOperationException(
      ErrorConditions("KINESIS_UNSUPPORTED_OPTION", shape),
      values.toMap
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
  def streamRecreated(values: (String, String)*): KinesisIllegalStateException =
    new KinesisIllegalStateException(ErrorConditions("KINESIS_STREAM_RECREATED"), values.toMap)

  /** Data loss that shows in the user's options: a per-shard position document naming expired shards. */
  def dataLossInOptions(values: (String, String)*): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(
      ErrorConditions("KINESIS_DATA_LOSS", "EXPIRED_SHARDS_IN_OPTIONS"),
      values.toMap
    )

  def metadataStoreFailed(shape: String, values: (String, String)*): KinesisIllegalStateException =
    new KinesisIllegalStateException(ErrorConditions("KINESIS_METADATA_STORE_FAILED", shape), values.toMap)

  def consumerNotActive(
      consumer: String,
      streamArn: String,
      timeoutSec: Long,
      lastState: String
  ): KinesisIllegalStateException = new KinesisIllegalStateException(
    ErrorConditions("KINESIS_CONSUMER_NOT_ACTIVE"),
    Map(
      "consumer" -> consumer,
      "streamArn" -> streamArn,
      "timeoutSec" -> timeoutSec.toString,
      "lastState" -> lastState
    )
  )

  /** A SubscribeToShard answer that says the consumer is missing or not ACTIVE (see SubscriptionErrors). */
  def consumerUnusable(consumerArn: String, problem: String, cause: Throwable): KinesisIllegalStateException =
    new KinesisIllegalStateException(
      ErrorConditions("KINESIS_CONSUMER_UNUSABLE"),
      Map("consumerArn" -> consumerArn, "problem" -> problem),
      cause
    )

  def sinkInvalidSchema(shape: String, values: (String, String)*): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(ErrorConditions("KINESIS_SINK_INVALID_SCHEMA", shape), values.toMap)

  def sinkInvalidRow(row: Long, partition: Int, problem: String): KinesisIllegalArgumentException =
    new KinesisIllegalArgumentException(
      ErrorConditions("KINESIS_SINK_INVALID_ROW"),
      Map("row" -> row.toString, "partition" -> partition.toString, "problem" -> problem)
    )

}
