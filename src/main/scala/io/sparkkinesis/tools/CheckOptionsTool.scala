package io.sparkkinesis.tools

import scala.jdk.CollectionConverters._

import io.sparkkinesis.KinesisSourceProvider
import io.sparkkinesis.config.{AwsClientConfig, KinesisOptions, OptionRuleViolation}
import io.sparkkinesis.errors.KinesisErrors

/**
 * `spark-kinesis check-options`: checks option maps the way a query's definition does (the source's or the sink's
 * full option parsing, a custom credentials class loaded) and says, for each, whether it was accepted, or which rule
 * or other check refused it. It calls no AWS service. Standard input: `{"region": "...", "cases": [{"side": "source" | "sink", "options": {...}}, ...]}`. The region
 * stands in for the environment's default region; null means none, and without the field the AWS SDK's default
 * region chain is asked, as a query does. Standard output: `{"results": [{"accepted": bool, "rule": id or null,
 * "message": text or null}, ...]}`, in the order of the cases; an accepted result also has `"warnings": [text, ...]`
 * when compatibility-only options were given (accepted and ignored): each names one and what the connector does instead. Messages never contain a secret option's value.
 */
object CheckOptionsTool {
  import ToolMain.{mapper, text, textMap}

  def run(json: String): String = {
    val root = mapper.readTree(json)
    val region = text(root, "region")
    val defaultRegion = if (root.has("region")) () => region else AwsClientConfig.environmentRegion
    val results = mapper.createObjectNode()
    val list = results.putArray("results")
    root.get("cases").elements().asScala.foreach { c =>
      val options = textMap(c.get("options"))
      val outcome = list.addObject()
      try {
        c.get("side").asText match {
          case "source" => KinesisSourceProvider.parse(options, defaultRegion)
          case "sink" => KinesisSourceProvider.parseSink(options, defaultRegion)
          case other => throw KinesisErrors.internal(s"side '$other' is not source or sink")
        }
        outcome.put("accepted", true).putNull("rule").putNull("message")
        val warnings = KinesisOptions.compatibilityWarnings(options.keys)
        if (warnings.nonEmpty) warnings.foldLeft(outcome.putArray("warnings"))(_.add(_))
      } catch {
        case e: OptionRuleViolation =>
          outcome.put("accepted", false).put("rule", e.ruleId).put("message", e.getMessage)
        case e: IllegalArgumentException =>
          outcome.put("accepted", false).putNull("rule").put("message", e.getMessage)
      }
    }
    mapper.writeValueAsString(results)
  }

  def main(args: Array[String]): Unit = ToolMain.serve(request => ToolAnswer(run(request)))
}
