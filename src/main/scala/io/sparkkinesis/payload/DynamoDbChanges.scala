package io.sparkkinesis.payload

import java.math.{BigDecimal => JBigDecimal, RoundingMode}
import java.util.Base64

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.core.JsonProcessingException
import com.fasterxml.jackson.databind.{DeserializationFeature, JsonNode, ObjectMapper}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{
  Expression,
  GenericInternalRow,
  TimeZoneAwareExpression,
  UnaryExpression
}
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, DateTimeUtils, GenericArrayData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

import io.sparkkinesis.errors.KinesisErrors

/**
 * `dynamodb_changes(data[, schema])`: one change record of Kinesis Data Streams for DynamoDB (a JSON document, as
 * BINARY or STRING) as a struct. With `schema` (a constant DDL or JSON schema), `keys`, `newImage` and `oldImage` are
 * structs of its fields, DynamoDB's typed values converted exactly to each field's type (attributes the schema does
 * not name are left out; `keys` has the same type, the non-key fields null). Without it they are untyped
 * ([[UntypedImage]]: VARIANT on Spark 4, a JSON string on Spark 3.5). `approximateCreationTime` keeps the record's
 * precision: `ApproximateCreationDateTimePrecision` says milliseconds or microseconds; a record without it is read
 * by magnitude (below 1e11 seconds, below 1e14 milliseconds, else microseconds).
 */
