package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream
import java.time.{Instant, LocalDate, OffsetDateTime}
import java.time.format.DateTimeFormatter

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.core.{JsonFactory, JsonGenerator, JsonParser}
import com.fasterxml.jackson.core.JsonToken._
import com.fasterxml.jackson.databind.JsonNode
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * The registry's JSON format: a JSON Schema (draft-04 to 2020-12 keywords) types records whose payload is the record as
 * UTF-8 JSON text (what the serde library's `JsonSerializer` writes: Jackson's bytes of the record, nothing more).
 *
 * Types: `object` with `properties` is a struct (properties in document order; a property in `required` whose schema
 * does not admit null is a non-nullable field), `object` with only an `additionalProperties` schema a
 * `map<string, _>`, `array` with one `items` schema an array, `string` a string (`format: date-time` a timestamp,
 * `format: date` a date), `integer` a long, `number` a double, `boolean` a boolean; `type: [X, "null"]` and
 * `oneOf`/`anyOf` of X and `{"type": "null"}` are a nullable X; a string `enum` is a string; local `$ref`s
 * (`#/definitions/..`, `#/$defs/..`) are followed, recursive ones refused. Anything else fails naming its JSON pointer.
 *
 * Decoding needs no writer schema (JSON names its fields): fields are matched by name, a reader field the record lacks
 * is its `default` or null, a record field the reader lacks is skipped. Neither coder is thread-safe.
 */
