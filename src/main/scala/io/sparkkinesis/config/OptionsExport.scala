package io.sparkkinesis.config

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.{ArrayNode, JsonNodeFactory, ObjectNode}
import io.sparkkinesis.config.OptionSpec.{Bounds, Matching}

/**
 * The option table as JSON, built into the jar at [[OptionsExport.ResourcePath]] by the Maven build (see pom.xml,
 * `exec-maven-plugin`). The Python package reads it from the jar: its option reference (`spark-kinesis options`,
 * docs/options.md) and the test that keeps the Python builders in step with this table both come from it.
 *
 * Layout (`formatVersion` 2): `{"formatVersion": 2, "prefix": "kinesis.", "options": [ ... ], "rules": [ ... ]}`.
 * Each option has `key` (without the prefix), `type` (string, boolean, integer, decimal, duration or choice),
 * `choices`, `default` (Spark's string form, or null when the default is derived or the option is required),
 * `defaultText`, `required`, `scope` (source, sink or both), `min`, `max`, `secret`, `notYetSupported` (a reason, or
 * null), `doc`, and since version 2 `pattern` (a regular expression the whole string value must match, or null) with
 * `patternText` (it in words, or null), and `compatibility`: for an option accepted only so that awslabs jobs run
 * unchanged, and ignored, what the connector does instead (null otherwise; readers treat a missing field as null).
 *
 * Version 2 adds `rules`, the [[OptionRules]] in order: `id`, `scope`, `when`, `require` (conditions) and `message`
 * (with `{kinesis.<key>}` for an option's value). A condition is one of `{"set": key}`, `{"equals": [key, value]}`,
 * `{"matches": [key, regex]}`, `{"not": condition}`, `{"all": [conditions]}` and `{"any": [conditions]}`, keys
 * without the prefix; [[OptionRules]] says what they mean. Version 1 had the same option fields without `pattern`.
 */
object OptionsExport {
  val ResourcePath = "META-INF/spark-kinesis/options.json"
  val FormatVersion = 2

  private val nodes = JsonNodeFactory.instance

  private def typeName(t: OptionType[_]): String = t match {
    case OptionType.Str => "string"
    case OptionType.Bool => "boolean"
    case OptionType.Integer => "integer"
    case OptionType.Decimal => "decimal"
    case OptionType.Duration => "duration"
    case OptionType.OneOf(_) => "choice"
  }

  private def scopeName(scope: OptionScope): String = scope match {
    case OptionScope.Source => "source"
    case OptionScope.Sink => "sink"
    case OptionScope.Both => "both"
  }

  private def option(o: OptionSpec[_]): ObjectNode = {
    val node = nodes.objectNode()
    node.put("key", o.key)
    node.put("type", typeName(o.optionType))
    val choices: ArrayNode = node.putArray("choices")
    o.optionType match {
      case OptionType.OneOf(names) => names.foreach(choices.add)
      case _ =>
    }
    o.default match {
      case OptionDefault.Fixed(_) => node.put("default", o.defaultText)
      case _ => node.putNull("default")
    }
    node.put("defaultText", o.defaultText)
    node.put("required", o.default == OptionDefault.Required)
    node.put("scope", scopeName(o.scope))
    o.check match {
      case Bounds(min, max) =>
        node.put("min", min)
        max.fold(node.putNull("max"))(m => node.put("max", m))
      case _ =>
        node.putNull("min")
        node.putNull("max")
    }
    node.put("secret", o.secret)
    o.notYetSupported.fold(node.putNull("notYetSupported"))(r => node.put("notYetSupported", r))
    o.compatibility.fold(node.putNull("compatibility"))(r => node.put("compatibility", r))
    node.put("doc", o.doc)
    o.check match {
      case Matching(regex, allowed) =>
        node.put("pattern", regex)
        node.put("patternText", allowed)
      case _ =>
        node.putNull("pattern")
        node.putNull("patternText")
    }
    node
  }

  private def condition(c: Condition): ObjectNode = {
    val node = nodes.objectNode()
    c match {
      case Condition.IsSet(o) => node.put("set", o.key)
      case Condition.Equals(o, v) => node.putArray("equals").add(o.key).add(v)
      case Condition.Matches(o, regex) => node.putArray("matches").add(o.key).add(regex)
      case Condition.Not(inner) => node.set[ObjectNode]("not", condition(inner))
      case Condition.All(cs) => cs.foldLeft(node.putArray("all"))((array, c) => array.add(condition(c)))
      case Condition.AnyOf(cs) => cs.foldLeft(node.putArray("any"))((array, c) => array.add(condition(c)))
    }
    node
  }

  private def rule(r: OptionRule): ObjectNode = {
    val node = nodes.objectNode()
    node.put("id", r.id)
    node.put("scope", scopeName(r.scope))
    node.set[ObjectNode]("when", condition(r.when))
    node.set[ObjectNode]("require", condition(r.require))
    node.put("message", r.message)
    node
  }

  def json: String = {
    val root = nodes.objectNode()
    root.put("formatVersion", FormatVersion)
    root.put("prefix", OptionSpec.Prefix)
    val options = root.putArray("options")
    KinesisOptions.all.foreach(o => options.add(option(o)))
    val rules = root.putArray("rules")
    OptionRules.all.foreach(r => rules.add(rule(r)))
    new ObjectMapper().writerWithDefaultPrettyPrinter().writeValueAsString(root) + "\n"
  }

  /** Writes the JSON under the given classes directory (the build's `target/classes`). */
  def main(args: Array[String]): Unit = {
    require(args.length == 1, "usage: OptionsExport <classes directory>")
    val target = Paths.get(args(0)).resolve(ResourcePath)
    Files.createDirectories(target.getParent)
    Files.write(target, json.getBytes(UTF_8))
  }
}
