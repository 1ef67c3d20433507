package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream

import org.apache.avro.Schema
import org.apache.avro.generic.{GenericDatumReader, GenericDatumWriter}
import org.apache.avro.io.{DecoderFactory, EncoderFactory}
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.avro.SchemaConverters
import org.apache.spark.sql.avro.functions.from_avro
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

class AvroRowsSuite extends AnyFunSuite with BeforeAndAfterAll {
  import AvroRowsSuite._

  private var spark: SparkSession = _

  override def beforeAll(): Unit =
    spark = SparkSession
      .builder()
      .master("local[1]")
      .appName("AvroRowsSuite")
      .config("spark.ui.enabled", "false")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.driver.bindAddress", "127.0.0.1")
      .config("spark.sql.shuffle.partitions", "1")
      // Spark 4.2 reads time-micros as TIME, a type it handles only when enabled (an unknown setting elsewhere).
      .config("spark.sql.timeType.enabled", "true")
      // Dates and timestamps as java.time values, here and in collect (java.sql.Date needs JVM module access).
      .config("spark.sql.datetime.java8API.enabled", "true")
      .getOrCreate()

  override def afterAll(): Unit = if (spark != null) spark.stop()

  /** What Spark's from_avro reads from `records`, as Scala values (Rows for structs), binary as Seq. */
  private def fromAvro(schema: Schema, records: Seq[Array[Byte]]): Seq[Any] = {
    val s = spark
    import s.implicits._
    records
      .toDF("b")
      .select(from_avro(col("b"), schema.toString))
      .collect()
      .toSeq
      .map(r => normalize(r.get(0)))
  }

  test("the corpus's values are written as given, so each case tests what it says") {
    val schema = AvroRows.parse("""{"type":"record","name":"R","fields":[{"name":"d","type":"bytes"}]}""")
    val bytes = write(schema, datum(schema, """{"d":"%ff%00"}"""))
    assert(bytes.toSeq == Seq[Byte](4, -1, 0)) // length 2 (zig-zag 4), then 0xff 0x00
  }

  test("types and values are those of Spark's from_avro, for every case of the corpus") {
    for (c <- Corpus if c.parity) {
      val schema = AvroRows.parse(c.schema)
      val expectedType = SchemaConverters.toSqlType(schema).dataType
      assert(AvroRows.sparkType(schema) == expectedType, c.name)
      val records = c.values.map(v => write(schema, datum(schema, v)))
      val decoder = new AvroRows.Decoder(schema, schema)
      val ours = records.map(r => toScala(expectedType, decoder.decode(r, 0, r.length)))
      assert(ours == fromAvro(schema, records), c.name)
    }
  }

  test("a null at the top level is decoded as null") {
    val schema = AvroRows.parse("""["null","long"]""")
    val decoder = new AvroRows.Decoder(schema, schema)
    val (none, five) = (write(schema, null), write(schema, 5L))
    assert(decoder.decode(none, 0, none.length) == null && decoder.decode(five, 0, five.length) == 5L)
  }

  test("a record is decoded from the middle of an array, and the decoder is reused across records") {
    val schema = AvroRows.parse(Corpus.head.schema)
    val records = Corpus.head.values.map(v => write(schema, datum(schema, v)))
    val decoder = new AvroRows.Decoder(schema, schema)
    val padded = records.map(r => Array[Byte](9, 9) ++ r ++ Array[Byte](9))
    val direct = records.map(r => toScala(AvroRows.sparkType(schema), decoder.decode(r, 0, r.length)))
    val offset = padded.map(r => toScala(AvroRows.sparkType(schema), decoder.decode(r, 2, r.length - 3)))
    assert(direct == offset && direct.distinct.size == records.size)
  }

  test("sparkType: time-micros follows the running Spark line; recursive records are refused") {
    val t = AvroRows.sparkType(AvroRows.parse("""{"type":"long","logicalType":"time-micros"}"""))
    assert(
      t == SchemaConverters
        .toSqlType(AvroRows.parse("""{"type":"long","logicalType":"time-micros"}"""))
        .dataType
    )
    val recursive = """{"type":"record","name":"N","fields":[{"name":"next","type":["null","N"]}]}"""
    val e = intercept[IllegalArgumentException](AvroRows.sparkType(AvroRows.parse(recursive)))
    assert(e.getMessage.contains("N is recursive"), e.getMessage)
  }

