package io.sparkkinesis.payload

import java.math.{BigDecimal => JBigDecimal}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}
import java.sql.{Date, Timestamp}
import java.time.Instant

import org.apache.spark.SPARK_VERSION
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.CatalystTypeConverters
import org.apache.spark.sql.catalyst.expressions.{Expression, Literal}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.sparkkinesis.testutil.ErrorChecks.assertCondition

/**
 * `dynamodb_changes` on the change records of src/test/resources/dynamodb-changes/, written after AWS's "Using Kinesis
 * Data Streams to capture changes to DynamoDB" (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/
 * kds.html) and the DynamoDB Streams API reference's Record, StreamRecord and AttributeValue pages (see the README
 * there). Most tests evaluate the expression directly; the first goes through SQL text in a session with the extension.
 */
class DynamoDbChangesSuite extends AnyFunSuite with BeforeAndAfterAll {

  private var spark: SparkSession = _

  override def beforeAll(): Unit =
    spark = SparkSession
      .builder()
      .master("local[1]")
      .appName("DynamoDbChangesSuite")
      .config("spark.ui.enabled", "false")
      // Generated code that does not compile fails the query instead of falling back to interpreted evaluation.
      .config("spark.sql.codegen.factoryMode", "CODEGEN_ONLY")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.driver.bindAddress", "127.0.0.1")
      .config("spark.sql.session.timeZone", "UTC")
      .config("spark.sql.extensions", "io.sparkkinesis.KinesisSqlExtensions")
      .getOrCreate()

  override def afterAll(): Unit =
    try if (spark != null) spark.stop()
    finally {
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    }

  private def fixture(name: String): String =
    new String(Files.readAllBytes(Paths.get(s"src/test/resources/dynamodb-changes/$name.json")), UTF_8)

  private val OrderSchema =
    "customer STRING, orderId BIGINT, total DECIMAL(38,18), photo BINARY, paid BOOLEAN, note STRING, " +
      "address STRUCT<city: STRING, zip: STRING, lines: ARRAY<STRING>>, items ARRAY<STRUCT<sku: STRING, qty: INT>>, " +
      "tags ARRAY<STRING>, ratings ARRAY<DECIMAL(3,1)>, thumbs ARRAY<BINARY>, attrs MAP<STRING, INT>, placed DATE, " +
      "shipped TIMESTAMP"

  /** The function built as the registry builds it, evaluated on one record (BINARY), as a Row. */
  private def decode(record: String, schema: String = OrderSchema): Row = {
    val args: Seq[Expression] = Literal(record.getBytes(UTF_8)) +: Option(schema).map(Literal(_)).toSeq
    val e = DynamoDbChanges.function.build(args).asInstanceOf[DynamoDbChanges].withTimeZone("UTC")
    CatalystTypeConverters.convertToScala(e.eval(), e.dataType).asInstanceOf[Row]
  }

  private def failure(record: String, schema: String = OrderSchema): Exception =
    intercept[Exception](decode(record, schema))

  private def bytes(b: Int*) = b.map(_.toByte).toArray

  /** An array field of a row as a List (Spark gives a mutable ArraySeq, not Scala 2.13's immutable Seq). */
  private def seq[T](row: Row, field: String): List[T] = row.getSeq[T](row.fieldIndex(field)).toList

