package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream
import java.math.{BigDecimal => JBigDecimal, BigInteger}

import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

import org.apache.avro.{LogicalTypes, Schema, SchemaCompatibility}
import org.apache.avro.Schema.Type._
import org.apache.avro.generic.{GenericData, GenericDatumWriter}
import org.apache.avro.io.{BinaryDecoder, BinaryEncoder, DecoderFactory, EncoderFactory, ResolvingDecoder}
import org.apache.avro.util.Utf8
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Avro binary data as Spark Catalyst values, and back, with the types and values of Spark's `from_avro`/`to_avro`
 * (spark-avro's `SchemaConverters.toSqlType`): records are structs, enums strings, maps `map<string, _>`, a union of
 * null and one type that type made nullable, other unions structs `member0..memberN` with one member set, `int|long`
 * a long and `float|double` a double; logical types map to dates (days), timestamps (microseconds), decimals and
 * (Spark 4.2 and later) times. The decoder reads Avro's binary encoding straight into Catalyst values, resolving the
 * writer's schema to the reader's by Avro's rules (Avro's [[ResolvingDecoder]] supplies defaults, skips removed fields,
 * promotes numbers); no generic Avro objects are built. Neither class is thread-safe: one per task thread.
 */
private[sparkkinesis] object AvroRows {

  /** Parses an Avro schema definition (JSON); an [[IllegalArgumentException]] that says what is wrong otherwise. */
  def parse(definition: String): Schema =
    try new Schema.Parser().parse(definition)
    catch {
      case NonFatal(e) => throw new IllegalArgumentException(s"Invalid Avro schema: ${e.getMessage}", e)
    }

  /** The Spark type of values of `schema`, as Spark's `from_avro` maps it (recursive records are refused). */
  def sparkType(schema: Schema): DataType = typeOf(schema, Set.empty)._1

  /** Spark 4.2 and later read `time-micros` as TIME(6) (nanoseconds of the day); earlier lines as a plain long. */
  private lazy val timeMicrosType: Option[DataType] = {
    val Version = """(\d+)\.(\d+).*""".r
    org.apache.spark.SPARK_VERSION match {
      case Version(major, minor) if major.toInt * 100 + minor.toInt >= 402 =>
        Try(
          Class
            .forName("org.apache.spark.sql.types.TimeType")
            .getConstructor(classOf[Int])
            .newInstance(Int.box(6))
            .asInstanceOf[DataType]
        ).toOption
      case _ => None
    }
  }

  private def nonNull(union: Schema): Seq[Schema] = union.getTypes.asScala.toSeq.filter(_.getType != NULL)

  private def decimalOf(s: Schema): Option[LogicalTypes.Decimal] = s.getLogicalType match {
    case d: LogicalTypes.Decimal => Some(d)
    case _ => None
  }

  /** The Spark type of `schema` and whether its values can be null. */
  private def typeOf(schema: Schema, seen: Set[String]): (DataType, Boolean) = schema.getType match {
    case NULL => (NullType, true)
    case BOOLEAN => (BooleanType, false)
    case INT if schema.getLogicalType.isInstanceOf[LogicalTypes.Date] => (DateType, false)
    case INT => (IntegerType, false)
    case LONG =>
      schema.getLogicalType match {
        case _: LogicalTypes.TimestampMillis | _: LogicalTypes.TimestampMicros => (TimestampType, false)
        case _: LogicalTypes.LocalTimestampMillis | _: LogicalTypes.LocalTimestampMicros =>
          (TimestampNTZType, false)
        case _: LogicalTypes.TimeMicros if timeMicrosType.isDefined => (timeMicrosType.get, false)
        case _ => (LongType, false)
      }
    case FLOAT => (FloatType, false)
    case DOUBLE => (DoubleType, false)
    case STRING | ENUM => (StringType, false)
    case BYTES | FIXED =>
      (decimalOf(schema).map(d => DecimalType(d.getPrecision, d.getScale)).getOrElse(BinaryType), false)
    case ARRAY =>
      val (t, n) = typeOf(schema.getElementType, seen)
      (ArrayType(t, n), false)
    case MAP =>
      val (t, n) = typeOf(schema.getValueType, seen)
      (MapType(StringType, t, n), false)
    case RECORD =>
      if (seen(schema.getFullName))
        throw new IllegalArgumentException(
          s"Avro record ${schema.getFullName} is recursive: Spark cannot type it"
        )
      val fields = schema.getFields.asScala.map { f =>
        val (t, n) = typeOf(f.schema, seen + schema.getFullName)
        StructField(f.name, t, n)
      }
      (StructType(fields.toSeq), false)
    case UNION =>
      val branches = nonNull(schema)
      val hasNull = branches.size < schema.getTypes.size
      val t = branches.map(_.getType) match {
        case Seq() => NullType
        case Seq(_) => typeOf(branches.head, seen)._1
        case Seq(a, b) if Set(a, b) == Set(INT, LONG) => LongType
        case Seq(a, b) if Set(a, b) == Set(FLOAT, DOUBLE) => DoubleType
        case _ =>
          StructType(branches.zipWithIndex.map { case (b, i) =>
            StructField(s"member$i", typeOf(b, seen)._1)
          })
      }
      (t, hasNull || branches.isEmpty)
  }

  private type Read = ResolvingDecoder => Any

  /**
   * Decodes Avro binary records written with `writer` into Catalyst values of `sparkType(reader)` (an [[InternalRow]]
   * for a record). Fails at construction, naming the field, when the writer's data cannot be read with `reader`.
   */
  final class Decoder(writer: Schema, reader: Schema) {

    locally {
      val result = SchemaCompatibility.checkReaderWriterCompatibility(reader, writer).getResult
      if (result.getCompatibility != SchemaCompatibility.SchemaCompatibilityType.COMPATIBLE) {
        val problems = result.getIncompatibilities.asScala.map { i =>
          val kind = i.getType.toString.toLowerCase(java.util.Locale.ROOT).replace('_', ' ')
          s"field `${fieldPath(reader, i.getLocation)}`: $kind (${i.getMessage})"
        }
        throw new IllegalArgumentException(
          s"Avro data written with schema ${writer.getFullName} cannot be read with schema ${reader.getFullName}: " +
            problems.mkString("; ")
        )
      }
    }
    sparkType(reader) // refuses a schema Spark cannot type
    private val root: Read = readerOf(reader)
    private var binary: BinaryDecoder = _

    private val resolving: ResolvingDecoder =
      DecoderFactory.get().resolvingDecoder(Schema.applyAliases(writer, reader), reader, null)

    def decode(bytes: Array[Byte], offset: Int, length: Int): Any = {
      binary = DecoderFactory.get().binaryDecoder(bytes, offset, length, binary)
      resolving.configure(binary)
      val value = root(resolving)
      resolving.drain()
      value
    }

    private def readerOf(s: Schema): Read = s.getType match {
      case NULL => in => { in.readNull(); null }
      case BOOLEAN => _.readBoolean()
      case INT => _.readInt()
      case LONG =>
        s.getLogicalType match {
          case _: LogicalTypes.TimestampMillis | _: LogicalTypes.LocalTimestampMillis =>
            in => Math.multiplyExact(in.readLong(), 1000L)
          case _: LogicalTypes.TimeMicros if timeMicrosType.isDefined =>
            in => Math.multiplyExact(in.readLong(), 1000L)
          case _ => _.readLong()
        }
      case FLOAT => _.readFloat()
      case DOUBLE => _.readDouble()
      case STRING =>
        val utf8 = new Utf8()
        in => {
          in.readString(utf8)
          UTF8String.fromBytes(java.util.Arrays.copyOf(utf8.getBytes, utf8.getByteLength))
        }
      case ENUM =>
        val symbols = s.getEnumSymbols.asScala.map(UTF8String.fromString).toArray
        in => symbols(in.readEnum())
      case BYTES =>
        var buffer: java.nio.ByteBuffer = null // reused while large enough
        val bytes: Read = in => {
          buffer = in.readBytes(buffer)
          val start = buffer.arrayOffset + buffer.position()
          java.util.Arrays.copyOfRange(buffer.array, start, start + buffer.remaining())
        }
        decimalOf(s).fold(bytes)(d => in => toDecimal(bytes(in).asInstanceOf[Array[Byte]], d))
      case FIXED =>
        val size = s.getFixedSize
        val bytes: Read = in => { val b = new Array[Byte](size); in.readFixed(b); b }
        decimalOf(s).fold(bytes)(d => in => toDecimal(bytes(in).asInstanceOf[Array[Byte]], d))
      case ARRAY =>
        val element = readerOf(s.getElementType)
        in => {
          var n = in.readArrayStart()
          val out = new java.util.ArrayList[Any](n.toInt)
          while (n > 0) {
            var i = 0L
            while (i < n) { out.add(element(in)); i += 1 }
            n = in.arrayNext()
          }
          new GenericArrayData(out.toArray.asInstanceOf[Array[Any]])
        }
      case MAP =>
        val key = readerOf(Schema.create(STRING))
        val value = readerOf(s.getValueType)
        in => {
          var n = in.readMapStart()
          val keys = new java.util.ArrayList[Any](n.toInt)
          val values = new java.util.ArrayList[Any](n.toInt)
          while (n > 0) {
            var i = 0L
            while (i < n) { keys.add(key(in)); values.add(value(in)); i += 1 }
            n = in.mapNext()
          }
          new ArrayBasedMapData(
            new GenericArrayData(keys.toArray.asInstanceOf[Array[Any]]),
            new GenericArrayData(values.toArray.asInstanceOf[Array[Any]])
          )
        }
      case RECORD =>
        val fields = s.getFields.asScala.map(f => readerOf(f.schema)).toArray
        val width = fields.length
        in => {
          val row = new GenericInternalRow(width)
          val order = in.readFieldOrder()
          var i = 0
          while (i < order.length) { val pos = order(i).pos; row.update(pos, fields(pos)(in)); i += 1 }
          row
        }
      case UNION =>
        val branches = s.getTypes.asScala.toArray
        val reads = branches.map(readerOf)
        sparkType(s) match {
          case st: StructType if branches.count(_.getType != NULL) > 1 =>
            // A branch's member number counts the non-null branches before it.
            val member = branches.indices.map(i => branches.take(i).count(_.getType != NULL)).toArray
            in => {
              val b = in.readIndex()
              if (branches(b).getType == NULL) { in.readNull(); null }
              else {
                val row = new GenericInternalRow(st.length)
                row.update(member(b), reads(b)(in))
                row
              }
            }
          case LongType =>
            in => { val b = in.readIndex(); reads(b)(in) match { case i: Int => i.toLong; case v => v } }
          case DoubleType =>
            in => { val b = in.readIndex(); reads(b)(in) match { case f: Float => f.toDouble; case v => v } }
          case _ => in => reads(in.readIndex())(in)
        }
    }
  }

  /** The field names along a JSON pointer into `root` (as [[SchemaCompatibility]] locates a problem). */
  private def fieldPath(root: Schema, pointer: String): String = {
    val tokens = pointer.split('/').filter(_.nonEmpty)
    val names = new StringBuilder("value")
    var s = root
    var i = 0
    while (i < tokens.length) {
      tokens(i) match {
        case "fields" if i + 1 < tokens.length && s.getType == RECORD =>
          val f = s.getFields.get(tokens(i + 1).toInt)
          names.append('.').append(f.name)
          s = f.schema
          i += 1
        case "items" if s.getType == ARRAY => names.append("[]"); s = s.getElementType
        case "values" if s.getType == MAP => names.append("{}"); s = s.getValueType
        case n if s.getType == UNION && n.nonEmpty && n.forall(_.isDigit) => s = s.getTypes.get(n.toInt)
        case _ =>
      }
      i += 1
    }
    names.toString
  }

  /** A decimal from its unscaled value in big-endian two's complement; up to 8 bytes without a BigInteger. */
  private def toDecimal(unscaled: Array[Byte], d: LogicalTypes.Decimal): Decimal =
    if (unscaled.length > 0 && unscaled.length <= 8 && d.getPrecision <= Decimal.MAX_LONG_DIGITS) {
      var v = unscaled(0).toLong // sign-extended
      var i = 1
      while (i < unscaled.length) { v = (v << 8) | (unscaled(i) & 0xff); i += 1 }
      Decimal(v, d.getPrecision, d.getScale)
    } else Decimal(new JBigDecimal(new BigInteger(unscaled), d.getScale), d.getPrecision, d.getScale)

  private type Write = (Any, BinaryEncoder) => Unit

  /** A Catalyst value that cannot be written with the Avro schema: the message names the field path and the value. */
  final class UnwritableValue(message: String) extends IllegalArgumentException(message)

  /**
   * Encodes Catalyst values of `sparkType` into Avro binary data of `schema`: struct fields go to the record fields of
   * the same name (a record field missing from the struct gets its default). Refused at construction when the types
   * do not fit ([[checkWritable]]); a value that does not fit (a null for a non-null field, a string that is not a
   * symbol of the enum, bytes of the wrong size for a fixed) fails with an [[UnwritableValue]].
   */
  final class Encoder(schema: Schema, sparkType: DataType) {
    private val root: Write = writerOf(sparkType, schema, "value")
    private val out = new ByteArrayOutputStream(256)
    private var encoder: BinaryEncoder = EncoderFactory.get().binaryEncoder(out, null)

    def encode(value: Any): Array[Byte] = {
      out.reset()
      encoder = EncoderFactory.get().binaryEncoder(out, encoder)
      root(value, encoder)
      encoder.flush()
      out.toByteArray
    }
  }

  /** None when values of `sparkType` can be written with `schema`, else why not (naming the field path). */
  def checkWritable(sparkType: DataType, schema: Schema): Option[String] =
    try { writerOf(sparkType, schema, "value"); None }
    catch { case e: IllegalArgumentException => Some(e.getMessage) }

  private def unfit(path: String, t: DataType, s: Schema): Nothing =
    throw new IllegalArgumentException(
      s"Cannot write `$path` of Spark type ${t.catalogString} as Avro ${describe(s)}"
    )

  private def describe(s: Schema): String = s.getType match {
    case UNION => s.getTypes.asScala.map(describe).mkString("union [", ", ", "]")
    case _ =>
      Option(s.getLogicalType).map(l => s"${s.getType.getName} (${l.getName})").getOrElse(s.getType.getName)
  }

  private def notNull(w: Write, path: String, s: Schema): Write = (v, e) =>
    if (v == null)
      throw new UnwritableValue(s"Cannot write null to `$path`: Avro ${describe(s)} is not nullable")
    else w(v, e)

  private def writerOf(t: DataType, s: Schema, path: String): Write = if (s.getType == UNION)
    unionWriter(t, s, path)
  else if (s.getType == NULL) {
    if (t != NullType) unfit(path, t, s)
    (v, _) =>
      if (v != null) throw new UnwritableValue(s"Cannot write `$path` = $v: Avro null allows only null")
  } else notNull(valueWriter(t, s, path), path, s)

  private def unionWriter(t: DataType, s: Schema, path: String): Write = {
    val branches = s.getTypes.asScala.toIndexedSeq
    val nullIndex = branches.indexWhere(_.getType == NULL)
    val others = branches.zipWithIndex.filter(_._1.getType != NULL)
    def onNull(e: BinaryEncoder): Unit =
      if (nullIndex >= 0) e.writeIndex(nullIndex)
      else throw new UnwritableValue(s"Cannot write null to `$path`: Avro ${describe(s)} has no null branch")
    t match {
      case st: StructType if others.size > 1 && st.fieldNames.toSeq == others.indices.map(i => s"member$i") =>
        // The struct of members that from_avro reads such a union as: its one non-null member picks the branch.
        val writes =
          others.zip(st.fields).map { case ((b, _), f) => valueWriter(f.dataType, b, s"$path.${f.name}") }
        val members = st.fields.map(f => InternalRow.getAccessor(f.dataType, nullable = true))
        (v, e) =>
          if (v == null) onNull(e)
          else {
            val row = v.asInstanceOf[InternalRow]
            val m = others.indices.find(i => !row.isNullAt(i))
            m.fold(onNull(e)) { i => e.writeIndex(others(i)._2); writes(i)(members(i)(row, i), e) }
          }
      case _ =>
        val fits = others.iterator.flatMap { case (b, i) => Try(i -> valueWriter(t, b, path)).toOption }
        if (!fits.hasNext) unfit(path, t, s)
        val (index, write) = fits.next()
        (v, e) => if (v == null) onNull(e) else { e.writeIndex(index); write(v, e) }
    }
  }

  /** Writes a non-null value of `t` as `s` (not a union). */
  private def valueWriter(t: DataType, s: Schema, path: String): Write = (t, s.getType) match {
    case (BooleanType, BOOLEAN) => (v, e) => e.writeBoolean(v.asInstanceOf[Boolean])
    case (ByteType, INT | LONG) => number(s, v => v.asInstanceOf[Byte].toLong)
    case (ShortType, INT | LONG) => number(s, v => v.asInstanceOf[Short].toLong)
    case (IntegerType, INT | LONG) => number(s, v => v.asInstanceOf[Int].toLong)
    case (DateType, INT) => (v, e) => e.writeInt(v.asInstanceOf[Int])
    case (LongType, LONG) => (v, e) => e.writeLong(v.asInstanceOf[Long])
    case (TimestampType | TimestampNTZType, LONG) =>
      s.getLogicalType match {
        case _: LogicalTypes.TimestampMillis | _: LogicalTypes.LocalTimestampMillis =>
          (v, e) => e.writeLong(Math.floorDiv(v.asInstanceOf[Long], 1000L))
        case _ => (v, e) => e.writeLong(v.asInstanceOf[Long])
      }
    case (tt, LONG) if timeMicrosType.contains(tt) =>
      (v, e) => e.writeLong(Math.floorDiv(v.asInstanceOf[Long], 1000L))
    case (FloatType, FLOAT) => (v, e) => e.writeFloat(v.asInstanceOf[Float])
    case (FloatType, DOUBLE) => (v, e) => e.writeDouble(v.asInstanceOf[Float].toDouble)
    case (DoubleType, DOUBLE) => (v, e) => e.writeDouble(v.asInstanceOf[Double])
    case (StringType, STRING) =>
      (v, e) => e.writeBytes(v.asInstanceOf[UTF8String].getBytes) // a string is encoded as its UTF-8 bytes
    case (StringType, ENUM) =>
      val symbols = s.getEnumSymbols.asScala.zipWithIndex.map { case (n, i) =>
        UTF8String.fromString(n) -> i
      }.toMap
      (v, e) =>
        symbols.get(v.asInstanceOf[UTF8String]) match {
          case Some(i) => e.writeEnum(i)
          case None =>
            throw new UnwritableValue(
              s"Cannot write `$path` = '$v': not a symbol of Avro enum ${s.getFullName} " +
                s"(${s.getEnumSymbols.asScala.mkString(", ")})"
            )
        }
    case (BinaryType, BYTES) if decimalOf(s).isEmpty => (v, e) => e.writeBytes(v.asInstanceOf[Array[Byte]])
    case (BinaryType, FIXED) if decimalOf(s).isEmpty =>
      (v, e) => {
        val b = v.asInstanceOf[Array[Byte]]
        if (b.length != s.getFixedSize)
          throw new UnwritableValue(
            s"Cannot write `$path` of ${b.length} bytes: Avro fixed ${s.getFullName} holds ${s.getFixedSize} bytes"
          )
        e.writeFixed(b)
      }
    case (_: DecimalType, BYTES | FIXED) if decimalOf(s).isDefined =>
      val d = decimalOf(s).get
      (v, e) => {
        val big = v.asInstanceOf[Decimal].toJavaBigDecimal
        val scaled = Try(big.setScale(d.getScale)).toOption.filter(_.precision <= d.getPrecision).getOrElse {
          throw new UnwritableValue(
            s"Cannot write `$path` = $big: Avro decimal(${d.getPrecision}, ${d.getScale}) cannot hold it exactly"
          )
        }
        val bytes = scaled.unscaledValue.toByteArray
        if (s.getType == BYTES) e.writeBytes(bytes)
        else {
          val size = s.getFixedSize
          if (bytes.length > size)
            throw new UnwritableValue(s"Cannot write `$path` = $big: too large for fixed($size)")
          val padded = Array.fill[Byte](size - bytes.length)(if (bytes(0) < 0) -1 else 0) ++ bytes
          e.writeFixed(padded)
        }
      }
    case (ArrayType(et, _), ARRAY) =>
      val element = writerOf(et, s.getElementType, s"$path[]")
      val get =
        InternalRow.getAccessor(et, nullable = true) // typed once: get(i, type) looks the type up per call
      (v, e) => {
        val a = v.asInstanceOf[ArrayData]
        val n = a.numElements()
        e.writeArrayStart(); e.setItemCount(n.toLong)
        var i = 0
        while (i < n) { e.startItem(); element(get(a, i), e); i += 1 }
        e.writeArrayEnd()
      }
    case (MapType(StringType, vt, _), MAP) =>
      val value = writerOf(vt, s.getValueType, s"$path{}")
      val get = InternalRow.getAccessor(vt, nullable = true)
      (v, e) => {
        val m = v.asInstanceOf[MapData]
        val (keys, values, n) = (m.keyArray(), m.valueArray(), m.numElements())
        e.writeMapStart(); e.setItemCount(n.toLong)
        var i = 0
        while (i < n) {
          e.startItem(); e.writeBytes(keys.getUTF8String(i).getBytes)
          value(get(values, i), e); i += 1
        }
        e.writeMapEnd()
      }
    case (st: StructType, RECORD) =>
      val byName = st.fields.zipWithIndex.map { case (f, i) => f.name -> i }.toMap
      val extra = st.fieldNames.filterNot(n => s.getField(n) != null)
      if (extra.nonEmpty)
        throw new IllegalArgumentException(
          s"Cannot write `$path`: Avro record ${s.getFullName} has no field ${extra.mkString(", ")}"
        )
      val writes: Array[Write] = s.getFields.asScala.map { f =>
        val fp = s"$path.${f.name}"
        byName.get(f.name) match {
          case Some(i) =>
            val (w, get) = (
              writerOf(st(i).dataType, f.schema, fp),
              InternalRow.getAccessor(st(i).dataType, nullable = true)
            )
            (v: Any, e: BinaryEncoder) => w(get(v.asInstanceOf[InternalRow], i), e)
          case None if f.hasDefaultValue =>
            val default = GenericData.get().getDefaultValue(f)
            val w = new GenericDatumWriter[Any](f.schema)
            (_: Any, e: BinaryEncoder) => w.write(default, e)
          case None =>
            throw new IllegalArgumentException(
              s"Cannot write `$path`: no value for Avro field `$fp`, which has no default"
            )
        }
      }.toArray
      (v, e) => { var i = 0; while (i < writes.length) { writes(i)(v, e); i += 1 } }
    case _ => unfit(path, t, s)
  }

  private def number(s: Schema, get: Any => Long): Write =
    if (s.getType == INT) (v, e) => e.writeInt(get(v).toInt) else (v, e) => e.writeLong(get(v))
}
