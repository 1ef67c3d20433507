package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream
import java.util.UUID

import scala.jdk.CollectionConverters._

import org.apache.avro.Schema
import org.apache.avro.generic.{GenericData, GenericDatumReader, GenericDatumWriter, GenericRecord}
import org.apache.avro.io.{DecoderFactory, EncoderFactory}
import org.apache.spark.SparkException
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.types.{BinaryType, StructField, StructType}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.sparkkinesis.config.{AwsClientConfig, CredentialsConfig, GsrCompression, GsrDataFormat}
import io.sparkkinesis.errors.KinesisConnectorException
import io.sparkkinesis.testutil.Moto

/**
 * The Glue Schema Registry functions against moto's Glue API: the framing, the registry calls, and decoding and
 * encoding through a local Spark session with the connector's SQL extension.
 */
class GlueSchemaRegistrySuite extends AnyFunSuite with BeforeAndAfterAll {
  private var spark: SparkSession = _
  private val registryName = s"suite-${UUID.randomUUID().toString.take(8)}"

  private lazy val endpoint = AwsClientConfig(
    region = "us-east-1",
    endpointUrl = Moto.endpoint,
    numRetries = 2,
    retryBaseDelayMs = 10,
    retryMaxDelayMs = 100,
    credentials =
      CredentialsConfig(accessKeyId = Some("test-access-key"), secretKey = Some("test-secret-key"))
  )
  private val streams = new GsrFrame.ZlibStreams

  private val V1 =
    """{"type":"record","name":"Order","namespace":"shop","fields":[
      |{"name":"id","type":"string"},{"name":"amount","type":"long"},{"name":"note","type":["null","string"],"default":null}]}""".stripMargin

  // v2: `note` removed, `currency` added with a default.
  private val V2 =
    """{"type":"record","name":"Order","namespace":"shop","fields":[
      |{"name":"id","type":"string"},{"name":"amount","type":"long"},{"name":"currency","type":"string","default":"EUR"}]}""".stripMargin

  private def options(extra: (String, String)*): String =
    (Seq(
      "kinesis.region" -> "us-east-1",
      "kinesis.credentialProviderClass" -> "io.sparkkinesis.credentials.NoArgProvider",
      "kinesis.schemaRegistry.endpointUrl" -> Moto.endpoint,
      "kinesis.schemaRegistry.registryName" -> registryName
    ) ++ extra).map { case (k, v) => s"'$k', '${v.replace("'", "\\'")}'" }.mkString("map(", ", ", ")")

  private def registry[T](use: SchemaRegistry => T): T = {
    val lease = GlueSchemaRegistry.acquire(endpoint)
    try use(lease.value)
    finally lease.close()
  }

  private def avro(definition: String, values: (String, Any)*): Array[Byte] = {
    val schema = new Schema.Parser().parse(definition)
    val record = new GenericData.Record(schema)
    values.foreach { case (k, v) => record.put(k, v) }
    val out = new ByteArrayOutputStream()
    val encoder = EncoderFactory.get().binaryEncoder(out, null)
    new GenericDatumWriter[GenericRecord](schema).write(record, encoder)
    encoder.flush()
    out.toByteArray
  }

  private def records(name: String, rows: Seq[Array[Byte]]): Unit =
    spark
      .createDataFrame(rows.map(Row(_)).asJava, StructType(Seq(StructField("data", BinaryType))))
      .createOrReplaceTempView(name)

  private var v1Id: UUID = _
  private var v2Id: UUID = _

  override def beforeAll(): Unit = {
    spark = SparkSession
      .builder()
      .master("local[1]")
      .appName("GlueSchemaRegistrySuite")
      .config("spark.ui.enabled", "false")
      // Generated code that does not compile fails the query instead of falling back to interpreted evaluation.
      .config("spark.sql.codegen.factoryMode", "CODEGEN_ONLY")
      .config("spark.driver.host", "127.0.0.1")
      .config("spark.driver.bindAddress", "127.0.0.1")
      .config("spark.sql.extensions", "io.sparkkinesis.KinesisSqlExtensions")
      .getOrCreate()
    registry { r =>
      val create = GlueSchemaRegistry.Json.createObjectNode().put("RegistryName", registryName)
      r.asInstanceOf[GlueSchemaRegistry].call("CreateRegistry", create)
      v1Id = r.register(registryName, "orders", V1, GsrDataFormat.Avro)
      v2Id = r.register(registryName, "orders", V2, GsrDataFormat.Avro)
    }
  }