  test("SQL text in a session with the extension: an INSERT with every attribute type, typed by the schema") {
    val row = spark
      .sql(s"SELECT dynamodb_changes(:data, '$OrderSchema') AS c", Map("data" -> fixture("insert")))
      .collect()
      .head
      .getStruct(0)
    assert(row.getAs[String]("eventName") == "INSERT")
    assert(row.getAs[String]("eventId") == "4b6d1e2a-0c2f-4a39-9d0e-1f5c7a9b3e01")
    assert(row.getAs[String]("tableName") == "Orders")
    assert(row.getAs[String]("awsRegion") == "eu-west-1")
    assert(row.getAs[Long]("sizeBytes") == 412L)
    assert(row.getAs[String]("principalId") == null)
    assert(row.getAs[Row]("oldImage") == null)
    // Milliseconds, told by magnitude (this record has no ApproximateCreationDateTimePrecision).
    assert(row.getAs[Timestamp]("approximateCreationTime").toInstant == Instant.ofEpochMilli(1722290155123L))
    val keys = row.getAs[Row]("keys")
    assert(keys.getAs[String]("customer") == "c#42" && keys.getAs[Long]("orderId") == 1001L)
    assert(keys.getAs[Any]("total") == null, "keys: the schema's fields that are not keys are null")

    val image = row.getAs[Row]("newImage")
    assert(image.getAs[String]("customer") == "c#42")
    assert(image.getAs[Long]("orderId") == 1001L)
    assert(image.getAs[JBigDecimal]("total") == new JBigDecimal("12345678901234567890.123456789012345678"))
    assert(image.getAs[Array[Byte]]("photo").toSeq == bytes(0, 1, 2, 255).toSeq)
    assert(image.getAs[Boolean]("paid"))
    assert(image.isNullAt(image.fieldIndex("note")))
    assert(image.getAs[Row]("address") == Row("Lyon", "69001", Seq("1 rue A", "bât. B")))
    assert(seq[Row](image, "items") == Seq(Row("A-1", 2), Row("B-7", 1)))
    assert(seq[String](image, "tags") == Seq("gift", "express"))
    assert(seq[JBigDecimal](image, "ratings") == Seq(new JBigDecimal("4.5"), new JBigDecimal("3.0")))
    assert(seq[Array[Byte]](image, "thumbs").map(_.toSeq) == Seq(bytes(1).toSeq, bytes(2, 3).toSeq))
    assert(image.getAs[Map[String, Int]]("attrs") == Map("weight" -> 12, "boxes" -> 3))
    assert(image.getAs[Date]("placed") == Date.valueOf("2024-07-29"))
    assert(image.getAs[Timestamp]("shipped").toInstant == Instant.parse("2024-07-29T21:55:55Z"))
  }

  test("MODIFY with a composite key: both images, and a time in microseconds") {
    val row = decode(fixture("modify"), "customer STRING, orderId INT, total DECIMAL(6,2), paid BOOLEAN")
    assert(row.getAs[String]("eventName") == "MODIFY")
    assert(row.getAs[Row]("keys") == Row("c#42", 1001, null, null))
    assert(row.getAs[Row]("newImage") == Row("c#42", 1001, new JBigDecimal("99.95"), true))
    assert(row.getAs[Row]("oldImage") == Row("c#42", 1001, new JBigDecimal("89.50"), false))
    val micros = Instant.ofEpochSecond(1722290156L, 123456000L)
    assert(row.getAs[Timestamp]("approximateCreationTime").toInstant == micros)
  }

  test("REMOVE has no new image; a TTL delete names DynamoDB as its principal") {
    val removed = decode(fixture("remove"), "customer STRING, orderId BIGINT")
    assert(removed.getAs[String]("eventName") == "REMOVE")
    assert(removed.getAs[Row]("newImage") == null)
    assert(removed.getAs[Row]("oldImage") == Row("c#42", 1001L))
    assert(removed.getAs[String]("principalId") == null)
    assert(
      removed.getAs[Timestamp]("approximateCreationTime").toInstant == Instant.ofEpochMilli(1722290157000L)
    )

    val expired = decode(fixture("ttl-remove"), "customer STRING, orderId BIGINT, expiresAt BIGINT")
    assert(expired.getAs[String]("principalId") == "dynamodb.amazonaws.com")
    assert(expired.getAs[Row]("keys") == Row("c#7", 3L, null))
    assert(
      intercept[Exception](decode(fixture("ttl-remove"), "expiresAt TIMESTAMP")).getMessage
        .contains("OldImage.expiresAt"),
      "an N does not become a TIMESTAMP"
    )
  }

