package io.sparkkinesis.payload

import java.nio.charset.StandardCharsets.UTF_8
import java.time.{Instant, LocalDate}

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

/** The JSON Schema codec without Spark or a registry: the type mapping, decoding, encoding and the write checks. */
class JsonSchemaCodecSuite extends AnyFunSuite {
  private val codec = JsonSchemaCodec

  private def obj(properties: String, required: String = ""): String =
    s"""{"type":"object","properties":{$properties},"required":[$required]}"""

  /** The record as Scala values (Rows for structs). */
  private def decode(schema: String, json: String): Any = {
    val bytes = json.getBytes(UTF_8)
    val value = codec.decoder(schema, schema).decode(bytes, 0, bytes.length)
    CatalystTypeConverters.createToScalaConverter(codec.sparkType(schema))(value)
  }

  private def failure(f: => Any): String = intercept[IllegalArgumentException](f).getMessage

  private val Order = obj(
    """"id":{"type":"string"},"amount":{"type":"integer"},"price":{"type":"number"},"paid":{"type":"boolean"},
      |"at":{"type":"string","format":"date-time"},"day":{"type":"string","format":"date"},
      |"note":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}},
      |"attrs":{"type":"object","additionalProperties":{"type":"integer"}},
      |"ship":{"$ref":"#/definitions/Address"},"status":{"enum":["NEW","DONE"]}""".stripMargin,
    """"id","amount","note""""
  ).dropRight(1) +
    ""","definitions":{"Address":{"type":"object","properties":{"city":{"type":"string"},"zip":{"type":"string","default":"00000"}},"required":["city"]}}}"""

  test("JSON Schema types map to Spark types") {
    val address = StructType(Seq(StructField("city", StringType, false), StructField("zip", StringType)))
    assert(
      codec.sparkType(Order) == StructType(
        Seq(
          StructField("id", StringType, nullable = false),
          StructField("amount", LongType, nullable = false),
          StructField("price", DoubleType),
          StructField("paid", BooleanType),
          StructField("at", TimestampType),
          StructField("day", DateType),
          StructField("note", StringType, nullable = true), // required, but admits null
          StructField("tags", ArrayType(StringType, containsNull = false)),
          StructField("attrs", MapType(StringType, LongType, valueContainsNull = false)),
          StructField("ship", address),
          StructField("status", StringType)
        )
      )
    )
    val table = Seq(
      """{"type":"integer"}""" -> LongType,
      """{"type":["null","number"]}""" -> DoubleType,
      """{"type":"array","items":{"type":["integer","null"]}}""" -> ArrayType(LongType, containsNull = true),
      """{"oneOf":[{"type":"null"},{"type":"string","format":"date"}]}""" -> DateType,
      """{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"#/$defs/T","$defs":{"T":{"type":"boolean"}}}""" -> BooleanType,
      """{"properties":{"a":{"type":"string"}}}""" -> StructType(Seq(StructField("a", StringType)))
    )
    for ((schema, expected) <- table) assert(codec.sparkType(schema) == expected, schema)
  }

  test("schemas Spark cannot type fail naming their JSON pointer") {
    val table = Seq(
      obj(""""a":{"oneOf":[{"type":"string"},{"type":"integer"}]}""") -> "#/properties/a: oneOf of several",
      obj(
        """"a":{"type":["string","integer"]}"""
      ) -> "#/properties/a: type [string, integer] has no Spark type",
      obj(""""a":{"description":"untyped"}""") -> "#/properties/a: no `type`",
      obj(""""a":{"type":"array"}""") -> "#/properties/a: an array needs one `items` schema",
      obj(""""a":{"type":"object"}""") -> "#/properties/a: an object needs `properties`",
      obj(""""a":{"enum":[1,2]}""") -> "#/properties/a: only an enum of strings",
      obj(""""a":{"$ref":"other.json#/x"}""") -> "#/properties/a: only local $refs",
      obj(""""a":{"$ref":"#/definitions/Nope"}""") -> "$ref #/definitions/Nope points to nothing",
      """{"$ref":"#/definitions/N","definitions":{"N":{"type":"object","properties":{"next":{"$ref":"#/definitions/N"}}}}}""" ->
        "#/definitions/N/properties/next: $ref #/definitions/N is recursive",
      "[1]" -> "Invalid JSON Schema: not a JSON object",
      "{" -> "Invalid JSON Schema"
    )
    for ((schema, message) <- table) {
      val m = failure(codec.sparkType(schema))
      assert(m.contains(message), s"$schema: $m")
    }
  }