  override def afterAll(): Unit =
    try if (spark != null) spark.stop()
    finally {
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    }

  private def failure(f: => Any): Throwable with KinesisConnectorException = {
    val e = intercept[Exception](f)
    Iterator
      .iterate[Throwable](e)(_.getCause)
      .takeWhile(_ != null)
      .collectFirst { case k: Throwable with KinesisConnectorException => k }
      .getOrElse(fail(s"no connector error in $e"))
  }

  // ---------------------------------------------------------------- the framing

  test("a frame is the version byte, the compression byte, the version id and the payload, zlib or not") {
    val id = UUID.fromString("0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9")
    val payload = ("order " * 50).getBytes("UTF-8")
    val plain = GsrFrame.frame(id, payload, GsrCompression.None, streams)
    assert(plain.take(2).toSeq == Seq[Byte](3, 0) && plain.length == 18 + payload.length)
    assert(
      plain.slice(2, 18).toSeq == Seq(0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5,
        0xc6, 0xd7, 0xe8, 0xf9).map(_.toByte)
    )
    val zlib = GsrFrame.frame(id, payload, GsrCompression.Zlib, streams)
    assert(zlib(1) == 5 && zlib.length < plain.length)
    for (framed <- Seq(plain, zlib)) {
      val f = GsrFrame.parse(framed, streams).toOption.get
      assert(f.schemaVersion == id && f.payload.slice(f.offset, f.offset + f.length).toSeq == payload.toSeq)
    }
    assert(GsrFrame.parse(Array[Byte](3, 0, 1), streams).left.exists(_.contains("fewer than the 18")))
    assert(
      GsrFrame
        .parse(plain.updated(0, 2.toByte), streams)
        .left
        .exists(_.contains("0x02, not the version byte"))
    )
    assert(
      GsrFrame.parse(plain.updated(1, 1.toByte), streams).left.exists(_.contains("compression byte is 0x01"))
    )
    assert(GsrFrame.parse(zlib.take(zlib.length - 4), streams).isLeft, "a truncated zlib payload")
    assert(GsrFrame.parse(zlib, streams).isRight, "the streams are reset after a truncated payload")
    streams.close()
    assert(GsrFrame.parse(zlib, streams).isRight, "closed streams are made anew")
  }

  // ---------------------------------------------------------------- the registry calls

  test("the registry client finds versions by id, number and definition, and registers new ones") {
    registry { r =>
      assert(r.byId(v1Id).map(_.definition).contains(V1))
      assert(r.byNumber(registryName, "orders", None).map(_.id).contains(v2Id), "the latest")
      assert(r.byNumber(registryName, "orders", Some(1L)).map(_.id).contains(v1Id))
      assert(r.byDefinition(registryName, "orders", V2).contains(v2Id))
      assert(r.byDefinition(registryName, "orders", V2.replace("EUR", "USD")).isEmpty)
      assert(r.byId(UUID.randomUUID()).isEmpty)
      assert(r.byNumber(registryName, "no-such-schema", None).isEmpty)
      val e = failure(r.register("no-such-registry", "x", V1, GsrDataFormat.Avro))
      assert(e.getCondition == "KINESIS_SCHEMA_REGISTRY_FAILED", e.getMessage)
    }
  }

  // ---------------------------------------------------------------- decoding

