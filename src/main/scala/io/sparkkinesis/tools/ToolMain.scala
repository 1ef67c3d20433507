package io.sparkkinesis.tools

import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import io.sparkkinesis.errors.KinesisError

/** What a command of the `spark-kinesis` CLI answers: the JSON it prints, and lines for standard error first. */
private[tools] final case class ToolAnswer(json: String, messages: Seq[String] = Nil)

/**
 * The JVM side of a CLI command: reads the request (JSON) from standard input, prints the answer's messages to
 * standard error and its JSON to standard output; on a failure, prints `error: <what went wrong>` on one line and
 * exits with 1. For an error of the tools' conditions that is its problem alone: the CLI names the command.
 */
private[tools] object ToolMain {

  private val ToolConditions = Set("KINESIS_TOOL_REQUEST_INVALID", "KINESIS_TOOL_FAILED")

  val mapper = new ObjectMapper()

  /** The field `name` of a request as text; None when absent or null. */
  def text(root: JsonNode, name: String): Option[String] =
    Option(root.get(name)).filterNot(_.isNull).map(_.asText)

  /** An object of a request (`options`) as a map of its fields' texts; empty when absent. */
  def textMap(node: JsonNode): Map[String, String] =
    Option(node).toSeq
      .flatMap(_.properties().iterator().asScala.map(e => e.getKey -> e.getValue.asText))
      .toMap

  def serve(answer: String => ToolAnswer): Unit = {
    val outcome =
      try Right(answer(new String(System.in.readAllBytes(), UTF_8)))
      catch { case NonFatal(e) => Left(problem(e)) }
    outcome match {
      case Right(ToolAnswer(json, messages)) =>
        messages.foreach(m => System.err.println(m))
        println(json)
      case Left(message) =>
        System.err.println(s"error: ${message.replace('\n', ' ')}")
        System.exit(1)
    }
  }

  private def problem(e: Throwable): String = e match {
    case k: KinesisError if ToolConditions(k.condition.name) => k.parameters("problem")
    case _ => Option(e.getMessage).getOrElse(e.getClass.getSimpleName)
  }
}
