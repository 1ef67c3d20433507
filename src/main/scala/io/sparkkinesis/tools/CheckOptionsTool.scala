package io.sparkkinesis.tools

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import io.sparkkinesis.KinesisSourceProvider
import io.sparkkinesis.config.OptionRuleViolation

/**
 * Checks option maps the way a query does (the source's or the sink's full option parsing) and says, for each,
 * whether it was accepted, or which rule or other check refused it. Lets the Python tests compare the builders'
 * checks with the jar's on the same inputs; it calls no AWS service.
 *
 * Standard input: `{"region": "...", "cases": [{"side": "source" | "sink", "options": {...}}, ...]}` (the region
 * stands in for the environment's default region). Standard output: `{"results": [{"accepted": bool, "rule": id or
 * null, "message": text or null}, ...]}`, in the order of the cases.
 */
object CheckOptionsTool {
  private val mapper = new ObjectMapper()

  def run(json: String): String = {
    val root = mapper.readTree(json)
    val region = Option(root.get("region")).filterNot(_.isNull).map(_.asText)
    val results = mapper.createObjectNode()
    val list = results.putArray("results")
    root.get("cases").elements().asScala.foreach { c =>
      val options = c.get("options").fields().asScala.map(e => e.getKey -> e.getValue.asText).toMap
      val outcome = list.addObject()
      try {
        c.get("side").asText match {
          case "source" => KinesisSourceProvider.parse(options, () => region)
          case "sink" => KinesisSourceProvider.parseSink(options, () => region)
          case other => throw new IllegalStateException(s"side '$other' is not source or sink")
        }
        outcome.put("accepted", true).putNull("rule").putNull("message")
      } catch {
        case e: OptionRuleViolation =>
          outcome.put("accepted", false).put("rule", e.ruleId).put("message", e.getMessage)
        case e: IllegalArgumentException =>
          outcome.put("accepted", false).putNull("rule").put("message", e.getMessage)
      }
    }
    mapper.writeValueAsString(results)
  }

  def main(args: Array[String]): Unit =
    try println(run(new String(System.in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)))
    catch {
      case NonFatal(e) =>
        System.err.println(s"error: ${e.getMessage}")
        System.exit(1)
    }
}