  test(
    "the time's precision: the precision field wins, else seconds, milliseconds or microseconds by magnitude"
  ) {
    def time(value: String, precision: String = null) = {
      val p = Option(precision).fold("")(p => s""", "ApproximateCreationDateTimePrecision": "$p"""")
      val record = s"""{"eventName": "INSERT", "dynamodb": {"ApproximateCreationDateTime": $value$p}}"""
      decode(record, "id STRING").getAs[Timestamp]("approximateCreationTime").toInstant
    }
    assert(time("1722290155") == Instant.ofEpochSecond(1722290155L))
    assert(time("1722290155.5") == Instant.ofEpochMilli(1722290155500L))
    assert(time("1722290155123") == Instant.ofEpochMilli(1722290155123L))
    assert(time("1722290155123456") == Instant.ofEpochSecond(1722290155L, 123456000L))
    assert(time("1722290155123", "MICROSECOND") == Instant.ofEpochSecond(1722290L, 155123000L))
    assert(failure("""{"eventName": "INSERT", "dynamodb": {"ApproximateCreationDateTime": 1,
        "ApproximateCreationDateTimePrecision": "NANOSECOND"}}""").getMessage.contains("NANOSECOND"))
    assert(
      failure("""{"eventName": "INSERT", "dynamodb": {"ApproximateCreationDateTime": 1e30}}""").getMessage
        .contains("out of range")
    )
  }

  test("numbers convert exactly or fail, naming the field, the value and the type") {
    def n(value: String, schema: String) =
      decode(s"""{"eventName": "INSERT", "dynamodb": {"NewImage": {"x": {"N": "$value"}}}}""", schema)
        .getAs[Row]("newImage")
        .get(0)
    assert(n("1E+2", "x INT") == 100)
    assert(n("-128", "x TINYINT") == (-128).toByte)
    assert(n("0.10", "x DECIMAL(3,2)") == new JBigDecimal("0.10"))
    assert(n("12.5", "x STRING") == "12.5")
    assert(n("12.5", "x DOUBLE") == 12.5)
    val cases = Seq(
      ("12.5", "x INT", "INT"),
      ("128", "x TINYINT", "TINYINT"),
      ("9223372036854775808", "x BIGINT", "BIGINT"),
      ("1.005", "x DECIMAL(5,2)", "DECIMAL(5,2)"),
      ("1000", "x DECIMAL(5,2)", "DECIMAL(5,2)"),
      ("1E+125", "x FLOAT", "FLOAT")
    )
    cases.foreach { case (value, schema, sqlType) =>
      val e = assertCondition(
        failure(s"""{"eventName": "MODIFY", "dynamodb": {"NewImage": {"x": {"N": "$value"}}}}""", schema),
        "KINESIS_PAYLOAD_UNDECODABLE"
      )
      assert(e.getMessage.contains(s"""NewImage.x = {"N": "$value"} to $sqlType"""), e.getMessage)
      assert(e.getMessage.contains("does not fit exactly"), e.getMessage)
    }
  }

  test("a value whose type does not fit its field fails with the field's path, the value and the type") {
    val record = fixture("insert")
    val e = assertCondition(failure(record, "address STRUCT<city: INT>"), "KINESIS_PAYLOAD_UNDECODABLE")
    assert(e.getMessage.contains("""NewImage.address.city = {"S": "Lyon"} to INT"""), e.getMessage)
    assert(e.getMessage.contains("STRING, DATE, TIMESTAMP or TIMESTAMP_NTZ"), e.getMessage)
    assert(failure(record, "tags ARRAY<INT>").getMessage.contains("NewImage.tags[0]"))
    assert(failure(record, "placed TIMESTAMP, customer DATE").getMessage.contains("Keys.customer"))
    assert(failure(record, "paid STRING").getMessage.contains("BOOLEAN"))
  }

  test("malformed records fail naming what is wrong") {
    def message(record: String) =
      assertCondition(failure(record, "id STRING"), "KINESIS_PAYLOAD_UNDECODABLE").getMessage
    assert(message("not json").contains("not JSON"))
    assert(message("[1]").contains("not a JSON object"))
    assert(message("""{"eventName": "INSERT"}""").contains("no dynamodb object"))
    assert(
      message("""{"eventName": "UPSERT", "dynamodb": {}}""").contains("UPSERT, not INSERT, MODIFY or REMOVE")
    )
    assert(message("""{"eventName": "INSERT", "eventSource": "aws:s3", "dynamodb": {}}""").contains("aws:s3"))
    val badValue = """{"eventName": "INSERT", "dynamodb": {"NewImage": {"id": %s}}}"""
    assert(message(badValue.format("\"x\"")).contains("not a DynamoDB attribute value"))
    assert(message(badValue.format("""{"X": "1"}""")).contains("unknown attribute type X"))
    assert(message(badValue.format("""{"S": 1}""")).contains("does not have the form its type S needs"))
    assert(message(badValue.format("""{"N": "abc"}""")).contains("not a number"))
    assert(failure(badValue.format("""{"B": "**"}"""), "id BINARY").getMessage.contains("not base64"))
  }

  test("bad arguments fail when the function is built, naming the function") {
    def message(args: Expression*) = assertCondition(
      intercept[Exception](DynamoDbChanges.function.build(args)),
      "KINESIS_FUNCTION_INVALID_ARGUMENT"
    ).getMessage
    val data = Literal("{}")
    assert(message().contains("takes 1 to 2 arguments, got 0"))
    assert(message(data, Literal("id STRING"), Literal("x")).contains("got 3"))
    assert(message(data, Literal("id STRING,, x")).contains("is not a list of fields"))
    assert(message(data, Literal(1)).contains("must be a constant string"))
    assert(message(data, Literal("id STRING, m MAP<INT, STRING>")).contains("field m of the schema"))
    assert(message(data, Literal("id STRING, v INTERVAL DAY")).contains("field v of the schema"))
    val wrongInput = intercept[Exception](spark.sql("SELECT dynamodb_changes(1, 'id STRING')").collect())
    assert(
      wrongInput.getMessage.contains("dynamodb_changes takes BINARY or STRING data, not int"),
      wrongInput
    )
    val json = """{"type":"struct","fields":[{"name":"id","type":"string","nullable":true,"metadata":{}}]}"""
    assert(DynamoDbChanges.function.build(Seq(data, Literal(json))).dataType.toString.contains("id"))
  }

  test("without a schema the images are untyped: VARIANT on Spark 4, a JSON string on Spark 3.5") {
    val data = Map("data" -> fixture("insert"))
    if (SPARK_VERSION.startsWith("3.")) {
      val c = spark.sql("SELECT dynamodb_changes(:data) AS c", data).collect().head.getStruct(0)
      assert(c.getAs[String]("keys") == """{"customer":"c#42","orderId":1001}""")
      val image = c.getAs[String]("newImage")
      Seq(
        """"total":12345678901234567890.123456789012345678""",
        """"big":1E+125""",
        """"photo":"AAEC/w==""",
        """"note":null""",
        """"tags":["gift","express"]""",
        """"ratings":[4.5,3]""",
        """"address":{"city":"Lyon","zip":"69001","lines":["1 rue A","bât. B"]}"""
      ).foreach(part => assert(image.contains(part), image))
    } else {
      val row = spark
        .sql(
          """SELECT variant_get(c.keys, '$.orderId', 'bigint'), schema_of_variant(c.newImage),
            |  variant_get(c.newImage, '$.total', 'string'), variant_get(c.newImage, '$.big', 'string'),
            |  variant_get(c.newImage, '$.photo', 'binary'), variant_get(c.newImage, '$.address.lines[1]', 'string'),
            |  variant_get(c.newImage, '$.ratings[0]', 'decimal(2,1)'), variant_get(c.newImage, '$.paid', 'boolean'),
            |  variant_get(c.newImage, '$.thumbs[1]', 'binary'), variant_get(c.newImage, '$.note', 'string'), c.oldImage
            |FROM (SELECT dynamodb_changes(:data) AS c)""".stripMargin,
          data
        )
        .collect()
        .head
      assert(row.getLong(0) == 1001L)
      Seq("orderId: BIGINT", "total: DECIMAL(38,18)", "photo: BINARY", "tags: ARRAY<STRING>", "paid: BOOLEAN")
        .foreach(part => assert(row.getString(1).contains(part), row.getString(1)))
      assert(row.getString(2) == "12345678901234567890.123456789012345678")
      assert(row.getString(3) == "1E+125", "an N beyond VARIANT's decimal stays its text")
      assert(row.getAs[Array[Byte]](4).toSeq == bytes(0, 1, 2, 255).toSeq)
      assert(row.getString(5) == "bât. B")
      assert(row.getDecimal(6) == new JBigDecimal("4.5"))
      assert(row.getBoolean(7))
      assert(row.getAs[Array[Byte]](8).toSeq == bytes(2, 3).toSeq)
      assert(row.isNullAt(9) && row.isNullAt(10))
    }
  }
}