private[sparkkinesis] final case class DynamoDbChanges(
    child: Expression,
    schema: Option[StructType],
    timeZoneId: Option[String] = None
) extends UnaryExpression
    with TimeZoneAwareExpression
    with EvalInGeneratedCode {
  import DynamoDbChanges._

  override def prettyName: String = Name
  override def withTimeZone(zone: String): TimeZoneAwareExpression = copy(timeZoneId = Option(zone))
  override protected def withNewChildInternal(c: Expression): DynamoDbChanges = copy(child = c)

  override def checkInputDataTypes(): TypeCheckResult = child.dataType match {
    case BinaryType | _: StringType => TypeCheckResult.TypeCheckSuccess
    case other =>
      TypeCheckResult.TypeCheckFailure(s"$Name takes BINARY or STRING data, not ${other.simpleString}")
  }

  private def imageType = schema.getOrElse(UntypedImage.dataType)

  override def dataType: DataType = StructType(
    Seq(
      StructField("eventName", StringType),
      StructField("eventId", StringType),
      StructField("tableName", StringType),
      StructField("awsRegion", StringType),
      StructField("keys", imageType),
      StructField("newImage", imageType),
      StructField("oldImage", imageType),
      StructField("approximateCreationTime", TimestampType),
      StructField("sizeBytes", LongType),
      StructField("principalId", StringType)
    )
  )

  def evalValue(input: Any): Any = {
    val bytes = input match {
      case b: Array[Byte] => b
      case s: UTF8String => s.getBytes
    }
    val root =
      try Mapper.readTree(bytes)
      catch { case e: JsonProcessingException => throw bad(s"it is not JSON (${e.getOriginalMessage})") }
    if (root == null || !root.isObject) throw bad("it is not a JSON object")
    val ddb = root.path("dynamodb")
    if (!ddb.isObject) throw bad("it has no dynamodb object")
    val source = text(root, "eventSource")
    if (source != null && source != "aws:dynamodb") throw bad(s"its eventSource is $source, not aws:dynamodb")
    val event = text(root, "eventName")
    if (!Events.contains(event))
      throw bad(s"its eventName is ${String.valueOf(event)}, not INSERT, MODIFY or REMOVE")
    new GenericInternalRow(
      Array[Any](
        UTF8String.fromString(event),
        utf8(text(root, "eventID")),
        utf8(text(root, "tableName")),
        utf8(text(root, "awsRegion")),
        image(ddb, "Keys"),
        image(ddb, "NewImage"),
        image(ddb, "OldImage"),
        creationTime(ddb),
        if (ddb.path("SizeBytes").canConvertToLong) ddb.get("SizeBytes").longValue() else null,
        utf8(text(root.path("userIdentity"), "principalId"))
      )
    )
  }

  private def creationTime(ddb: JsonNode): Any = ddb.get("ApproximateCreationDateTime") match {
    case null => null
    case n if n.isNull => null
    case n if n.isNumber =>
      val unitMicros = text(ddb, "ApproximateCreationDateTimePrecision") match {
        case "MICROSECOND" => 1L
        case "MILLISECOND" => 1000L
        case null if n.doubleValue().abs < 1e11 => 1000000L
        case null if n.doubleValue().abs < 1e14 => 1000L
        case null => 1L
        case other =>
          throw bad(s"its ApproximateCreationDateTimePrecision is $other, not MILLISECOND or MICROSECOND")
      }
      try
        n.decimalValue()
          .multiply(JBigDecimal.valueOf(unitMicros))
          .setScale(0, RoundingMode.FLOOR)
          .longValueExact()
      catch {
        case _: ArithmeticException =>
          throw bad(s"its dynamodb.ApproximateCreationDateTime $n is out of range")
      }
    case n => throw bad(s"its dynamodb.ApproximateCreationDateTime is $n, not a number")
  }

  private def image(ddb: JsonNode, name: String): Any = ddb.get(name) match {
    case null => null
    case item if item.isNull => null
    case item if !item.isObject => throw bad(s"its dynamodb.$name is not an object")
    case item =>
      schema match {
        case Some(s) => struct(item, s, name)
        case None => UntypedImage(w => untyped(item, "M", w, name))
      }
  }

  /** An attribute value `{"<tag>": payload}` as its tag and payload. */
  private def attribute(av: JsonNode, path: String): (String, JsonNode) = {
    if (!av.isObject || av.size() != 1)
      throw bad(s"""$path is ${show(av)}, not a DynamoDB attribute value such as {"S": "text"}""")
    val entry = av.properties().iterator().next()
    val (tag, v) = (entry.getKey, entry.getValue)
    val fits = tag match {
      case "BOOL" => v.isBoolean
      case "M" => v.isObject
      case "L" | "SS" | "NS" | "BS" => v.isArray
      case "S" | "N" | "B" => v.isTextual
      case "NULL" => true
      case _ => throw bad(s"$path has the unknown attribute type $tag")
    }
    if (!fits) throw bad(s"$path is ${show(av)}, whose value does not have the form its type $tag needs")
    (tag, v)
  }

  private def struct(item: JsonNode, st: StructType, path: String): InternalRow = {
    val values = new Array[Any](st.length)
    var i = 0
    while (i < st.length) {
      val av = item.get(st(i).name)
      if (av != null) values(i) = typed(av, st(i).dataType, s"$path.${st(i).name}")
      i += 1
    }
    new GenericInternalRow(values)
  }

  private def typed(av: JsonNode, dt: DataType, path: String): Any = {
    val (tag, v) = attribute(av, path)
    value(tag, v, dt, path)
  }

  /** The value of an attribute of type `tag` as a Catalyst value of `dt`. */
  private def value(tag: String, v: JsonNode, dt: DataType, path: String): Any = {
    def misfit(problem: String) =
      KinesisErrors.dynamoDbValue(Name, path, s"""{"$tag": ${show(v)}}""", dt.sql, problem)
    def elements(f: (JsonNode, String) => Any) =
      new GenericArrayData(
        v.elements().asScala.zipWithIndex.map { case (e, i) => f(e, s"$path[$i]") }.toArray
      )
    (tag, dt) match {
      case ("NULL", _) => null
      case ("S", _: StringType) => UTF8String.fromString(str(v, tag, path))
      case ("S", DateType | TimestampType | TimestampNTZType) =>
        val s = UTF8String.fromString(str(v, tag, path))
        val parsed = dt match {
          case DateType => DateTimeUtils.stringToDate(s)
          case TimestampType => DateTimeUtils.stringToTimestamp(s, zoneId)
          case _ => DateTimeUtils.stringToTimestampWithoutTimeZone(s)
        }
        parsed.getOrElse(throw misfit(s"the text is not a ${dt.sql} value"))
      case ("N", _: StringType) => UTF8String.fromString(number(v, path).toString)
      case ("N", n: NumericType) =>
        val d = number(v, path)
        try
          n match {
            case ByteType => d.byteValueExact()
            case ShortType => d.shortValueExact()
            case IntegerType => d.intValueExact()
            case LongType => d.longValueExact()
            case FloatType => finite(d.floatValue().toDouble).toFloat
            case DoubleType => finite(d.doubleValue())
            case t: DecimalType =>
              val scaled = d.setScale(t.scale) // throws when digits after the scale would be lost
              if (scaled.precision() > t.precision) throw new ArithmeticException("too many digits")
              Decimal(scaled, t.precision, t.scale)
            case _ => throw new ArithmeticException("not a supported number type")
          }
        catch { case _: ArithmeticException => throw misfit("it does not fit exactly") }
      case ("B", BinaryType) => binary(v, path)
      case ("BOOL", BooleanType) => v.booleanValue()
      case ("M", s: StructType) => struct(v, s, path)
      case ("M", MapType(_: StringType, vt, _)) =>
        val entries = v.properties().asScala.toArray
        ArrayBasedMapData(
          entries.map(e => UTF8String.fromString(e.getKey): Any),
          entries.map(e => typed(e.getValue, vt, s"$path.${e.getKey}"))
        )
      case ("L", ArrayType(et, _)) => elements((e, p) => typed(e, et, p))
      case ("SS" | "NS" | "BS", ArrayType(et, _)) => elements((e, p) => value(tag.take(1), e, et, p))
      case _ => throw misfit(s"a DynamoDB $tag value converts to ${Allowed(tag)} only")
    }
  }

  /** The unwrapped document of an attribute value of type `tag`, for [[UntypedImage]]. */
  private def untyped(v: JsonNode, tag: String, w: DocumentWriter, path: String): Unit = tag match {
    case "S" => w.string(str(v, tag, path))
    case "N" => w.number(number(v, path))
    case "B" => w.binary(binary(v, path))
    case "BOOL" => w.boolean(v.booleanValue())
    case "NULL" => w.nul()
    case "M" =>
      w.startObject()
      v.properties().asScala.foreach { e =>
        w.field(e.getKey)
        val (t, p) = attribute(e.getValue, s"$path.${e.getKey}")
        untyped(p, t, w, s"$path.${e.getKey}")
      }
      w.endObject()
    case _ => // L, SS, NS or BS
      w.startArray()
      v.elements().asScala.zipWithIndex.foreach { case (e, i) =>
        if (tag == "L") {
          val (t, p) = attribute(e, s"$path[$i]")
          untyped(p, t, w, s"$path[$i]")
        } else untyped(e, tag.take(1), w, s"$path[$i]")
      }
      w.endArray()
  }

  private def str(v: JsonNode, tag: String, path: String): String =
    if (v.isTextual) v.textValue()
    else throw bad(s"""$path is {"$tag": ${show(v)}}, whose value is not a string""")

  private def number(v: JsonNode, path: String): JBigDecimal =
    try new JBigDecimal(str(v, "N", path))
    catch { case _: NumberFormatException => throw bad(s"""$path is {"N": ${show(v)}}, not a number""") }

  private def binary(v: JsonNode, path: String): Array[Byte] =
    try Base64.getDecoder.decode(str(v, "B", path))
    catch { case _: IllegalArgumentException => throw bad(s"""$path is {"B": ${show(v)}}, not base64""") }

  private def finite(d: Double) = if (d.isInfinite) throw new ArithmeticException("overflow") else d
}