  test("parse: a bad definition fails with what is wrong") {
    val e = intercept[IllegalArgumentException](
      AvroRows.parse("""{"type":"record","name":"R","fields":[{"name":"a"}]}""")
    )
    assert(e.getMessage.startsWith("Invalid Avro schema:") && e.getMessage.contains("type"), e.getMessage)
    assert(
      intercept[IllegalArgumentException](AvroRows.parse("{not json")).getMessage
        .contains("Invalid Avro schema")
    )
  }

  test("evolution: an added field gets its default, a removed field is dropped, int is promoted to long") {
    val v1 = AvroRows.parse(
      """{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},{"name":"gone","type":"string"},
        |{"name":"suit","type":{"type":"enum","name":"S","symbols":["A","B"]}}]}""".stripMargin
    )
    val v2 = AvroRows.parse(
      """{"type":"record","name":"Order","fields":[{"name":"id","type":"long"},
        |{"name":"suit","type":{"type":"enum","name":"S","symbols":["A","B","C"]}},
        |{"name":"qty","type":"int","default":7},{"name":"note","type":["null","string"],"default":null},
        |{"name":"tags","type":{"type":"array","items":"string"},"default":["x"]}]}""".stripMargin
    )
    val bytes = write(v1, datum(v1, """{"id":42,"gone":"bye","suit":"B"}"""))
    val value = new AvroRows.Decoder(v1, v2).decode(bytes, 0, bytes.length)
    assert(toScala(AvroRows.sparkType(v2), value) == Row(42L, "B", 7, null, Seq("x")))
    assert(
      AvroRows.sparkType(v2).asInstanceOf[StructType].fieldNames.toSeq == Seq(
        "id",
        "suit",
        "qty",
        "note",
        "tags"
      )
    )
    // Reading with the writer's own schema keeps the removed field: the difference above is the resolution's.
    assert(
      toScala(AvroRows.sparkType(v1), new AvroRows.Decoder(v1, v1).decode(bytes, 0, bytes.length)) ==
        Row(42, "bye", "B")
    )
  }

  test("evolution: an incompatible pair fails at construction, naming the field") {
    val writer = AvroRows.parse(
      """{"type":"record","name":"R","fields":[{"name":"a","type":"int"},
        |{"name":"inner","type":{"type":"record","name":"I","fields":[{"name":"b","type":"string"}]}}]}""".stripMargin
    )
    val reader = AvroRows.parse(
      """{"type":"record","name":"R","fields":[{"name":"a","type":"int"},
        |{"name":"inner","type":{"type":"record","name":"I","fields":[{"name":"b","type":"int"}]}}]}""".stripMargin
    )
    val e = intercept[IllegalArgumentException](new AvroRows.Decoder(writer, reader))
    assert(e.getMessage.contains("field `value.inner.b`: type mismatch"), e.getMessage)
    val noDefault = AvroRows.parse(
      """{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"c","type":"int"}]}"""
    )
    val writerA = AvroRows.parse("""{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}""")
    val e2 = intercept[IllegalArgumentException](new AvroRows.Decoder(writerA, noDefault))
    assert(e2.getMessage.contains("field `value.c`: reader field missing default value"), e2.getMessage)
  }

  test("round trip: encoding what was decoded gives the same bytes, which Avro reads as the same datum") {
    for (c <- Corpus) {
      val schema = AvroRows.parse(c.schema)
      val t = AvroRows.sparkType(schema)
      val decoder = new AvroRows.Decoder(schema, schema)
      val encoder = new AvroRows.Encoder(schema, t)
      assert(AvroRows.checkWritable(t, schema).isEmpty, c.name)
      for (json <- c.values) {
        val original = datum(schema, json)
        val bytes = write(schema, original)
        val value = decoder.decode(bytes, 0, bytes.length)
        val again = encoder.encode(value)
        assert(toScala(t, decoder.decode(again, 0, again.length)) == toScala(t, value), s"${c.name}: $json")
        if (c.exact) {
          assert(again.toSeq == bytes.toSeq, s"${c.name}: $json")
          assert(read(schema, again) == original, s"${c.name}: $json")
        }
      }
    }
  }