private[sparkkinesis] object JsonSchemaCodec extends PayloadCodec {

  /** What a schema says of its values; `pointer` locates it in the schema document, for messages. */
  private sealed trait Shape { def dataType: DataType; def pointer: String; def name: String }

  private final case class Leaf(dataType: DataType, name: String, pointer: String, symbols: Seq[String] = Nil)
      extends Shape

  private final case class Obj(fields: IndexedSeq[Field], pointer: String) extends Shape {
    val name = "object"
    val dataType: DataType = StructType(fields.map(f => StructField(f.name, f.shape.dataType, f.nullable)))
  }

  private final case class Field(
      name: String,
      shape: Shape,
      required: Boolean,
      admitsNull: Boolean,
      default: Option[JsonNode]
  ) {
    def nullable: Boolean = !required || admitsNull
  }

  private final case class Arr(element: Shape, admitsNull: Boolean, pointer: String) extends Shape {
    val name = "array"
    val dataType: DataType = ArrayType(element.dataType, admitsNull)
  }

  private final case class Dict(value: Shape, admitsNull: Boolean, pointer: String) extends Shape {
    val name = "object (map)"
    val dataType: DataType = MapType(StringType, value.dataType, admitsNull)
  }

  private val Json = GlueSchemaRegistry.Json
  private val Factory = new JsonFactory()

  def sparkType(definition: String): DataType = shapeOf(definition).dataType

  def decoder(writer: String, reader: String): PayloadDecoder = new Decoder(shapeOf(reader))

  def encoder(definition: String, sparkType: DataType): PayloadEncoder = {
    val write = writerOf(sparkType, shapeOf(definition), "value")
    val out = new ByteArrayOutputStream(256)
    value => {
      out.reset()
      val g = Factory.createGenerator(out)
      write(value, g)
      g.close()
      out.toByteArray
    }
  }

  def checkWritable(sparkType: DataType, definition: String): Option[String] =
    try { writerOf(sparkType, shapeOf(definition), "value"); None }
    catch { case e: IllegalArgumentException => Some(e.getMessage) }

  // ---------------------------------------------------------------- schemas

  private def shapeOf(definition: String): Shape = {
    val root =
      try Json.readTree(definition)
      catch {
        case NonFatal(e) => throw new IllegalArgumentException(s"Invalid JSON Schema: ${e.getMessage}", e)
      }
    if (root == null || !root.isObject)
      throw new IllegalArgumentException("Invalid JSON Schema: not a JSON object")
    resolve(root, root, "#", Set.empty)._1
  }

  private def refuse(pointer: String, why: String): Nothing =
    throw new IllegalArgumentException(s"JSON Schema at $pointer: $why")

  private def isNullSchema(s: JsonNode): Boolean = s.path("type").asText("") == "null"

  /** The shape of schema `s` (at `pointer` in `root`) and whether it admits null; `refs` are the $refs being followed. */
  private def resolve(s: JsonNode, root: JsonNode, pointer: String, refs: Set[String]): (Shape, Boolean) = {
    val ref = s.path("$ref").asText("")
    val union = Seq("oneOf", "anyOf").find(s.has)
    val types = s.path("type") match {
      case t if t.isArray => t.elements.asScala.map(_.asText).toSeq
      case t if t.isTextual => Seq(t.asText)
      case _ if s.has("properties") => Seq("object")
      case _ => Nil
    }
    if (ref.nonEmpty) {
      if (!ref.startsWith("#/"))
        refuse(pointer, s"only local $$refs (#/definitions/.., #/$$defs/..) are followed, not $ref")
      if (refs(ref)) refuse(pointer, s"$$ref $ref is recursive: Spark cannot type it")
      val target = root.at(ref.drop(1))
      if (target.isMissingNode) refuse(pointer, s"$$ref $ref points to nothing")
      resolve(target, root, ref, refs + ref)
    } else if (union.isDefined) {
      val key = union.get
      val branches = s.get(key).elements.asScala.zipWithIndex.toSeq
      branches.filterNot(b => isNullSchema(b._1)) match {
        case Seq((b, i)) =>
          val (shape, n) = resolve(b, root, s"$pointer/$key/$i", refs)
          (shape, n || branches.size > 1)
        case _ => refuse(pointer, s"$key of several non-null schemas has no Spark type")
      }
    } else if (s.has("enum") && !s.has("type")) {
      val values = s.get("enum").elements.asScala.toSeq
      if (!values.forall(v => v.isTextual || v.isNull))
        refuse(pointer, "only an enum of strings is supported")
      (Leaf(StringType, "string", pointer, values.filter(_.isTextual).map(_.asText)), values.exists(_.isNull))
    } else
      types.filterNot(_ == "null") match {
        case Seq(t) => (typed(t, s, root, pointer, refs), types.contains("null"))
        case Seq() if types.nonEmpty => (Leaf(NullType, "null", pointer), true)
        case Seq() => refuse(pointer, "no `type` (or `$ref`, `enum`, `oneOf`/`anyOf` of one non-null schema)")
        case several =>
          refuse(pointer, s"type ${several.mkString("[", ", ", "]")} has no Spark type: give one type")
      }
  }

  private def typed(t: String, s: JsonNode, root: JsonNode, pointer: String, refs: Set[String]): Shape =
    t match {
      case "string" =>
        val symbols = s.path("enum").elements.asScala.filter(_.isTextual).map(_.asText).toSeq
        s.path("format").asText("") match {
          case "date-time" => Leaf(TimestampType, "string (date-time)", pointer)
          case "date" => Leaf(DateType, "string (date)", pointer)
          case _ => Leaf(StringType, "string", pointer, symbols)
        }
      case "integer" => Leaf(LongType, "integer", pointer)
      case "number" => Leaf(DoubleType, "number", pointer)
      case "boolean" => Leaf(BooleanType, "boolean", pointer)
      case "array" =>
        val items = s.path("items")
        if (!items.isObject) refuse(pointer, "an array needs one `items` schema")
        val (element, n) = resolve(items, root, s"$pointer/items", refs)
        Arr(element, n, pointer)
      case "object" if s.path("properties").isObject =>
        val required = s.path("required").elements.asScala.map(_.asText).toSet
        val fields = s.get("properties").fields.asScala.map { e =>
          val (shape, n) = resolve(e.getValue, root, s"$pointer/properties/${e.getKey}", refs)
          Field(e.getKey, shape, required(e.getKey), n, Option(e.getValue.get("default")))
        }
        Obj(fields.toIndexedSeq, pointer)
      case "object" if s.path("additionalProperties").isObject =>
        val (value, n) = resolve(s.get("additionalProperties"), root, s"$pointer/additionalProperties", refs)
        Dict(value, n, pointer)
      case "object" => refuse(pointer, "an object needs `properties` or an `additionalProperties` schema")
      case other => refuse(pointer, s"type `$other` is not a JSON Schema type Spark can read")
    }

  // ---------------------------------------------------------------- decoding

  private type Read = JsonParser => Any

  private def wrongType(p: JsonParser, path: String, shape: Shape): Nothing = {
    val value = p.currentToken match {
      case START_OBJECT => "an object"
      case START_ARRAY => "an array"
      case VALUE_STRING => "\"" + p.getText + "\""
      case _ => p.getText
    }
    throw new IllegalArgumentException(
      s"`$path` = $value is not a JSON Schema ${shape.name} (${shape.pointer})"
    )
  }

  /** Reads UTF-8 JSON records into Catalyst values of the shape's type. */
  private final class Decoder(shape: Shape) extends PayloadDecoder {
    private val root = readerOf(shape, admitsNull = false, "value")

    def decode(bytes: Array[Byte], offset: Int, length: Int): Any = {
      val p = Factory.createParser(bytes, offset, length)
      try {
        p.nextToken()
        val value = root(p)
        if (p.nextToken() != null)
          throw new IllegalArgumentException("the payload holds more than one JSON value")
        value
      } finally p.close()
    }
  }

  private def readerOf(shape: Shape, admitsNull: Boolean, path: String): Read = {
    val read = valueReader(shape, path)
    p =>
      if (p.currentToken != VALUE_NULL) read(p)
      else if (admitsNull) null
      else throw new IllegalArgumentException(s"`$path` is null, which ${shape.pointer} does not admit")
  }

  /** Reads a non-null value of `shape`, the parser at its first token. */
  private def valueReader(shape: Shape, path: String): Read = shape match {
    case Leaf(StringType, _, _, _) =>
      p => if (p.currentToken == VALUE_STRING) UTF8String.fromString(p.getText) else wrongType(p, path, shape)
    case Leaf(LongType, _, _, _) =>
      p =>
        // 5.0 is an integer in JSON Schema; a fraction, or a value beyond a long, is not read as one.
        if (!p.currentToken.isNumeric) wrongType(p, path, shape)
        try p.getDecimalValue.longValueExact
        catch { case _: ArithmeticException => wrongType(p, path, shape) }
    case Leaf(DoubleType, _, _, _) =>
      p => if (p.currentToken.isNumeric) p.getDoubleValue else wrongType(p, path, shape)
    case Leaf(BooleanType, _, _, _) =>
      p => if (p.currentToken.isBoolean) p.getBooleanValue else wrongType(p, path, shape)
    case Leaf(TimestampType, _, _, _) =>
      p => {
        if (p.currentToken != VALUE_STRING) wrongType(p, path, shape)
        try micros(OffsetDateTime.parse(p.getText).toInstant)
        catch { case NonFatal(_) => wrongType(p, path, shape) }
      }
    case Leaf(DateType, _, _, _) =>
      p => {
        if (p.currentToken != VALUE_STRING) wrongType(p, path, shape)
        try LocalDate.parse(p.getText).toEpochDay.toInt
        catch { case NonFatal(_) => wrongType(p, path, shape) }
      }
    case Leaf(_, _, _, _) => p => wrongType(p, path, shape) // type null: only null is read
    case Arr(element, n, _) =>
      val read = readerOf(element, n, s"$path[]")
      p => {
        if (p.currentToken != START_ARRAY) wrongType(p, path, shape)
        val out = new ArrayBuffer[Any]()
        while (p.nextToken() != END_ARRAY) out += read(p)
        new GenericArrayData(out.toArray)
      }
    case Dict(value, n, _) =>
      val read = readerOf(value, n, s"$path{}")
      p => {
        if (p.currentToken != START_OBJECT) wrongType(p, path, shape)
        val (keys, values) = (new ArrayBuffer[Any](), new ArrayBuffer[Any]())
        while (p.nextToken() == FIELD_NAME) {
          keys += UTF8String.fromString(p.currentName)
          p.nextToken()
          values += read(p)
        }
        ArrayBasedMapData(keys.toArray, values.toArray)
      }
    case Obj(fields, _) =>
      val index = fields.map(_.name).zipWithIndex.toMap
      val reads = fields.map(f => readerOf(f.shape, f.nullable, s"$path.${f.name}")).toArray
      // What a field the record lacks becomes: its default (read as a record's value would be), else null.
      val absent: Array[() => Any] = fields
        .zip(reads)
        .map { case (f, read) =>
          f.default match {
            case Some(d) =>
              val value = { val p = Json.treeAsTokens(d); p.nextToken(); read(p) }
              () => value
            case None if f.nullable => () => null
            case None =>
              () => throw new IllegalArgumentException(s"`$path.${f.name}` is required and missing")
          }
        }
        .toArray
      p => {
        if (p.currentToken != START_OBJECT) wrongType(p, path, shape)
        val row = new GenericInternalRow(reads.length)
        val seen = new Array[Boolean](reads.length)
        while (p.nextToken() == FIELD_NAME) {
          val i = index.getOrElse(p.currentName, -1)
          p.nextToken()
          if (i < 0) p.skipChildren() // a field the reader does not know
          else { row.update(i, reads(i)(p)); seen(i) = true }
        }
        var i = 0
        while (i < seen.length) { if (!seen(i)) row.update(i, absent(i)()); i += 1 }
        row
      }
  }

  private def micros(i: Instant): Long =
    Math.addExact(Math.multiplyExact(i.getEpochSecond, 1000000L), i.getNano / 1000L)

  // ---------------------------------------------------------------- encoding

  private type Write = (Any, JsonGenerator) => Unit

  private def unfit(path: String, t: DataType, shape: Shape): Nothing =
    throw new IllegalArgumentException(
      s"Cannot write `$path` of Spark type ${t.catalogString} as JSON Schema ${shape.name} (${shape.pointer})"
    )

  /** Writes a value of `t` as `shape`; a null where the schema admits none fails naming the path. */
  private def writerOf(t: DataType, shape: Shape, path: String, admitsNull: Boolean = false): Write = {
    val write = valueWriter(t, shape, path)
    (v, g) =>
      if (v != null) write(v, g)
      else if (admitsNull) g.writeNull()
      else
        throw new IllegalArgumentException(
          s"Cannot write null to `$path`: ${shape.pointer} does not admit null"
        )
  }

  private def valueWriter(t: DataType, shape: Shape, path: String): Write = (t, shape) match {
    case (StringType, Leaf(StringType, _, _, symbols)) =>
      (v, g) => {
        val s = v.toString
        if (symbols.nonEmpty && !symbols.contains(s))
          throw new IllegalArgumentException(
            s"Cannot write `$path` = '$s': not one of ${symbols.mkString(", ")} (${shape.pointer})"
          )
        g.writeString(s)
      }
    case (ByteType | ShortType | IntegerType | LongType, Leaf(LongType | DoubleType, _, _, _)) =>
      (v, g) => g.writeNumber(v.asInstanceOf[Number].longValue)
    case (FloatType | DoubleType, Leaf(DoubleType, _, _, _)) =>
      (v, g) => g.writeNumber(v.asInstanceOf[Number].doubleValue)
    case (BooleanType, Leaf(BooleanType, _, _, _)) => (v, g) => g.writeBoolean(v.asInstanceOf[Boolean])
    case (TimestampType, Leaf(TimestampType, _, _, _)) =>
      (v, g) => {
        val us = v.asInstanceOf[Long]
        val i = Instant.ofEpochSecond(Math.floorDiv(us, 1000000L), Math.floorMod(us, 1000000L) * 1000L)
        g.writeString(DateTimeFormatter.ISO_INSTANT.format(i))
      }
    case (DateType, Leaf(DateType, _, _, _)) =>
      (v, g) => g.writeString(LocalDate.ofEpochDay(v.asInstanceOf[Int].toLong).toString)
    case (ArrayType(et, _), Arr(element, n, _)) =>
      val write = writerOf(et, element, s"$path[]", n)
      val get = InternalRow.getAccessor(et, nullable = true)
      (v, g) => {
        val a = v.asInstanceOf[ArrayData]
        g.writeStartArray()
        for (i <- 0 until a.numElements()) write(get(a, i), g)
        g.writeEndArray()
      }
    case (MapType(StringType, vt, _), Dict(value, n, _)) =>
      val write = writerOf(vt, value, s"$path{}", n)
      val get = InternalRow.getAccessor(vt, nullable = true)
      (v, g) => {
        val m = v.asInstanceOf[MapData]
        val (keys, values) = (m.keyArray(), m.valueArray())
        g.writeStartObject()
        for (i <- 0 until m.numElements()) {
          g.writeFieldName(keys.getUTF8String(i).toString)
          write(get(values, i), g)
        }
        g.writeEndObject()
      }
    case (st: StructType, Obj(fields, pointer)) =>
      val byName = fields.map(f => f.name -> f).toMap
      st.fieldNames.find(n => !byName.contains(n)).foreach { n =>
        throw new IllegalArgumentException(
          s"Cannot write `$path.$n`: the JSON Schema at $pointer has no property $n"
        )
      }
      fields.find(f => f.required && !st.fieldNames.contains(f.name)).foreach { f =>
        throw new IllegalArgumentException(
          s"Cannot write `$path`: no field for the required property `${f.name}` ($pointer)"
        )
      }
      val writes = st.fields.map { sf =>
        val f = byName(sf.name)
        // A null for an optional property that does not admit null is left out.
        (
          InternalRow.getAccessor(sf.dataType, nullable = true),
          writerOf(sf.dataType, f.shape, s"$path.${f.name}", f.admitsNull),
          !f.admitsNull && !f.required
        )
      }
      (v, g) => {
        val row = v.asInstanceOf[InternalRow]
        g.writeStartObject()
        for (i <- writes.indices) {
          val (get, write, omitNull) = writes(i)
          val value = get(row, i)
          if (value != null || !omitNull) { g.writeFieldName(st(i).name); write(value, g) }
        }
        g.writeEndObject()
      }
    case _ => unfit(path, t, shape)
  }
}