private[sparkkinesis] object DynamoDbChanges {
  val Name = "dynamodb_changes"

  val function: PayloadFunction = PayloadFunction(
    Name,
    s"$Name(data[, schema]) - Decodes a change record of Kinesis Data Streams for DynamoDB (BINARY or STRING) " +
      "into a struct of eventName, eventId, tableName, awsRegion, keys, newImage, oldImage, " +
      "approximateCreationTime, sizeBytes and principalId. The images are structs of the schema's fields (a " +
      "constant DDL string such as 'id STRING, price DECIMAL(10,2)'), or untyped without one: VARIANT on Spark 4, " +
      "a JSON string on Spark 3.5.",
    build
  )

  private val Events = Set("INSERT", "MODIFY", "REMOVE")

  private val Allowed = Map(
    "S" -> "STRING, DATE, TIMESTAMP or TIMESTAMP_NTZ",
    "N" -> "a number type or STRING",
    "B" -> "BINARY",
    "BOOL" -> "BOOLEAN",
    "M" -> "a STRUCT or a MAP with STRING keys",
    "L" -> "an ARRAY",
    "SS" -> "an ARRAY",
    "NS" -> "an ARRAY",
    "BS" -> "an ARRAY"
  )

  private val Mapper = new ObjectMapper().enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)

  private def bad(problem: String) = KinesisErrors.dynamoDbRecord(Name, problem)

  private def text(node: JsonNode, field: String) =
    Option(node.get(field)).filter(_.isTextual).map(_.textValue).orNull
  private def utf8(s: String) = if (s == null) null else UTF8String.fromString(s)
  private def show(v: JsonNode) = { val s = v.toString; if (s.length > 100) s.take(100) + "..." else s }

  private def build(args: Seq[Expression]): Expression = {
    PayloadFunctions.arity(function, args, 1, 2)
    DynamoDbChanges(args.head, args.lift(1).map(schemaArgument))
  }

  /** The schema argument: a constant DDL string of fields, or a schema as JSON (what `StructType.json` gives). */
  private def schemaArgument(arg: Expression): StructType = {
    def invalid(problem: String) = KinesisErrors.functionArgument(Name, problem)
    val text = arg.dataType match {
      case _: StringType if arg.foldable => Option(arg.eval()).map(_.toString.trim).getOrElse("")
      case _ =>
        throw invalid("the schema must be a constant string, such as 'id STRING, price DECIMAL(10,2)'")
    }
    val parsed =
      try if (text.startsWith("{")) DataType.fromJson(text) else DataType.fromDDL(text)
      catch {
        case e: Exception =>
          throw invalid(
            s"the schema '$text' is not a list of fields such as 'id STRING, price DECIMAL(10,2)': ${e.getMessage
                .takeWhile(_ != '\n')}"
          )
      }
    def check(dt: DataType, path: String): Unit = dt match {
      case s: StructType => s.fields.foreach(f => check(f.dataType, s"$path.${f.name}"))
      case MapType(_: StringType, v, _) => check(v, s"$path.value")
      case ArrayType(e, _) => check(e, s"$path.element")
      case _: StringType | _: NumericType | BinaryType | BooleanType | DateType | TimestampType |
          TimestampNTZType =>
      case other =>
        throw invalid(
          s"the field ${path.drop(1)} of the schema is ${other.sql}, which no DynamoDB value converts to"
        )
    }
    parsed match {
      case s: StructType if s.nonEmpty => check(s, ""); s
      case _ => throw invalid(s"the schema '$text' is not a non-empty list of fields")
    }
  }
}

/** Where the untyped form of an image is written: a JSON-like document (see [[UntypedImage]]). */
private[payload] trait DocumentWriter {
  def string(s: String): Unit
  def number(n: JBigDecimal): Unit
  def binary(b: Array[Byte]): Unit
  def boolean(b: Boolean): Unit
  def nul(): Unit
  def startObject(): Unit
  def field(name: String): Unit
  def endObject(): Unit
  def startArray(): Unit
  def endArray(): Unit
}
