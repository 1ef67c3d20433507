package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream

import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

import com.google.protobuf.{
  ByteString,
  CodedInputStream,
  CodedOutputStream,
  DescriptorProtos,
  Descriptors,
  DynamicMessage
}
import com.google.protobuf.DescriptorProtos.{
  DescriptorProto,
  EnumDescriptorProto,
  FieldDescriptorProto,
  FileDescriptorProto
}
import com.google.protobuf.Descriptors.{Descriptor, FieldDescriptor, FileDescriptor}
import com.google.protobuf.Descriptors.FieldDescriptor.JavaType
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, ArrayData, GenericArrayData, MapData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String

/**
 * Protobuf payloads. The schema text is a `.proto` file ([[ProtoParser]]). The serde library (1.1.24) writes the
 * payload as an unsigned varint message index, then the message's bytes (ProtobufWireFormatEncoder.
 * prefixMessageIndexToBytes; read back by ProtobufWireFormatDecoder.decode). The index numbers every message of the
 * file, nested ones included, in the order of their full names (MessageIndexFinder.getAll). The record is the
 * file's first top-level message as declared: its type is the struct; a record of another message fails.
 *
 * Types follow Spark's `from_protobuf` with its default options: message -> struct, repeated -> array, map -> map,
 * enum -> its value's name, bytes -> binary, 32-bit integers (uint32 and fixed32 too, bits kept) -> int, 64-bit ->
 * long, Timestamp -> timestamp, Duration -> day-time interval; unlike its default, a wrapper (Int32Value, ...) reads
 * as its value, null when unset. A recursive message fails. Fields are matched by name: a field the writer lacks
 * reads as null, one the reader lacks is skipped. A field with presence (message, oneof member, proto2, proto3
 * `optional`) reads as null when unset; a proto3 field without presence reads as its default, as on the wire.
 */
