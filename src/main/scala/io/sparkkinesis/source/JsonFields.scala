package io.sparkkinesis.source

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{ArrayNode, JsonNodeFactory, ObjectNode}
import io.sparkkinesis.client.HashKeyRange
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.reader.ShardPosition

/** The JSON pieces [[OffsetJson]] and [[RecordedEndJson]] share. */
private[source] object JsonFields {
  val mapper = new ObjectMapper()
  val nodes = JsonNodeFactory.instance

  def identityNode(identity: StreamIdentity): ObjectNode = identity.writeTo(nodes.objectNode())

  def identity(node: JsonNode): StreamIdentity = {
    if (!node.isObject)
      throw KinesisErrors.checkpointUnreadable(s"Expected an object for a stream identity, not $node")
    val arn = optional(node, StreamIdentity.ArnField).map(_ => text(node, StreamIdentity.ArnField))
    val created = optional(node, StreamIdentity.CreatedField).map { _ =>
      val t = text(node, StreamIdentity.CreatedField)
      StreamIdentity
        .parseInstant(t)
        .getOrElse(throw KinesisErrors.checkpointUnreadable(s"'$t' is not an ISO-8601 instant in $node"))
    }
    StreamIdentity(arn, created)
  }

  def optional(node: JsonNode, name: String): Option[JsonNode] = Option(node.get(name)).filterNot(_.isNull)

  def parse(json: String, what: String, newest: Int): JsonNode = {
    val root =
      try mapper.readTree(json)
      catch {
        case e: Exception =>
          throw KinesisErrors.checkpointUnreadable(s"Cannot parse the Kinesis $what '$json': $e", e)
      }
    val version = root.path("version").asInt(-1)
    if (version > newest) throw KinesisErrors.checkpointNewerFormat(what, version, newest)
    if (version < 1)
      throw KinesisErrors.checkpointUnreadable(s"The Kinesis $what has no valid version: $json")
    root
  }

  def fields(node: JsonNode): Seq[(String, JsonNode)] =
    node.properties().iterator().asScala.map(e => e.getKey -> e.getValue).toList

  // Strict accessors: a missing field or one of the wrong type fails, naming the field, instead of defaulting.
  def field(node: JsonNode, name: String, what: String)(ok: JsonNode => Boolean): JsonNode = {
    val value = node.get(name)
    if (value == null || value.isNull) throw KinesisErrors.checkpointUnreadable(s"Missing '$name' in $node")
    if (!ok(value)) throw KinesisErrors.checkpointUnreadable(s"Expected $what for '$name' in $node")
    value
  }

  def text(node: JsonNode, name: String): String = field(node, name, "a string")(_.isTextual).asText()

  def long(node: JsonNode, name: String): Long =
    field(node, name, "a whole number")(v => v.isIntegralNumber && v.canConvertToLong).asLong()

  def int(node: JsonNode, name: String): Int =
    field(node, name, "a whole number")(v => v.isIntegralNumber && v.canConvertToInt).asInt()

  def bool(node: JsonNode, name: String): Boolean =
    field(node, name, "true or false")(_.isBoolean).asBoolean()

  def obj(node: JsonNode, name: String): JsonNode = field(node, name, "an object")(_.isObject)

  def array(node: JsonNode, name: String): Seq[JsonNode] =
    field(node, name, "an array")(_.isArray).elements().asScala.toList

  def strings(node: JsonNode, name: String): Seq[String] = {
    val values =
      field(node, name, "an array of strings")(v => v.isArray && v.elements().asScala.forall(_.isTextual))
    values.elements().asScala.map(_.asText()).toList
  }

  def positionNode(p: ShardPosition): ObjectNode = p match {
    case ShardPosition.TrimHorizon => nodes.objectNode().put("type", "TRIM_HORIZON")
    case ShardPosition.AtTimestamp(ms) =>
      nodes.objectNode().put("type", "AT_TIMESTAMP").put("timestampMs", ms)
    case ShardPosition.At(seq) => nodes.objectNode().put("type", "AT").put("sequenceNumber", seq)
    case ShardPosition.After(seq, sub) =>
      nodes.objectNode().put("type", "AFTER").put("sequenceNumber", seq).put("subIndex", sub)
  }

  def position(node: JsonNode): ShardPosition = text(node, "type") match {
    case "TRIM_HORIZON" => ShardPosition.TrimHorizon
    case "AT_TIMESTAMP" => ShardPosition.AtTimestamp(long(node, "timestampMs"))
    case "AT" => ShardPosition.At(text(node, "sequenceNumber"))
    case "AFTER" => ShardPosition.After(text(node, "sequenceNumber"), int(node, "subIndex"))
    case other => throw KinesisErrors.checkpointUnreadable(s"Unknown position type '$other' in $node")
  }

  def rangeNode(r: HashKeyRange): ArrayNode = nodes.arrayNode().add(r.start.toString).add(r.end.toString)

  def range(node: JsonNode, name: String): HashKeyRange = {
    val decimal = (v: JsonNode) => v.isTextual && v.asText().matches("[0-9]{1,39}")
    val pair = field(node, name, "[start, end] as decimal strings")(v =>
      v.isArray && v.size == 2 && decimal(v.get(0)) && decimal(v.get(1))
    )
    HashKeyRange(BigInt(pair.get(0).asText()), BigInt(pair.get(1).asText()))
  }
}