  test("records decode into every type, nested, with nulls, defaults, and extra or missing fields") {
    val full =
      """{"id":"o1","amount":5,"price":2.5,"paid":true,"at":"2024-01-02T03:04:05.123456+01:00","day":"2024-02-29",
        |"note":null,"tags":["a","b"],"attrs":{"x":1},"ship":{"city":"Oslo","zip":"0150"},"status":"NEW"}""".stripMargin
    val at = java.sql.Timestamp.from(Instant.parse("2024-01-02T02:04:05.123456Z"))
    assert(
      decode(Order, full) == Row(
        "o1",
        5L,
        2.5,
        true,
        at,
        java.sql.Date.valueOf(LocalDate.of(2024, 2, 29)),
        null,
        Seq("a", "b"),
        Map("x" -> 1L),
        Row("Oslo", "0150"),
        "NEW"
      )
    )
    // Missing optional fields are null, a missing field with a default takes it; unknown fields are skipped.
    val sparse =
      """{"extra":{"deep":[1,{"x":null}]},"amount":5.0,"note":"n","id":"o2","ship":{"city":"Rome"}}"""
    assert(
      decode(Order, sparse) == Row(
        "o2",
        5L,
        null,
        null,
        null,
        null,
        "n",
        null,
        null,
        Row("Rome", "00000"),
        null
      )
    )
    val m = failure(decode(Order, """{"amount":1,"note":null}"""))
    assert(m == "`value.id` is required and missing", m)
  }

  test("a value of the wrong JSON type fails naming the field path, the value and the expected type") {
    val table = Seq(
      """{"id":7}""" -> "`value.id` = 7 is not a JSON Schema string (#/properties/id)",
      """{"id":"a","amount":"5"}""" -> "`value.amount` = \"5\" is not a JSON Schema integer (#/properties/amount)",
      """{"id":"a","amount":1.5}""" -> "`value.amount` = 1.5 is not a JSON Schema integer",
      """{"id":"a","amount":99999999999999999999}""" -> "`value.amount` = 99999999999999999999 is not",
      """{"id":"a","amount":1,"paid":"yes"}""" -> "`value.paid` = \"yes\" is not a JSON Schema boolean",
      """{"id":"a","amount":1,"at":"yesterday"}""" -> "`value.at` = \"yesterday\" is not a JSON Schema string (date-time)",
      """{"id":"a","amount":1,"tags":["a",{}]}""" -> "`value.tags[]` = an object is not a JSON Schema string (#/properties/tags/items)",
      """{"id":"a","amount":1,"tags":["a",null]}""" -> "`value.tags[]` is null, which #/properties/tags/items does not admit",
      """{"id":"a","amount":1,"ship":{"city":[]}}""" -> "`value.ship.city` = an array is not a JSON Schema string (#/definitions/Address/properties/city)",
      """{"id":null}""" -> "`value.id` is null",
      """[]""" -> "`value` = an array is not a JSON Schema object (#)",
      """{"id":"a","amount":1} {}""" -> "more than one JSON value"
    )
    for ((json, message) <- table) {
      val m = failure(decode(Order, json))
      assert(m.contains(message), s"$json: $m")
    }
  }