private[sparkkinesis] object ProtobufCodec extends PayloadCodec {

  private val Wrappers =
    Set("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
      .map(t => s"google.protobuf.${t}Value")

  /** The record's message and the index the serde library gives it. */
  private final case class Record(message: Descriptor, index: Int)

  private def record(definition: String): Record = {
    val file = ProtoParser.parse(definition)
    val message = file.getMessageTypes.asScala.headOption
      .getOrElse(throw new IllegalArgumentException("Invalid Protobuf schema: it declares no message"))
    Record(message, indexed(file).indexOf(message))
  }

  /** Every message of `file`, nested ones too, in the order of the serde's message index. */
  private def indexed(file: FileDescriptor): IndexedSeq[Descriptor] = {
    def all(d: Descriptor): Seq[Descriptor] = d +: d.getNestedTypes.asScala.toSeq.flatMap(all)
    file.getMessageTypes.asScala.toIndexedSeq.flatMap(all).sortBy(_.getFullName)
  }

  def sparkType(definition: String): DataType = structOf(record(definition).message, Set.empty)

  private def structOf(d: Descriptor, seen: Set[String]): StructType = {
    if (seen(d.getFullName))
      throw new IllegalArgumentException(
        s"Protobuf message ${d.getFullName} contains itself; recursive messages have no Spark type"
      )
    StructType(d.getFields.asScala.toSeq.map { f =>
      StructField(f.getName, typeOf(f, seen + d.getFullName), nullable = !f.isRequired)
    })
  }

  private def typeOf(f: FieldDescriptor, seen: Set[String]): DataType =
    if (f.isMapField) {
      val entry = f.getMessageType
      MapType(
        elementType(entry.findFieldByNumber(1), seen),
        elementType(entry.findFieldByNumber(2), seen),
        false
      )
    } else if (f.isRepeated) ArrayType(elementType(f, seen), containsNull = false)
    else elementType(f, seen)

  private def elementType(f: FieldDescriptor, seen: Set[String]): DataType = f.getJavaType match {
    case JavaType.INT => IntegerType
    case JavaType.LONG => LongType
    case JavaType.FLOAT => FloatType
    case JavaType.DOUBLE => DoubleType
    case JavaType.BOOLEAN => BooleanType
    case JavaType.STRING | JavaType.ENUM => StringType
    case JavaType.BYTE_STRING => BinaryType
    case JavaType.MESSAGE =>
      f.getMessageType.getFullName match {
        case "google.protobuf.Timestamp" => TimestampType
        case "google.protobuf.Duration" => DayTimeIntervalType()
        case w if Wrappers(w) => elementType(f.getMessageType.findFieldByName("value"), seen)
        case _ => structOf(f.getMessageType, seen)
      }
  }

  private def describe(f: FieldDescriptor): String =
    if (f.getJavaType == JavaType.MESSAGE) s"message ${f.getMessageType.getFullName}"
    else if (f.getJavaType == JavaType.ENUM) s"enum ${f.getEnumType.getFullName}"
    else f.getType.name.toLowerCase

  // Reading: protobuf-java values of the writer's descriptor -> Catalyst values of the reader's type.

  def decoder(writer: String, reader: String): PayloadDecoder = {
    val w = record(writer)
    val all = indexed(w.message.getFile)
    val read = messageReader(w.message, sparkType(reader).asInstanceOf[StructType], "value")
    (bytes, offset, length) => {
      val in = CodedInputStream.newInstance(bytes, offset, length)
      val index = in.readUInt32()
      if (index != w.index)
        throw new IllegalArgumentException(
          if (index < 0 || index >= all.size)
            s"message index $index is outside the schema's ${all.size} messages"
          else
            s"the record is a ${all(index).getFullName}, not a ${w.message.getFullName} " +
              "(the schema's first message, which is read)"
        )
      read(DynamicMessage.parseFrom(w.message, in))
    }
  }

  private def messageReader(d: Descriptor, st: StructType, path: String): DynamicMessage => InternalRow = {
    val reads = st.fields.map { sf =>
      Option(d.findFieldByName(sf.name)) match {
        case None if !sf.nullable =>
          throw new IllegalArgumentException(
            s"`$path.${sf.name}` is required by the reader, and the writer lacks it"
          )
        case None => (_: DynamicMessage) => null
        case Some(f) =>
          val read = fieldReader(f, sf.dataType, s"$path.${sf.name}")
          (m: DynamicMessage) =>
            if (!f.isRepeated && f.hasPresence && !m.hasField(f)) null else read(m.getField(f))
      }
    }
    m => new GenericInternalRow(reads.map(_(m)))
  }

  private def fieldReader(f: FieldDescriptor, t: DataType, path: String): AnyRef => Any = (f, t) match {
    case _ if f.isMapField =>
      val mt = t match { case m: MapType => m; case _ => mismatch(f, t, path) }
      val key = elementReader(f.getMessageType.findFieldByNumber(1), mt.keyType, s"$path.key")
      val value = elementReader(f.getMessageType.findFieldByNumber(2), mt.valueType, s"$path.value")
      v => {
        val entries = v.asInstanceOf[java.util.List[DynamicMessage]].asScala
        val k = entries.map(e => key(e.getField(e.getDescriptorForType.findFieldByNumber(1)))).toArray[Any]
        val x = entries.map(e => value(e.getField(e.getDescriptorForType.findFieldByNumber(2)))).toArray[Any]
        new ArrayBasedMapData(new GenericArrayData(k), new GenericArrayData(x))
      }
    case _ if f.isRepeated =>
      val element = t match {
        case ArrayType(et, _) => elementReader(f, et, s"$path[]")
        case _ => mismatch(f, t, path)
      }
      v => new GenericArrayData(v.asInstanceOf[java.util.List[AnyRef]].asScala.map(element).toArray[Any])
    case _ => elementReader(f, t, path)
  }

  private def elementReader(f: FieldDescriptor, t: DataType, path: String): AnyRef => Any =
    (f.getJavaType, t) match {
      case (JavaType.INT, IntegerType) | (JavaType.LONG, LongType) | (JavaType.FLOAT, FloatType) |
          (JavaType.DOUBLE, DoubleType) | (JavaType.BOOLEAN, BooleanType) =>
        v => v
      case (JavaType.STRING, StringType) => v => UTF8String.fromString(v.asInstanceOf[String])
      case (JavaType.ENUM, StringType) =>
        v => UTF8String.fromString(v.asInstanceOf[Descriptors.EnumValueDescriptor].getName)
      case (JavaType.BYTE_STRING, BinaryType) => v => v.asInstanceOf[ByteString].toByteArray
      case (JavaType.MESSAGE, _) =>
        val d = f.getMessageType
        (d.getFullName, t) match {
          case ("google.protobuf.Timestamp", TimestampType) |
              ("google.protobuf.Duration", _: DayTimeIntervalType) =>
            val (seconds, nanos) = (d.findFieldByName("seconds"), d.findFieldByName("nanos"))
            v => {
              val m = v.asInstanceOf[DynamicMessage]
              m.getField(seconds).asInstanceOf[Long] * 1000000L + m.getField(nanos).asInstanceOf[Int] / 1000
            }
          case (w, _) if Wrappers(w) =>
            val value = d.findFieldByName("value")
            val read = elementReader(value, t, path)
            v => read(v.asInstanceOf[DynamicMessage].getField(value))
          case (_, st: StructType) => messageReader(d, st, path).compose(_.asInstanceOf[DynamicMessage])
          case _ => mismatch(f, t, path)
        }
      case _ => mismatch(f, t, path)
    }

  private def mismatch(f: FieldDescriptor, t: DataType, path: String): Nothing =
    throw new IllegalArgumentException(
      s"`$path` is ${if (f.isRepeated) "repeated " else ""}${describe(f)} in the writer's schema, " +
        s"which does not read as the reader's ${t.catalogString}"
    )

  // Writing: Catalyst values of `sparkType` -> a DynamicMessage of the record's message, after its index.

  def encoder(definition: String, sparkType: DataType): PayloadEncoder = {
    val r = record(definition)
    val write = structWriter(r.message, sparkType, "value")
    value => {
      val message = write(value)
      val bytes = new ByteArrayOutputStream(message.getSerializedSize + 5)
      val out = CodedOutputStream.newInstance(bytes)
      out.writeUInt32NoTag(r.index)
      message.writeTo(out)
      out.flush()
      bytes.toByteArray
    }
  }

  def checkWritable(sparkType: DataType, definition: String): Option[String] =
    try { structWriter(record(definition).message, sparkType, "value"); None }
    catch { case e: IllegalArgumentException => Some(e.getMessage) }

  private def unfit(path: String, t: DataType, f: FieldDescriptor): Nothing =
    throw new IllegalArgumentException(
      s"Cannot write `$path` of Spark type ${t.catalogString} as protobuf " +
        s"${if (f.isRepeated) "repeated " else ""}${describe(f)}; it takes ${typeOf(f, Set.empty).catalogString}"
    )

  private def structWriter(d: Descriptor, t: DataType, path: String): Any => DynamicMessage = {
    val st = t match {
      case s: StructType => s
      case other =>
        throw new IllegalArgumentException(
          s"Cannot write `$path` of Spark type ${other.catalogString} as protobuf message ${d.getFullName}"
        )
    }
    val writes = st.fields.zipWithIndex.map { case (sf, i) =>
      val f = Option(d.findFieldByName(sf.name)).getOrElse(
        throw new IllegalArgumentException(
          s"Cannot write `$path.${sf.name}`: protobuf message ${d.getFullName} has no such field " +
            s"(it has ${d.getFields.asScala.map(_.getName).mkString(", ")})"
        )
      )
      val (write, get) =
        (fieldWriter(f, sf.dataType, s"$path.${sf.name}"), InternalRow.getAccessor(sf.dataType))
      (row: InternalRow, b: DynamicMessage.Builder) =>
        if (!row.isNullAt(i)) b.setField(f, write(get(row, i)))
        else if (f.isRequired)
          throw new IllegalArgumentException(
            s"Cannot write null to `$path.${sf.name}`: the field is required"
          )
    }
    value => {
      val b = DynamicMessage.newBuilder(d)
      val row = value.asInstanceOf[InternalRow]
      writes.foreach(_(row, b))
      b.build()
    }
  }

  private def fieldWriter(f: FieldDescriptor, t: DataType, path: String): Any => AnyRef = (f, t) match {
    case _ if f.isMapField =>
      val mt = t match { case m: MapType => m; case _ => unfit(path, t, f) }
      val entry = f.getMessageType
      val (kf, vf) = (entry.findFieldByNumber(1), entry.findFieldByNumber(2))
      val (key, value) =
        (elementWriter(kf, mt.keyType, s"$path.key"), elementWriter(vf, mt.valueType, s"$path.value"))
      val (getKey, getValue) = (InternalRow.getAccessor(mt.keyType), InternalRow.getAccessor(mt.valueType))
      v => {
        val map = v.asInstanceOf[MapData]
        (0 until map.numElements()).map { i =>
          if (map.valueArray().isNullAt(i))
            throw new IllegalArgumentException(s"Cannot write a null value in `$path`")
          DynamicMessage
            .newBuilder(entry)
            .setField(kf, key(getKey(map.keyArray(), i)))
            .setField(vf, value(getValue(map.valueArray(), i)))
            .build()
        }.asJava
      }
    case (_, ArrayType(et, _)) if f.isRepeated =>
      val (element, get) = (elementWriter(f, et, s"$path[]"), InternalRow.getAccessor(et))
      v => {
        val a = v.asInstanceOf[ArrayData]
        (0 until a.numElements()).map { i =>
          if (a.isNullAt(i)) throw new IllegalArgumentException(s"Cannot write a null element in `$path`")
          element(get(a, i))
        }.asJava
      }
    case _ if f.isRepeated => unfit(path, t, f)
    case _ => elementWriter(f, t, path)
  }

  private def elementWriter(f: FieldDescriptor, t: DataType, path: String): Any => AnyRef =
    (f.getJavaType, t) match {
      case (JavaType.INT, IntegerType) | (JavaType.LONG, LongType) | (JavaType.FLOAT, FloatType) |
          (JavaType.DOUBLE, DoubleType) | (JavaType.BOOLEAN, BooleanType) =>
        _.asInstanceOf[AnyRef]
      case (JavaType.STRING, StringType) => _.toString
      case (JavaType.BYTE_STRING, BinaryType) => v => ByteString.copyFrom(v.asInstanceOf[Array[Byte]])
      case (JavaType.ENUM, StringType) =>
        val e = f.getEnumType
        v =>
          Option(e.findValueByName(v.toString)).getOrElse(
            throw new IllegalArgumentException(
              s"Cannot write `$path` = '$v': enum ${e.getFullName} has ${e.getValues.asScala.map(_.getName).mkString(", ")}"
            )
          )
      case (JavaType.MESSAGE, _) =>
        val d = f.getMessageType
        (d.getFullName, t) match {
          case ("google.protobuf.Timestamp", TimestampType) |
              ("google.protobuf.Duration", _: DayTimeIntervalType) =>
            // A Timestamp's nanos are never negative; a Duration's have the sign of its seconds.
            val floor = d.getFullName == "google.protobuf.Timestamp"
            v => {
              val micros = v.asInstanceOf[Long]
              val seconds = if (floor) Math.floorDiv(micros, 1000000L) else micros / 1000000L
              DynamicMessage
                .newBuilder(d)
                .setField(d.findFieldByName("seconds"), Long.box(seconds))
                .setField(d.findFieldByName("nanos"), Int.box(((micros - seconds * 1000000L) * 1000).toInt))
                .build()
            }
          case (w, _) if Wrappers(w) =>
            val value = d.findFieldByName("value")
            val write = elementWriter(value, t, path)
            v => DynamicMessage.newBuilder(d).setField(value, write(v)).build()
          case (_, _: StructType) => structWriter(d, t, path)
          case _ => unfit(path, t, f)
        }
      case _ => unfit(path, t, f)
    }
}

/**
 * A `.proto` file's text -> its descriptor: syntax, package, imports of Google's well-known types, messages (nested),
 * enums, fields with labels, maps and oneofs. Options, reserved ranges and services are skipped; type names are
 * resolved by protobuf-java as protoc resolves them. Anything else fails naming its line.
 */
private[sparkkinesis] object ProtoParser {

  private val WellKnown: Map[String, FileDescriptor] = Seq(
    com.google.protobuf.Timestamp.getDescriptor,
    com.google.protobuf.Duration.getDescriptor,
    com.google.protobuf.Int32Value.getDescriptor,
    com.google.protobuf.Any.getDescriptor,
    com.google.protobuf.Struct.getDescriptor,
    com.google.protobuf.Empty.getDescriptor
  ).map(d => d.getFile.getName -> d.getFile).toMap

  private val Scalars: Map[String, FieldDescriptorProto.Type] = Seq(
    "double",
    "float",
    "int64",
    "uint64",
    "int32",
    "fixed64",
    "fixed32",
    "bool",
    "string",
    "bytes",
    "uint32",
    "sfixed32",
    "sfixed64",
    "sint32",
    "sint64"
  ).map(s => s -> FieldDescriptorProto.Type.valueOf(s"TYPE_${s.toUpperCase}")).toMap

  private final case class Token(text: String, line: Int)

  private val TokenPattern =
    """(?s)(//[^\n]*|/\*.*?\*/|\s+)|("(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')|([A-Za-z_.][A-Za-z0-9_.]*)|([0-9][A-Za-z0-9_.+-]*)|(.)""".r

  def parse(text: String): FileDescriptor = {
    val tokens = ArrayBuffer.empty[Token]
    var line = 1
    for (m <- TokenPattern.findAllMatchIn(text)) {
      if (m.group(1) == null) tokens += Token(m.matched, line)
      line += m.matched.count(_ == '\n')
    }
    val file = new Parser(tokens.toIndexedSeq).file()
    val imports = file.getDependencyList.asScala.map(WellKnown).toArray
    try FileDescriptor.buildFrom(file, imports)
    catch {
      case e: Descriptors.DescriptorValidationException =>
        throw new IllegalArgumentException(s"Invalid Protobuf schema: ${e.getMessage}", e)
    }
  }

  private final class Parser(tokens: IndexedSeq[Token]) {
    private var at = 0
    private var proto3 = false

    private def line = if (at < tokens.size) tokens(at).line else tokens.lastOption.fold(1)(_.line)

    private def fail(what: String): Nothing =
      throw new IllegalArgumentException(s"Invalid Protobuf schema, line $line: $what")
    private def peek: String = if (at < tokens.size) tokens(at).text else ""

    private def next(): String = {
      if (at >= tokens.size) fail("the text ends early"); at += 1; tokens(at - 1).text
    }

    private def expect(t: String): Unit = {
      val s = next(); if (s != t) { at -= 1; fail(s"expected '$t', found '$s'") }
    }

    private def accept(t: String): Boolean = if (peek == t) { at += 1; true }
    else false

    private def name(): String = {
      val s = next();
      if (!s.head.isLetter && s.head != '_') { at -= 1; fail(s"expected a name, found '$s'") }; s
    }

    private def string(): String = {
      val s = next(); if (s.head != '"' && s.head != '\'') fail(s"expected a string, found '$s'");
      s.substring(1, s.length - 1)
    }

    private def number(): Int = {
      val negative = accept("-")
      val s = next()
      val n =
        try if (s.startsWith("0x") || s.startsWith("0X")) Integer.parseInt(s.substring(2), 16) else s.toInt
        catch { case _: NumberFormatException => at -= 1; fail(s"expected an integer, found '$s'") }
      if (negative) -n else n
    }

    /** Skips up to and including `end`, over nested brackets (option values, field options, service bodies). */
    private def skipPast(end: String): Unit = {
      var depth = 0
      while (!(depth == 0 && peek == end)) next() match {
        case "{" | "[" | "(" | "<" => depth += 1
        case "}" | "]" | ")" | ">" => depth -= 1
        case _ =>
      }
      next()
    }

    def file(): FileDescriptorProto = {
      val b = FileDescriptorProto.newBuilder().setName("schema.proto")
      while (at < tokens.size) next() match {
        case "syntax" =>
          expect("="); val s = string(); expect(";")
          if (s != "proto2" && s != "proto3") fail(s"syntax '$s' is not supported (only proto2 and proto3)")
          proto3 = s == "proto3"
          b.setSyntax(s)
        case "package" => b.setPackage(name()); expect(";")
        case "import" =>
          accept("public"); accept("weak")
          val path = string(); expect(";")
          if (!WellKnown.contains(path))
            fail(
              s"import '$path' is not supported; only ${WellKnown.keys.toSeq.sorted.mkString(", ")} can be imported"
            )
          b.addDependency(path)
        case "option" => skipPast(";")
        case "message" => b.addMessageType(message())
        case "enum" => b.addEnumType(enumeration())
        case "service" => name(); expect("{"); skipPast("}")
        case ";" =>
        case other => at -= 1; fail(s"'$other' is not supported at the top level of a file")
      }
      b.build()
    }

    private def message(): DescriptorProto = {
      val b = DescriptorProto.newBuilder().setName(name())
      val optional = ArrayBuffer.empty[FieldDescriptorProto.Builder]
      expect("{")
      while (!accept("}")) peek match {
        case "message" => next(); b.addNestedType(message())
        case "enum" => next(); b.addEnumType(enumeration())
        // The one option read: a map field rendered as its entry message (the serde's registered text has them).
        case "option" if tokens.slice(at + 1, at + 5).map(_.text) == Seq("map_entry", "=", "true", ";") =>
          at += 5
          b.setOptions(DescriptorProtos.MessageOptions.newBuilder().setMapEntry(true))
        case "option" | "reserved" => skipPast(";")
        case ";" => next()
        case "oneof" =>
          next()
          val index = b.getOneofDeclCount
          b.addOneofDecl(DescriptorProtos.OneofDescriptorProto.newBuilder().setName(name()))
          expect("{")
          while (!accept("}"))
            if (peek == "option") skipPast(";") else b.addField(field(b, None).setOneofIndex(index))
        case "extensions" | "extend" | "group" => fail(s"'$peek' is not supported")
        case _ =>
          val label = peek match {
            case "optional" | "required" | "repeated" => Some(next())
            case _ => None
          }
          val f = field(b, label)
          if (proto3 && label.contains("optional")) optional += f.setProto3Optional(true)
          b.addField(f)
      }
      // proto3 `optional`: each field in its own synthetic oneof, after the declared ones (as protoc does).
      for (f <- optional) {
        val index = b.getOneofDeclCount
        b.addOneofDecl(DescriptorProtos.OneofDescriptorProto.newBuilder().setName(s"_${f.getName}"))
        b.getFieldBuilderList.asScala.find(_.getName == f.getName).foreach(_.setOneofIndex(index))
      }
      b.build()
    }

    private def field(owner: DescriptorProto.Builder, label: Option[String]): FieldDescriptorProto.Builder = {
      val f = FieldDescriptorProto
        .newBuilder()
        .setLabel(label match {
          case Some("required") => FieldDescriptorProto.Label.LABEL_REQUIRED
          case Some("repeated") => FieldDescriptorProto.Label.LABEL_REPEATED
          case _ => FieldDescriptorProto.Label.LABEL_OPTIONAL
        })
      val fieldType = next()
      if (fieldType == "group") { at -= 1; fail("'group' is not supported") }
      if (fieldType == "map" && peek == "<") {
        if (label.nonEmpty) fail("a map field takes no label")
        expect("<"); val key = typeName(); expect(","); val value = typeName(); expect(">")
        f.setName(name()).setLabel(FieldDescriptorProto.Label.LABEL_REPEATED)
        // protoc's entry message: the field's name in camel case, then "Entry".
        val entry =
          f.getName.split("_").filter(_.nonEmpty).map(p => s"${p.head.toUpper}${p.tail}").mkString + "Entry"
        owner.addNestedType(
          DescriptorProto
            .newBuilder()
            .setName(entry)
            .setOptions(DescriptorProtos.MessageOptions.newBuilder().setMapEntry(true))
            .addField(
              typed(FieldDescriptorProto.newBuilder(), key)
                .setName("key")
                .setNumber(1)
                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL)
            )
            .addField(
              typed(FieldDescriptorProto.newBuilder(), value)
                .setName("value")
                .setNumber(2)
                .setLabel(FieldDescriptorProto.Label.LABEL_OPTIONAL)
            )
        )
        f.setTypeName(entry)
      } else {
        at -= 1
        typed(f, typeName()).setName(name())
      }
      expect("=")
      f.setNumber(number())
      if (accept("[")) skipPast("]")
      expect(";")
      f
    }

    private def typeName(): String = {
      val s = next();
      if (!s.head.isLetter && s.head != '_' && s.head != '.') {
        at -= 1; fail(s"expected a type, found '$s'")
      }; s
    }

    /** A scalar type, or a message or enum name that protobuf-java resolves in the field's scope. */
    private def typed(f: FieldDescriptorProto.Builder, t: String): FieldDescriptorProto.Builder =
      Scalars.get(t).fold(f.setTypeName(t))(f.setType)

    private def enumeration(): EnumDescriptorProto = {
      val b = EnumDescriptorProto.newBuilder().setName(name())
      expect("{")
      while (!accept("}")) peek match {
        case "option" | "reserved" => skipPast(";")
        case ";" => next()
        case _ =>
          val value = name(); expect("=")
          b.addValue(
            DescriptorProtos.EnumValueDescriptorProto.newBuilder().setName(value).setNumber(number())
          )
          if (accept("[")) skipPast("]")
          expect(";")
      }
      b.build()
    }
  }
}