  test("encoder: a struct may leave out a field with a default; ints widen to long, floats to double") {
    val schema = AvroRows.parse(
      """{"type":"record","name":"R","fields":[{"name":"l","type":"long"},{"name":"d","type":"double"},
        |{"name":"x","type":"string","default":"dflt"}]}""".stripMargin
    )
    val t = StructType(Seq(StructField("d", FloatType), StructField("l", IntegerType)))
    val bytes = new AvroRows.Encoder(schema, t).encode(new GenericInternalRow(Array[Any](1.5f, 3)))
    assert(read(schema, bytes).toString == """{"l": 3, "d": 1.5, "x": "dflt"}""")
  }

  test("encoder: a value that does not fit fails naming the field path, the value and what is allowed") {
    val schema = AvroRows.parse(
      """{"type":"record","name":"R","fields":[
        |{"name":"items","type":{"type":"array","items":{"type":"record","name":"I","fields":[
        |  {"name":"n","type":"int"},{"name":"suit","type":{"type":"enum","name":"S","symbols":["A","B"]}}]}}},
        |{"name":"f","type":{"type":"fixed","name":"F","size":2}}]}""".stripMargin
    )
    val t = AvroRows.sparkType(schema)
    val encoder = new AvroRows.Encoder(schema, t)
    def row(n: Any, suit: String, f: Array[Byte]) = new GenericInternalRow(
      Array[Any](
        new org.apache.spark.sql.catalyst.util.GenericArrayData(
          Array[Any](new GenericInternalRow(Array[Any](n, UTF8String.fromString(suit))))
        ),
        f
      )
    )
    assert(encoder.encode(row(1, "A", Array[Byte](1, 2))).nonEmpty)
    val nullInt = intercept[AvroRows.UnwritableValue](encoder.encode(row(null, "A", Array[Byte](1, 2))))
    assert(nullInt.getMessage == "Cannot write null to `value.items[].n`: Avro int is not nullable")
    val badEnum = intercept[AvroRows.UnwritableValue](encoder.encode(row(1, "C", Array[Byte](1, 2))))
    assert(
      badEnum.getMessage == "Cannot write `value.items[].suit` = 'C': not a symbol of Avro enum S (A, B)"
    )
    val badFixed = intercept[AvroRows.UnwritableValue](encoder.encode(row(1, "A", Array[Byte](1))))
    assert(badFixed.getMessage.contains("`value.f` of 1 bytes") && badFixed.getMessage.contains("holds 2"))
    val nullTop = intercept[AvroRows.UnwritableValue](encoder.encode(null))
    assert(nullTop.getMessage.contains("Cannot write null to `value`"), nullTop.getMessage)
  }

  test("checkWritable: None when the types fit, else the reason naming the field path") {
    val schema = AvroRows.parse(
      """{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"record","name":"A","fields":[
        |{"name":"n","type":["null","int"]}]}}]}""".stripMargin
    )
    def struct(fields: (String, DataType)*) = StructType(fields.map { case (n, t) => StructField(n, t) })
    assert(AvroRows.checkWritable(struct("a" -> struct("n" -> IntegerType)), schema).isEmpty)
    assert(
      AvroRows
        .checkWritable(struct("a" -> struct("n" -> StringType)), schema)
        .contains(
          "Cannot write `value.a.n` of Spark type string as Avro union [null, int]"
        )
    )
    assert(
      AvroRows
        .checkWritable(struct("a" -> struct("n" -> IntegerType, "z" -> IntegerType)), schema)
        .contains(
          "Cannot write `value.a`: Avro record A has no field z"
        )
    )
    assert(
      AvroRows
        .checkWritable(struct("b" -> struct()), schema)
        .exists(m => m.contains("no field b") || m.contains("`value.a`"))
    )
    intercept[IllegalArgumentException](new AvroRows.Encoder(schema, struct("a" -> LongType)))
  }
}

private object AvroRowsSuite {

  /** A schema and values in Avro's JSON encoding (`%XX` stands for the byte XX in bytes and fixed values). */
  final case class Case(
      name: String,
      schema: String,
      values: Seq[String],
      exact: Boolean = true,
      parity: Boolean = true
  )

  private def rec(name: String, fields: String) = s"""{"type":"record","name":"$name","fields":[$fields]}"""
  private def f(name: String, t: String) = s"""{"name":"$name","type":$t}"""