  test("encoding then decoding gives the values back; the JSON has the struct's fields") {
    val sparkType = codec.sparkType(Order).asInstanceOf[StructType]
    val row = Row(
      "o1",
      -3L,
      0.1,
      false,
      java.sql.Timestamp.from(Instant.parse("1969-12-31T23:59:59.999999Z")),
      java.sql.Date.valueOf(LocalDate.of(1900, 1, 1)),
      null,
      Seq("x"),
      Map("k" -> 2L),
      Row("Oslo", null),
      "DONE"
    )
    val catalyst = CatalystTypeConverters.createToCatalystConverter(sparkType)(row)
    val bytes = codec.encoder(Order, sparkType).encode(catalyst)
    val back = codec.decoder(Order, Order).decode(bytes, 0, bytes.length)
    // zip is optional and does not admit null: it is left out, so decoding gives its default.
    assert(
      CatalystTypeConverters.createToScalaConverter(sparkType)(back) == Row.fromSeq(
        row.toSeq.updated(9, Row("Oslo", "00000"))
      )
    )
    val json = GlueSchemaRegistry.Json.readTree(bytes)
    assert(json.get("at").asText == "1969-12-31T23:59:59.999999Z" && json.get("day").asText == "1900-01-01")
    assert(json.get("note").isNull && json.get("amount").isIntegralNumber && !json.get("ship").has("zip"))

    // A narrower struct in another order writes only its fields, each under its own name.
    val narrow =
      StructType(
        Seq(
          StructField("amount", IntegerType),
          StructField("id", StringType),
          StructField("note", StringType)
        )
      )
    val few = codec
      .encoder(Order, narrow)
      .encode(CatalystTypeConverters.createToCatalystConverter(narrow)(Row(4, "z", null)))
    assert(new String(few, UTF_8) == """{"amount":4,"id":"z","note":null}""")
    val bad = CatalystTypeConverters.createToCatalystConverter(narrow)(Row(4, null, null))
    assert(
      failure(
        codec.encoder(Order, narrow).encode(bad)
      ) == "Cannot write null to `value.id`: #/properties/id does not admit null"
    )
    val status = StructType(narrow.fields :+ StructField("status", StringType))
    val wrong = CatalystTypeConverters.createToCatalystConverter(status)(Row(4, "z", null, "LOST"))
    assert(
      failure(codec.encoder(Order, status).encode(wrong))
        .contains("`value.status` = 'LOST': not one of NEW, DONE")
    )
  }

  test("checkWritable names the field that does not fit") {
    // Each struct has the required `note` (which admits null) unless it says otherwise.
    def check(fields: (String, DataType)*) = {
      val all = if (fields.exists(_._1 == "note")) fields else fields :+ ("note" -> StringType)
      codec.checkWritable(StructType(all.map { case (n, t) => StructField(n, t) }), Order)
    }
    assert(check("id" -> StringType, "amount" -> LongType, "note" -> StringType).isEmpty)
    assert(check("id" -> StringType, "amount" -> ShortType, "tags" -> ArrayType(StringType)).isEmpty)
    val table = Seq(
      codec.checkWritable(
        StructType(Seq(StructField("id", StringType), StructField("amount", LongType))),
        Order
      ) ->
        "Cannot write `value`: no field for the required property `note` (#)",
      check("id" -> StringType, "amount" -> LongType, "nope" -> StringType) ->
        "Cannot write `value.nope`: the JSON Schema at # has no property nope",
      check("id" -> StringType, "note" -> StringType) ->
        "Cannot write `value`: no field for the required property `amount` (#)",
      check("id" -> StringType, "amount" -> DoubleType) ->
        "Cannot write `value.amount` of Spark type double as JSON Schema integer (#/properties/amount)",
      check("id" -> StringType, "amount" -> LongType, "at" -> StringType) ->
        "Cannot write `value.at` of Spark type string as JSON Schema string (date-time) (#/properties/at)",
      check(
        "id" -> StringType,
        "amount" -> LongType,
        "ship" -> StructType(Seq(StructField("zip", StringType)))
      ) ->
        "Cannot write `value.ship`: no field for the required property `city` (#/definitions/Address)",
      codec.checkWritable(
        LongType,
        Order
      ) -> "Cannot write `value` of Spark type bigint as JSON Schema object (#)"
    )
    for ((got, message) <- table) assert(got.contains(message), got)
  }
}
