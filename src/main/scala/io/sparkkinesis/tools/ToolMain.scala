package io.sparkkinesis.tools

import java.nio.charset.StandardCharsets.UTF_8

import scala.util.control.NonFatal

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