  val Corpus: Seq[Case] = Seq(
    Case(
      "primitives",
      rec(
        "P",
        Seq(
          f("n", "\"null\""),
          f("b", "\"boolean\""),
          f("i", "\"int\""),
          f("l", "\"long\""),
          f("f", "\"float\""),
          f("d", "\"double\""),
          f("s", "\"string\""),
          f("by", "\"bytes\"")
        ).mkString(",")
      ),
      Seq(
        """{"n":null,"b":true,"i":-5,"l":1234567890123,"f":1.5,"d":-2.25,"s":"héllo ✓","by":"ab%ff"}""",
        """{"n":null,"b":false,"i":2147483647,"l":-9223372036854775808,"f":3.4E38,"d":1E300,"s":"","by":""}"""
      )
    ),
    Case(
      "logical types",
      rec(
        "L",
        Seq(
          f("date", """{"type":"int","logicalType":"date"}"""),
          f("tsMs", """{"type":"long","logicalType":"timestamp-millis"}"""),
          f("tsUs", """{"type":"long","logicalType":"timestamp-micros"}"""),
          f("ltsMs", """{"type":"long","logicalType":"local-timestamp-millis"}"""),
          f("ltsUs", """{"type":"long","logicalType":"local-timestamp-micros"}"""),
          f("tMs", """{"type":"int","logicalType":"time-millis"}"""),
          f("tUs", """{"type":"long","logicalType":"time-micros"}"""),
          f("u", """{"type":"string","logicalType":"uuid"}""")
        ).mkString(",")
      ),
      Seq(
        """{"date":19000,"tsMs":1700000000123,"tsUs":1700000000123456,"ltsMs":1700000000123,
          |"ltsUs":1700000000123456,"tMs":45296789,"tUs":45296789012,
          |"u":"123e4567-e89b-12d3-a456-426614174000"}""".stripMargin,
        """{"date":-1,"tsMs":-1,"tsUs":0,"ltsMs":-1001,"ltsUs":-1,"tMs":0,"tUs":86399999999,"u":""}"""
      )
    ),
    Case(
      "decimals in bytes and fixed",
      rec(
        "D",
        Seq(
          f("bd", """{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}"""),
          f(
            "fd",
            """{"type":"fixed","name":"F8","size":8,"logicalType":"decimal","precision":18,"scale":4}"""
          ),
          f("big", """{"type":"bytes","logicalType":"decimal","precision":38,"scale":10}"""),
          f(
            "bigf",
            """{"type":"fixed","name":"F16","size":16,"logicalType":"decimal","precision":38,"scale":0}"""
          )
        ).mkString(",")
      ),
      Seq(
        """{"bd":"09","fd":"%00%00%00%00%00%00%30%39","big":"%cf%c7","bigf":"%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%ff%fe"}""",
        """{"bd":"%ff","fd":"%0d%e0%b6%b3%a7%63%ff%ff","big":"%00","bigf":"%00%00%00%00%00%00%00%00%00%00%00%00%00%00%01%00"}"""
      )
    ),
    Case(
      "nested records, arrays, maps, nullable record",
      rec(
        "Outer",
        Seq(
          f("id", "\"string\""),
          f("inner", rec("Inner", f("x", "\"int\"") + "," + f("y", """{"type":"array","items":"double"}"""))),
          f("tags", """{"type":"map","values":"string"}"""),
          f("opt", """["null","Inner"]""")
        ).mkString(",")
      ),
      Seq(
        """{"id":"a","inner":{"x":1,"y":[1.5,2.5]},"tags":{"k":"v","k2":"w"},"opt":{"Inner":{"x":2,"y":[]}}}""",
        """{"id":"b","inner":{"x":-1,"y":[]},"tags":{},"opt":null}"""
      )
    ),
    Case(
      "arrays of records, maps of arrays and of nullable values",
      rec(
        "A",
        Seq(
          f(
            "items",
            """{"type":"array","items":""" + rec(
              "Item",
              Seq(
                f("sku", "\"string\""),
                f("qty", "\"int\""),
                f("price", """["null",{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}]""")
              ).mkString(",")
            ) + "}"
          ),
          f("m", """{"type":"map","values":{"type":"array","items":"long"}}"""),
          f("mm", """{"type":"map","values":["null","string"]}""")
        ).mkString(",")
      ),
      Seq(
        """{"items":[{"sku":"x","qty":2,"price":{"bytes":"%01%00"}},{"sku":"y","qty":0,"price":null}],
          |"m":{"a":[1,2],"b":[]},"mm":{"z":null,"w":{"string":"q"}}}""".stripMargin,
        """{"items":[],"m":{},"mm":{}}"""
      )
    ),
    Case(
      "unions",
      rec(
        "U",
        Seq(
          f("ns", """["null","string"]"""),
          f("sn", """["string","null"]"""),
          f("multi", """["int","string",""" + rec("R", f("r", "\"boolean\"")) + "]"),
          f("nmulti", """["null","int","string"]"""),
          f("il", """["int","long"]"""),
          f("fd", """["null","float","double"]""")
        ).mkString(",")
      ),
      Seq(
        """{"ns":{"string":"a"},"sn":null,"multi":{"R":{"r":true}},"nmulti":{"string":"s"},"il":{"long":3},
          |"fd":{"double":1.5}}""".stripMargin,
        """{"ns":null,"sn":{"string":"b"},"multi":{"int":7},"nmulti":null,"il":{"long":9000000000},"fd":null}"""
      )
    ),
    Case(
      "unions read as wider numbers",
      rec("W", Seq(f("il", """["int","long"]"""), f("fd", """["null","float","double"]""")).mkString(",")),
      Seq("""{"il":{"int":3},"fd":{"float":1.5}}""", """{"il":{"int":-3},"fd":{"double":2.5}}"""),
      exact = false
    ),
    Case(
      "enums and fixed",
      rec(
        "E",
        Seq(
          f("suit", """{"type":"enum","name":"Suit","symbols":["SPADES","HEARTS","DIAMONDS","CLUBS"]}"""),
          f("id", """{"type":"fixed","name":"Id4","size":4}"""),
          f("sd", """["null","Suit"]""")
        ).mkString(",")
      ),
      Seq(
        """{"suit":"HEARTS","id":"abcd","sd":{"Suit":"CLUBS"}}""",
        """{"suit":"SPADES","id":"%00%01%02%ff","sd":null}"""
      )
    ),
    Case(
      "fields with defaults",
      rec(
        "Def",
        Seq(
          """{"name":"a","type":"int","default":1}""",
          """{"name":"b","type":"string","default":"x"}""",
          """{"name":"c","type":{"type":"array","items":"int"},"default":[]}""",
          """{"name":"d","type":["null","int"],"default":null}"""
        ).mkString(",")
      ),
      Seq("""{"a":5,"b":"y","c":[1],"d":{"int":3}}""")
    ),
    Case("a string", "\"string\"", Seq("\"hi\"", "\"\"")),
    // from_avro reads a null at the top level as 0 (as if not nullable): here only the round trip is checked.
    Case("a nullable long", """["null","long"]""", Seq("null", """{"long":5}"""), parity = false),
    Case(
      "an array of maps",
      """{"type":"array","items":{"type":"map","values":"int"}}""",
      Seq("""[{"a":1},{}]""", "[]")
    )
  )

