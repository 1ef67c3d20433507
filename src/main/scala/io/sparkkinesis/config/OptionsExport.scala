package io.sparkkinesis.config

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.util.Locale

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.{JsonNodeFactory, ObjectNode}
import io.sparkkinesis.config.OptionSpec.{Bounds, DecimalBounds, Matching}

/**
 * The option table as JSON, built into the jar at [[OptionsExport.ResourcePath]] by the Maven build (see pom.xml,
 * `exec-maven-plugin`). The Python package reads it from the jar: its option reference (`spark-kinesis options`,
 * docs/options.md), the builders' checks, and the test that keeps those checks equal to this table's.
 *
 * Layout (`formatVersion` 5): `{"formatVersion": 5, "prefix": "kinesis.", "options": [...], "rules": [...],
 * "positions": {...}}`.
 *
 * Each option has `key` (without the prefix), `type` (string, boolean, integer, decimal, duration or
 * choice), `unit` (for a duration: what a bare number counts, `ms` or `s`; else null), `choices`, `default` (Spark's
 * string form, or null when the default is derived or the option is required), `defaultText`, `required`, `scope`
 * (source, sink or both), `secret`, `notYetSupported` (a reason, or null), `compatibility` (for an option accepted
 * only so that awslabs jobs run unchanged, and ignored: what the connector does instead, or null) and `doc`, then its
 * check as data, each field null when it does not apply: `min` and `max` (inclusive bounds; milliseconds for a
 * duration), `above` (an exclusive lower bound), `boundsText` (the bounds in words, as errors say them), `pattern` (a
 * regular expression the whole string value must match) with `patternText` (it in words) and `patternListOf` (when
 * set, the value is a comma-separated list, each trimmed element matches `pattern` and none is listed twice; this
 * names one element in words).
 *
 * `rules` lists the [[OptionRules]] in order: `id`, `scope`, `when`, `require` (conditions) and `message` (with
 * `{kinesis.<key>}` for an option's value). A condition is one of `{"set": key}`, `{"equals": [key, value]}`,
 * `{"matches": [key, regex]}`, `{"not": condition}`, `{"all": [conditions]}` and `{"any": [conditions]}`, keys
 * without the prefix; [[OptionRules]] says what they mean.
 *
 * `positions` is the grammar of `kinesis.startingPosition` and `kinesis.endingPosition`: `start` and `end` (each with
 * its `option` key, `names`: single-position name to canonical name, matched in upper case, `placeTypes`: the types
 * a per-shard document may give, and `allowed`: every form in words), `atTimestamp` (the keyword before an ISO-8601
 * instant), `shardIdPattern` with `shardIdText`, `sequenceNumberPattern`, and `identityFields` (`arn` and `created`:
 * the keys of a stream's object that name the stream, not a shard). [[ShardPositions]] says what a document means.
 */
object OptionsExport {
  val ResourcePath = "META-INF/spark-kinesis/options.json"
  val FormatVersion = 5

  private val nodes = JsonNodeFactory.instance

  private def scopeName(scope: OptionScope): String = scope.toString.toLowerCase(Locale.ROOT)

  private def option(o: OptionSpec[_]): ObjectNode = {
    val node = nodes.objectNode().put("key", o.key)
    node.put("type", if (o.optionType.isInstanceOf[OptionType.OneOf[_]]) "choice" else o.optionType.describe)
    node.put("unit", Some(o.optionType).collect { case d: OptionType.Duration => d.bareUnit }.orNull)
    val choices = node.putArray("choices")
    Some(o.optionType).collect { case c: OptionType.OneOf[_] => c.names.foreach(choices.add) }
    node.put("default", o.fixedDefault.map(_ => o.defaultText).orNull).put("defaultText", o.defaultText)
    node.put("required", o.default == OptionDefault.Required).put("scope", scopeName(o.scope))
    node.put("secret", o.secret).put("notYetSupported", o.notYetSupported.orNull)
    node.put("compatibility", o.compatibility.orNull).put("doc", o.doc)
    val (min, above, max, text) = o.check match {
      case b @ Bounds(low, high, _) => (Some(BigDecimal(low)), None, high.map(BigDecimal(_)), b.text)
      case d @ DecimalBounds(low, high) => (None, Some(BigDecimal(low)), Some(BigDecimal(high)), d.text)
      case _ => (None, None, None, null)
    }
    Seq("min" -> min, "above" -> above, "max" -> max).foreach { case (field, bound) =>
      node.put(field, bound.map(_.bigDecimal).orNull)
    }
    node.put("boundsText", text)
    val pattern = Some(o.check).collect { case m: Matching => m }
    node.put("pattern", pattern.map(_.regex).orNull).put("patternText", pattern.map(_.allowed).orNull)
    node.put("patternListOf", pattern.flatMap(_.listOf).orNull)
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
    val node = nodes.objectNode().put("id", r.id).put("scope", scopeName(r.scope))
    node.set[ObjectNode]("when", condition(r.when))
    node.set[ObjectNode]("require", condition(r.require))
    node.put("message", r.message)
  }

  private def grammar[T](
      node: ObjectNode,
      option: OptionSpec[_],
      names: Seq[(String, T)],
      types: Seq[String],
      allowed: String
  ): Unit = {
    node.put("option", option.key)
    val named = node.putObject("names")
    names.foreach { case (name, position) => named.put(name, names.find(_._2 == position).get._1) }
    types.foldLeft(node.putArray("placeTypes"))(_.add(_))
    node.put("allowed", allowed)
  }

  private def positions: ObjectNode = {
    import KinesisOptions.{EndingPosition, StartingPosition}
    val node = nodes.objectNode()
    val (start, end) = (StartingPositionSpec, EndingPositionSpec)
    grammar(node.putObject("start"), StartingPosition, start.Names, ShardPositions.StartTypes, start.allowed)
    grammar(node.putObject("end"), EndingPosition, end.Names, ShardPositions.EndTypes, end.allowed)
    node.put("atTimestamp", PositionText.AtTimestamp).put("shardIdPattern", ShardPositions.ShardIdPattern)
    node.put("shardIdText", ShardPositions.ShardIdText)
    node.put("sequenceNumberPattern", ShardPositions.SequenceNumberPattern)
    node
      .putObject("identityFields")
      .put("arn", StreamIdentity.ArnField)
      .put("created", StreamIdentity.CreatedField)
    node
  }

  def json: String = {
    val root = nodes.objectNode().put("formatVersion", FormatVersion).put("prefix", OptionSpec.Prefix)
    KinesisOptions.all.foldLeft(root.putArray("options"))((options, o) => options.add(option(o)))
    OptionRules.all.foldLeft(root.putArray("rules"))((rules, r) => rules.add(rule(r)))
    root.set[ObjectNode]("positions", positions)
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