  test(
    "each record is decoded with its own writer version into the latest version, zlib or not, also in SQL"
  ) {
    val v1 = avro(V1, "id" -> "a", "amount" -> 5L, "note" -> "first")
    val v2 = avro(V2, "id" -> "b", "amount" -> 7L, "currency" -> "USD")
    records(
      "mixed",
      Seq(
        GsrFrame.frame(v1Id, v1, GsrCompression.None, streams),
        GsrFrame.frame(v2Id, v2, GsrCompression.Zlib, streams)
      )
    )
    val got = spark
      .sql(
        s"SELECT o.id, o.amount, o.currency FROM (SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaName" -> "orders")}) AS o FROM mixed)"
      )
      .collect()
      .map(r => (r.getString(0), r.getLong(1), r.getString(2)))
      .toSeq
    assert(got == Seq(("a", 5L, "EUR"), ("b", 7L, "USD")), "v1's missing currency takes v2's default")
    val asV1 = spark
      .sql(
        s"SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaName" -> "orders", "kinesis.schemaRegistry.schemaVersion" -> "1")}) AS o FROM mixed"
      )
    assert(asV1.schema.head.dataType.asInstanceOf[StructType].fieldNames.toSeq == Seq("id", "amount", "note"))
    assert(asV1.collect().map(_.getStruct(0).getString(2)).toSeq == Seq("first", null), "v2 has no note")
  }

  test(
    "FAILFAST names what is wrong with a record; PERMISSIVE gives null, and the reason in an error field"
  ) {
    val good = GsrFrame.frame(v1Id, avro(V1, "id" -> "a", "amount" -> 1L), GsrCompression.None, streams)
    val unknown =
      GsrFrame.frame(UUID.randomUUID(), avro(V1, "id" -> "a", "amount" -> 1L), GsrCompression.None, streams)
    val corrupt = GsrFrame.frame(v1Id, Array[Byte](2, 'x'.toByte), GsrCompression.None, streams)
    val plain = "a plain JSON record, not framed".getBytes("UTF-8")
    def decodeOne(bytes: Array[Byte], extra: (String, String)*) = {
      records("one", Seq(bytes))
      spark
        .sql(
          s"SELECT from_glue_schema_registry(data, ${options(("kinesis.schemaRegistry.schemaName" -> "orders") +: extra: _*)}) FROM one"
        )
        .collect()
        .head
    }
    assert(decodeOne(good).getStruct(0).getString(0) == "a")
    val cases = Seq(
      unknown -> ("UNKNOWN_SCHEMA_VERSION", "is not in the Glue Schema Registry"),
      corrupt -> ("CORRUPT_PAYLOAD", "cannot decode a record written with schema version"),
      plain -> ("BAD_HEADER", "not the version byte 0x03")
    )
    for ((bytes, (sub, text)) <- cases) {
      val e = failure(decodeOne(bytes))
      assert(
        e.getCondition == "KINESIS_PAYLOAD_UNDECODABLE" && e.getMessage.contains(text),
        s"$sub: ${e.getMessage}"
      )
      assert(decodeOne(bytes, "kinesis.schemaRegistry.mode" -> "permissive").isNullAt(0), sub)
      val withError = decodeOne(
        bytes,
        "kinesis.schemaRegistry.mode" -> "PERMISSIVE",
        "kinesis.schemaRegistry.errorField" -> "_error"
      ).getStruct(0)
      assert(withError.isNullAt(0) && withError.getString(withError.fieldIndex("_error")).contains(text), sub)
    }
    val fine = decodeOne(
      good,
      "kinesis.schemaRegistry.mode" -> "PERMISSIVE",
      "kinesis.schemaRegistry.errorField" -> "e"
    )
    assert(fine.getStruct(0).getString(0) == "a" && fine.getStruct(0).isNullAt(3))
  }

  test("a reader schema that cannot read a writer version fails naming both; bad calls fail at analysis") {
    // A reader that requires a field v1 lacks and gives it no default cannot read v1 records.
    val strict = V2.replace(""","default":"EUR"""", "")
    records(
      "v1only",
      Seq(GsrFrame.frame(v1Id, avro(V1, "id" -> "a", "amount" -> 1L), GsrCompression.None, streams))
    )
    val e = failure(
      spark
        .sql(
          s"SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaDefinition" -> strict)}) FROM v1only"
        )
        .collect()
    )
    assert(
      e.getCondition == "KINESIS_PAYLOAD_UNDECODABLE" && e.getMessage.contains(v1Id.toString),
      e.getMessage
    )
    val missing = failure(
      spark.sql(
        s"SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaName" -> "no-such-schema")}) FROM v1only"
      )
    )
    assert(
      missing.getCondition == "KINESIS_SCHEMA_NOT_FOUND" && missing.getMessage.contains("no-such-schema")
    )
    val noSchema = failure(spark.sql(s"SELECT from_glue_schema_registry(data, ${options()}) FROM v1only"))
    assert(noSchema.getMessage.contains("kinesis.schemaRegistry.schemaName"), noSchema.getMessage)
    val unknownOption = failure(
      spark.sql(
        s"SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaName" -> "orders", "kinesis.streamName" -> "s")}) FROM v1only"
      )
    )
    assert(unknownOption.getMessage.contains("kinesis.streamName"), unknownOption.getMessage)
    val notMap = failure(spark.sql("SELECT from_glue_schema_registry(data, 'orders') FROM v1only"))
    assert(notMap.getCondition == "KINESIS_FUNCTION_INVALID_ARGUMENT", notMap.getMessage)
  }

  // ---------------------------------------------------------------- encoding

  test("encoding finds the version of a registered definition, registers a new one only when allowed") {
    records("none", Seq(Array[Byte](0)))
    val row = "named_struct('id', 'z', 'amount', 9L, 'currency', 'GBP')"
    val framed = spark
      .sql(
        s"SELECT to_glue_schema_registry($row, ${options("kinesis.schemaRegistry.schemaName" -> "orders")}) FROM none"
      )
      .collect()
      .head
      .getAs[Array[Byte]](0)
    val parsed = GsrFrame.parse(framed, streams).toOption.get
    assert(parsed.schemaVersion == v2Id, "the latest version")
    val decoded = new GenericDatumReader[GenericRecord](new Schema.Parser().parse(V2))
      .read(null, DecoderFactory.get().binaryDecoder(parsed.payload, parsed.offset, parsed.length, null))
    assert(
      decoded.get("id").toString == "z" && decoded
        .get("amount") == 9L && decoded.get("currency").toString == "GBP"
    )

    val v3 = V2.replace("EUR", "CHF")
    val refused = failure(
      spark.sql(
        s"SELECT to_glue_schema_registry($row, ${options("kinesis.schemaRegistry.schemaName" -> "orders", "kinesis.schemaRegistry.schemaDefinition" -> v3)}) FROM none"
      )
    )
    assert(refused.getCondition == "KINESIS_SCHEMA_NOT_FOUND" && refused.getMessage.contains("autoRegister"))
    val registered = spark
      .sql(s"SELECT to_glue_schema_registry($row, ${options(
          "kinesis.schemaRegistry.schemaName" -> "orders",
          "kinesis.schemaRegistry.schemaDefinition" -> v3,
          "kinesis.schemaRegistry.autoRegister" -> "true",
          "kinesis.schemaRegistry.compression" -> "ZLIB"
        )}) FROM none")
      .collect()
      .head
      .getAs[Array[Byte]](0)
    val v3Id = GsrFrame.parse(registered, streams).toOption.get.schemaVersion
    assert(registered(1) == 5 && registry(_.byDefinition(registryName, "orders", v3)).contains(v3Id))

    val wrong = failure(
      spark.sql(
        s"SELECT to_glue_schema_registry(named_struct('id', 1), ${options("kinesis.schemaRegistry.schemaName" -> "orders")}) FROM none"
      )
    )
    assert(wrong.getCondition == "KINESIS_FUNCTION_INVALID_ARGUMENT", wrong.getMessage)
  }

  test("JSON Schema records decode by field name, and encode as the record's JSON text") {
    val schema =
      """{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{
        |"id":{"type":"string"},"amount":{"type":"integer"},"at":{"type":"string","format":"date-time"},
        |"tags":{"type":"array","items":{"type":"string"}}},"required":["id","amount"]}""".stripMargin
    val id = registry(_.register(registryName, "orders-json", schema, GsrDataFormat.Json))
    val texts = Seq(
      """{"id":"a","amount":5,"at":"2024-01-02T03:04:05Z","tags":["x"]}""",
      """{"extra":{"n":[1]},"amount":7,"id":"b"}"""
    )
    records(
      "json",
      texts.zip(Seq(GsrCompression.None, GsrCompression.Zlib)).map { case (t, c) =>
        GsrFrame.frame(id, t.getBytes("UTF-8"), c, streams)
      }
    )
    val opts = options("kinesis.schemaRegistry.schemaName" -> "orders-json")
    val decoded = s"from_glue_schema_registry(data, $opts)"
    val read = spark
      .sql(s"SELECT o.id, o.amount, CAST(o.at AS LONG), o.tags FROM (SELECT $decoded AS o FROM json)")
      .collect()
      .map(r => (r.getString(0), r.getLong(1), r.get(2), Option(r.getSeq[String](3))))
      .toSeq
    val at = java.time.Instant.parse("2024-01-02T03:04:05Z").getEpochSecond
    assert(read == Seq(("a", 5L, at, Some(Seq("x"))), ("b", 7L, null, None)))

    val encoded = spark
      .sql(s"SELECT to_glue_schema_registry($decoded, $opts) FROM json")
      .collect()
      .map(_.getAs[Array[Byte]](0))
      .toSeq
    val payloads = encoded.map { e =>
      val f = GsrFrame.parse(e, streams).toOption.get
      assert(f.schemaVersion == id)
      new String(f.payload, f.offset, f.length, "UTF-8")
    }
    // Absent optional values are left out: the schema does not let them be null.
    assert(payloads == Seq(texts.head, """{"id":"b","amount":7}"""))
    records("jsonAgain", encoded)
    val again = spark
      .sql(s"SELECT from_glue_schema_registry(data, $opts).id FROM jsonAgain")
      .collect()
      .map(_.getString(0))
    assert(again.toSeq == Seq("a", "b"))
  }

  test("computed values are encoded and decoded in generated code, non-nullable inputs included") {
    // Columns that are never null and not constant: the functions run inside whole-stage generated code.
    val values = spark
      .range(3)
      .selectExpr(
        "named_struct('id', concat('r-', cast(id AS STRING)), 'amount', id, 'currency', 'EUR') AS v"
      )
    values.createOrReplaceTempView("computed")
    val roundTrip = spark
      .sql(s"""SELECT from_glue_schema_registry(to_glue_schema_registry(v, ${options(
          "kinesis.schemaRegistry.schemaName" -> "orders"
        )}), ${options("kinesis.schemaRegistry.schemaName" -> "orders")}).id AS id FROM computed""")
      .collect()
      .map(_.getString(0))
      .toSeq
    assert(roundTrip == Seq("r-0", "r-1", "r-2"))
  }

  test("the functions take no secret option, and their plan strings name the schema, never the credentials") {
    records("plan", Seq(Array[Byte](0)))
    val given = failure(
      spark.sql(
        s"SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaName" -> "orders", "kinesis.awsAccessKeyId" -> "AKIAEXAMPLE", "kinesis.awsSecretKey" -> "wJalrXUtnFEMI")}) FROM plan"
      )
    )
    assert(
      given.getMessage.contains("takes no secret") && given.getMessage.matches(
        "(?s).*kinesis[.]aws(AccessKeyId|SecretKey).*"
      )
    )
    assert(!given.getMessage.contains("wJalrXUtnFEMI") && !given.getMessage.contains("AKIAEXAMPLE"))
    val secret = "noarg-secret" // what the provider class returns
    val df = spark.sql(
      s"SELECT from_glue_schema_registry(data, ${options("kinesis.schemaRegistry.schemaName" -> "orders", "kinesis.schemaRegistry.mode" -> "PERMISSIVE")}) AS o FROM plan"
    )
    val plans =
      Seq(df.queryExecution.analyzed, df.queryExecution.optimizedPlan, df.queryExecution.executedPlan)
        .map(_.toString) :+ df.queryExecution.toString
    plans.foreach(p => assert(!p.contains(secret), p))
    assert(plans.head.contains("schema 'orders'"), plans.head)
  }
}