  def datum(schema: Schema, json: String): Any = {
    val text = "%([0-9a-f]{2})".r.replaceAllIn(json, m => "\\\\u00" + m.group(1))
    new GenericDatumReader[Any](schema).read(null, DecoderFactory.get().jsonDecoder(schema, text))
  }

  def write(schema: Schema, datum: Any): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val encoder = EncoderFactory.get().binaryEncoder(out, null)
    new GenericDatumWriter[Any](schema).write(datum, encoder)
    encoder.flush()
    out.toByteArray
  }

  def read(schema: Schema, bytes: Array[Byte]): Any =
    new GenericDatumReader[Any](schema).read(null, DecoderFactory.get().binaryDecoder(bytes, null))

  /** A Catalyst value as Scala values (as `collect` gives them), normalized by [[normalize]]. */
  def toScala(t: DataType, value: Any): Any = normalize(
    CatalystTypeConverters.createToScalaConverter(t)(value)
  )

  /** Binary as a Seq (arrays compare by reference), rows as plain Rows, recursively. */
  def normalize(v: Any): Any = v match {
    case b: Array[Byte] => b.toSeq
    case r: Row => Row.fromSeq(r.toSeq.map(normalize))
    case m: scala.collection.Map[_, _] => m.map { case (k, x) => normalize(k) -> normalize(x) }.toMap
    case s: scala.collection.Seq[_] => s.map(normalize).toList
    case other => other
  }
}
