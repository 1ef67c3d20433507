package io.sparkkinesis.payload

import scala.jdk.CollectionConverters._

import com.amazonaws.services.schemaregistry.deserializers.protobuf.ProtobufWireFormatDecoder
import com.amazonaws.services.schemaregistry.serializers.protobuf.{
  MessageIndexFinder,
  ProtobufWireFormatEncoder
}
import com.amazonaws.services.schemaregistry.utils.ProtobufMessageType
import com.google.protobuf.DynamicMessage
import com.google.protobuf.DescriptorProtos.{DescriptorProto, FieldDescriptorProto, FileDescriptorProto}
import com.google.protobuf.DescriptorProtos.FieldDescriptorProto.{Label, Type}
import com.google.protobuf.Descriptors.{Descriptor, FileDescriptor}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class ProtobufCodecSuite extends AnyFunSuite {

  private val Order =
    """// An order, as a producer registers it.
      |syntax = "proto3";
      |package shop.v1;
      |
      |import "google/protobuf/timestamp.proto";
      |import "google/protobuf/wrappers.proto";
      |option java_package = "com.example.shop";
      |
      |message Order {
      |  string id = 1;
      |  int64 amount_cents = 2 [deprecated = true];
      |  repeated Line lines = 3;
      |  map<string, int32> tags = 4;
      |  Status status = 5;
      |  google.protobuf.Timestamp placed = 6;
      |  google.protobuf.StringValue note = 7;
      |  optional bool gift = 8;
      |  oneof payment { string card = 9; bytes voucher = 10; }
      |  uint32 flags = 11;
      |  reserved 12, 15 to 20; /* retired */
      |  message Line {
      |    string sku = 1;
      |    repeated double prices = 2 [packed = true];
      |  }
      |  enum Status { UNKNOWN = 0; PAID = 1; SHIPPED = 2; }
      |}
      |
      |service Orders { rpc Get (Order) returns (Order); }
      |""".stripMargin

  private val OrderType = StructType(
    Seq(
      StructField("id", StringType),
      StructField("amount_cents", LongType),
      StructField(
        "lines",
        ArrayType(
          StructType(
            Seq(StructField("sku", StringType), StructField("prices", ArrayType(DoubleType, false)))
          ),
          containsNull = false
        )
      ),
      StructField("tags", MapType(StringType, IntegerType, valueContainsNull = false)),
      StructField("status", StringType),
      StructField("placed", TimestampType),
      StructField("note", StringType),
      StructField("gift", BooleanType),
      StructField("card", StringType),
      StructField("voucher", BinaryType),
      StructField("flags", IntegerType)
    )
  )

  private def internal(t: DataType, row: Row): Any = CatalystTypeConverters.createToCatalystConverter(t)(row)
  private def external(t: DataType, v: Any): Any = CatalystTypeConverters.createToScalaConverter(t)(v)

  private def failure(text: String): String =
    intercept[IllegalArgumentException](ProtoParser.parse(text)).getMessage

  test("the parser reads nested messages, enums, maps, oneofs, proto3 optional and well-known imports") {
    val file = ProtoParser.parse(Order)
    val order = file.findMessageTypeByName("Order")
    assert(file.getPackage == "shop.v1")
    assert(order.getFields.asScala.map(_.getName) == OrderType.fieldNames.toSeq)
    assert(order.findFieldByName("lines").getMessageType.getFullName == "shop.v1.Order.Line")
    assert(
      order.findFieldByName("status").getEnumType.getValues.asScala.map(_.getName) == Seq(
        "UNKNOWN",
        "PAID",
        "SHIPPED"
      )
    )
    assert(order.findFieldByName("tags").isMapField)
    assert(order.findFieldByName("tags").getMessageType.getName == "TagsEntry")
    assert(order.findFieldByName("placed").getMessageType.getFullName == "google.protobuf.Timestamp")
    assert(order.findFieldByName("card").getContainingOneof.getName == "payment")
    assert(order.findFieldByName("gift").toProto.getProto3Optional)
    assert(order.findFieldByName("gift").hasPresence)
    assert(!order.findFieldByName("id").hasPresence)
    assert(order.findFieldByName("lines").getMessageType.findFieldByName("prices").isRepeated)
  }

  test("type names resolve from the innermost scope out, as protoc resolves them") {
    val file = ProtoParser.parse(
      """syntax = "proto2";
        |package a;
        |message Item { required int32 x = 1; }
        |message Outer {
        |  message Item { optional string y = 1; }
        |  optional Item inner = 1;
        |  optional .a.Item outer = 2;
        |  optional Outer.Item again = 3;
        |  map<string, Item> by_name = 4;
        |}
        |enum Kind { A = 0; B = -1 [deprecated = true]; }
        |""".stripMargin
    )
    val outer = file.findMessageTypeByName("Outer")
    assert(outer.findFieldByName("inner").getMessageType.getFullName == "a.Outer.Item")
    assert(outer.findFieldByName("outer").getMessageType.getFullName == "a.Item")
    assert(outer.findFieldByName("again").getMessageType.getFullName == "a.Outer.Item")
    assert(outer.findFieldByName("by_name").getMessageType.getName == "ByNameEntry")
    assert(file.findEnumTypeByName("Kind").findValueByNumber(-1).getName == "B")
    assert(file.findMessageTypeByName("Item").findFieldByName("x").isRequired)
  }

  test("a map written as its entry message (as the serde registers it) is a map") {
    val text = """syntax = "proto3";
                 |message R {
                 |  repeated TagsEntry tags = 1;
                 |  message TagsEntry { option map_entry = true; string key = 1; int64 value = 2; }
                 |}""".stripMargin
    assert(ProtoParser.parse(text).findMessageTypeByName("R").findFieldByName("tags").isMapField)
    assert(
      ProtobufCodec.sparkType(text) == StructType(
        Seq(StructField("tags", MapType(StringType, LongType, false)))
      )
    )
  }

  test("what the parser does not read fails naming the line and the construct") {
    val cases = Seq(
      "syntax = \"proto3\";\nimport \"other.proto\";" -> "line 2: import 'other.proto' is not supported",
      "syntax = \"proto2\";\nmessage A {\n  extensions 100 to 200;\n}" -> "line 3: 'extensions' is not supported",
      "message A { optional int32 x = 1; }\n\nextend A { optional int32 y = 2; }" -> "line 3: 'extend' is not supported",
      "message A {\n  optional group G = 1 { }\n}" -> "line 2: 'group' is not supported",
      "syntax = \"editions\";" -> "line 1: syntax 'editions' is not supported",
      "message A {\n  int32 x = ;\n}" -> "line 2: expected an integer, found ';'",
      "message A {\n  int32 x = 1\n}" -> "line 3: expected ';', found '}'",
      "message A { int32 x = 1;" -> "the text ends early",
      "syntax = \"proto3\";\nmessage A { Missing m = 1; }" -> "\"Missing\" is not defined"
    )
    for ((text, expected) <- cases) {
      val message = failure(text)
      assert(message.contains(expected), s"$text: $message")
      assert(message.startsWith("Invalid Protobuf schema"), message)
    }
  }

  test("types are those of Spark's from_protobuf; wrappers read as their value") {
    assert(ProtobufCodec.sparkType(Order) == OrderType)
    val scalars = ProtobufCodec.sparkType(
      """syntax = "proto2";
        |import "google/protobuf/duration.proto";
        |message S {
        |  required sint32 a = 1; optional sfixed64 b = 2; optional uint64 c = 3; optional fixed32 d = 4;
        |  optional float e = 5; optional google.protobuf.Duration f = 6;
        |}
        |""".stripMargin
    )
    assert(
      scalars == StructType(
        Seq(
          StructField("a", IntegerType, nullable = false),
          StructField("b", LongType),
          StructField("c", LongType),
          StructField("d", IntegerType),
          StructField("e", FloatType),
          StructField("f", DayTimeIntervalType())
        )
      )
    )
    val recursive = intercept[IllegalArgumentException](
      ProtobufCodec.sparkType(
        "syntax = \"proto3\"; message Node { string v = 1; repeated Node children = 2; }"
      )
    )
    assert(recursive.getMessage.contains("Node contains itself"))
  }

  private val sample = Row(
    "o-1",
    1250L,
    Seq(Row("apple", Seq(1.5, 2.0)), Row("pear", Seq.empty)),
    Map("a" -> 1, "b" -> 2),
    "SHIPPED",
    java.sql.Timestamp.valueOf("2024-02-29 12:34:56.789123"),
    "leave at door",
    false,
    null,
    Array[Byte](1, 2, 3),
    -1
  )

  private def roundTrip(writer: String, reader: String, row: Row, sparkType: StructType): Row = {
    val bytes = ProtobufCodec.encoder(writer, sparkType).encode(internal(sparkType, row))
    val readType = ProtobufCodec.sparkType(reader).asInstanceOf[StructType]
    external(readType, ProtobufCodec.decoder(writer, reader).decode(bytes, 0, bytes.length)).asInstanceOf[Row]
  }

  private def same(a: Row, b: Row): Unit =
    assert(a.toSeq.map {
      case x: Array[Byte] => x.toSeq; case x => x
    } == b.toSeq.map { case x: Array[Byte] => x.toSeq; case x => x })

  test("values written are read back; unset fields with presence are null, proto3 scalars their default") {
    same(roundTrip(Order, Order, sample, OrderType), sample)
    val sparse = Row("", 0L, Seq.empty, Map.empty, "UNKNOWN", null, null, null, null, null, 0)
    val empty = Row(null, null, null, null, null, null, null, null, null, null, null)
    same(roundTrip(Order, Order, empty, OrderType), sparse)
  }

  test("the payload is the serde's: the message index, then the message; the serde reads ours, we read its") {
    val file = ProtoParser.parse(Order)
    val order = file.findMessageTypeByName("Order")
    val bytes = ProtobufCodec.encoder(Order, OrderType).encode(internal(OrderType, sample))
    // Order is first of Order, Order.Line by full name.
    assert(bytes(0) == 0)
    val serde = new ProtobufWireFormatDecoder(new MessageIndexFinder())
      .decode(bytes, file, ProtobufMessageType.DYNAMIC_MESSAGE)
      .asInstanceOf[DynamicMessage]
    assert(serde.getDescriptorForType.getFullName == "shop.v1.Order")
    assert(serde.getField(order.findFieldByName("id")) == "o-1")
    assert(serde.getField(order.findFieldByName("status")).toString == "SHIPPED")
    val again = new ProtobufWireFormatEncoder(new MessageIndexFinder()).encode(serde, file)
    same(
      external(OrderType, ProtobufCodec.decoder(Order, Order).decode(again, 0, again.length))
        .asInstanceOf[Row],
      sample
    )
  }

  /** A file built without the parser: messages B { C; A { D } } as in MessageIndexFinder's documentation. */
  private def independent: FileDescriptor = {
    def msg(name: String, nested: DescriptorProto*) = DescriptorProto
      .newBuilder()
      .setName(name)
      .addField(
        FieldDescriptorProto
          .newBuilder()
          .setName("n")
          .setNumber(1)
          .setType(Type.TYPE_INT32)
          .setLabel(Label.LABEL_OPTIONAL)
      )
      .addAllNestedType(nested.asJava)
      .build()
    val proto = FileDescriptorProto
      .newBuilder()
      .setName("x.proto")
      .setSyntax("proto3")
      .addMessageType(msg("B", msg("C"), msg("A", msg("D"))))
      .addMessageType(msg("Second"))
      .build()
    FileDescriptor.buildFrom(proto, Array.empty)
  }

  private val IndependentText =
    """syntax = "proto3";
      |message B { int32 n = 1; message C { int32 n = 1; } message A { int32 n = 1; message D { int32 n = 1; } } }
      |message Second { int32 n = 1; }
      |""".stripMargin

  test("a DynamicMessage of protobuf-java, framed by the serde, is read; another message's record fails") {
    val file = independent
    def framed(d: Descriptor, n: Int) = new ProtobufWireFormatEncoder(new MessageIndexFinder())
      .encode(DynamicMessage.newBuilder(d).setField(d.findFieldByName("n"), Int.box(n)).build(), file)
    val b = framed(file.findMessageTypeByName("B"), 42)
    assert(b(0) == 0) // B, B.A, B.A.D, B.C, Second
    val decoder = ProtobufCodec.decoder(IndependentText, IndependentText)
    assert(
      external(StructType(Seq(StructField("n", IntegerType))), decoder.decode(b, 0, b.length)) == Row(42)
    )
    val second = framed(file.findMessageTypeByName("Second"), 1)
    assert(second(0) == 4)
    val e = intercept[IllegalArgumentException](decoder.decode(second, 0, second.length))
    assert(e.getMessage.contains("the record is a Second, not a B"))
    val ours = ProtobufCodec
      .encoder(IndependentText, StructType(Seq(StructField("n", IntegerType))))
      .encode(internal(StructType(Seq(StructField("n", IntegerType))), Row(7)))
    val read = new ProtobufWireFormatDecoder(new MessageIndexFinder())
      .decode(ours, file, ProtobufMessageType.DYNAMIC_MESSAGE)
    assert(read.asInstanceOf[DynamicMessage].getDescriptorForType.getFullName == "B")
  }

  test("evolution: fields match by name; a new field reads as null, a dropped one is skipped") {
    val v1 = "syntax = \"proto3\"; message R { string a = 1; int32 b = 2; }"
    val v2 =
      "syntax = \"proto3\"; message R { string a = 1; optional int64 c = 3; Inner d = 4; message Inner { int32 x = 1; } }"
    val t1 = ProtobufCodec.sparkType(v1).asInstanceOf[StructType]
    val t2 = ProtobufCodec.sparkType(v2).asInstanceOf[StructType]
    assert(roundTrip(v1, v2, Row("x", 5), t1) == Row("x", null, null))
    assert(roundTrip(v2, v1, Row("y", 9L, Row(3)), t2) == Row("y", null))
    val v3 = "syntax = \"proto3\"; message R { int64 a = 1; }"
    val e = intercept[IllegalArgumentException](ProtobufCodec.decoder(v1, v3))
    assert(
      e.getMessage == "`value.a` is string in the writer's schema, which does not read as the reader's bigint"
    )
  }

  test("values that do not fit fail naming the field, the value and what is allowed") {
    def check(t: StructType) = ProtobufCodec.checkWritable(t, Order)
    assert(check(StructType(Seq(StructField("id", StringType)))).isEmpty)
    assert(
      check(StructType(Seq(StructField("idx", StringType)))).get.startsWith(
        "Cannot write `value.idx`: protobuf message shop.v1.Order has no such field (it has id, amount_cents,"
      )
    )
    assert(
      check(StructType(Seq(StructField("amount_cents", IntegerType)))).contains(
        "Cannot write `value.amount_cents` of Spark type int as protobuf int64; it takes bigint"
      )
    )
    val t = StructType(Seq(StructField("status", StringType)))
    val e =
      intercept[IllegalArgumentException](ProtobufCodec.encoder(Order, t).encode(internal(t, Row("LOST"))))
    assert(
      e.getMessage == "Cannot write `value.status` = 'LOST': enum shop.v1.Order.Status has UNKNOWN, PAID, SHIPPED"
    )
    val lines = StructType(
      Seq(StructField("lines", ArrayType(OrderType("lines").dataType.asInstanceOf[ArrayType].elementType)))
    )
    val n = intercept[IllegalArgumentException](
      ProtobufCodec.encoder(Order, lines).encode(internal(lines, Row(Seq(null))))
    )
    assert(n.getMessage == "Cannot write a null element in `value.lines`")
  }

  test("durations and timestamps before 1970 keep protobuf's sign rules") {
    val text =
      "syntax = \"proto3\"; import \"google/protobuf/duration.proto\"; import \"google/protobuf/timestamp.proto\";" +
        " message T { google.protobuf.Duration d = 1; google.protobuf.Timestamp t = 2; }"
    val t = ProtobufCodec.sparkType(text).asInstanceOf[StructType]
    val bytes = ProtobufCodec
      .encoder(text, t)
      .encode(new org.apache.spark.sql.catalyst.expressions.GenericInternalRow(Array[Any](-1500001L, -1L)))
    val file = ProtoParser.parse(text)
    val m = DynamicMessage.parseFrom(file.findMessageTypeByName("T"), bytes.drop(1))
    val d = m.getField(file.findMessageTypeByName("T").findFieldByName("d")).asInstanceOf[DynamicMessage]
    val ts = m.getField(file.findMessageTypeByName("T").findFieldByName("t")).asInstanceOf[DynamicMessage]
    assert(d.getAllFields.values.asScala.toSeq == Seq(-1L, -500001000))
    assert(ts.getAllFields.values.asScala.toSeq == Seq(-1L, 999999000))
    val row = ProtobufCodec
      .decoder(text, text)
      .decode(bytes, 0, bytes.length)
      .asInstanceOf[org.apache.spark.sql.catalyst.InternalRow]
    assert(row.getLong(0) == -1500001L && row.getLong(1) == -1L)
  }
}
