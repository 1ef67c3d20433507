package io.sparkkinesis

import scala.jdk.CollectionConverters._

import io.sparkkinesis.credentials.{NoArgProvider, NotAProvider}
import io.sparkkinesis.source.KinesisScan
import io.sparkkinesis.testutil.ErrorChecks.optionErrorMessage
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.scalatest.funsuite.AnyFunSuite

/** The provider's checks when a query is defined, beyond option parsing: the custom credentials class is loaded. */
class KinesisSourceProviderSuite extends AnyFunSuite {
  private val region = () => Some("us-east-1")
  private val read = Map("kinesis.streamName" -> "orders")
  private val write = Map("kinesis.streamName" -> "orders", "kinesis.sink.flushWaitTimeMs" -> "1000")

  private def failure(run: => Any) = optionErrorMessage(intercept[IllegalArgumentException](run))

  test(
    "a custom credentials class that is missing or of the wrong type fails the read's and the write's definition"
  ) {
    val missing = Map("kinesis.credentialProviderClass" -> "com.example.Missing")
    assert(
      failure(KinesisSourceProvider.parse(read ++ missing, region))
        .contains("'com.example.Missing' was not found")
    )
    assert(failure(KinesisSourceProvider.parseSink(write ++ missing, region)).contains("was not found"))
    val wrong =
      Map("kinesis.credentialProviderClass" -> classOf[NotAProvider].getName, "kinesis.region" -> "us-east-1")
    assert(
      failure(KinesisSourceProvider.validate(Map("kinesis.streamName" -> "orders") ++ wrong))
        .contains("does not implement")
    )
  }

  test("a custom credentials class that loads is accepted, for reads and writes") {
    val good = Map("kinesis.credentialProviderClass" -> classOf[NoArgProvider].getName)
    val source = KinesisSourceProvider.parse(read ++ good, region)
    assert(source.client.credentials.providerClass.contains(classOf[NoArgProvider].getName))
    assert(KinesisSourceProvider.parseSink(write ++ good, region).client.credentials.providerClass.nonEmpty)
  }

  test("a load() checks its options once: the schema, the table and its scan share one parse") {
    val options = (read + ("kinesis.region" -> "us-east-1")).asJava
    val provider = new SparkKinesisProvider
    val schema = provider.inferSchema(new CaseInsensitiveStringMap(options))
    val table = provider.getTable(schema, Array.empty, options).asInstanceOf[KinesisTable]
    val again = provider.getTable(schema, Array.empty, options).asInstanceOf[KinesisTable]
    val config = table.checked.source.get
    assert(again.checked eq table.checked)
    assert(
      table
        .newScanBuilder(new CaseInsensitiveStringMap(options))
        .build()
        .asInstanceOf[KinesisScan]
        .config eq config
    )
    assert(table.name() == "aws-kinesis[orders]" && table.schema() == schema)
    // Other options are checked anew.
    val other = provider.getTable(schema, Array.empty, (read + ("kinesis.region" -> "eu-west-1")).asJava)
    assert(other.asInstanceOf[KinesisTable].checked.source.get.client.region == "eu-west-1")
  }

  test("options of both sides are checked for keys and values, and each side refuses the other's") {
    val mixed = read ++ write ++ Map("kinesis.region" -> "us-east-1", "kinesis.startingPosition" -> "LATEST")
    val checked = KinesisSourceProvider.validate(mixed)
    assert(checked.source.isEmpty && checked.sink.isEmpty && checked.streamName == "orders")
    val table = new KinesisTable(checked, mixed)
    assert(
      failure(table.newScanBuilder(new CaseInsensitiveStringMap(mixed.asJava)))
        .contains("kinesis.sink.flushWaitTimeMs")
    )
    assert(
      failure(KinesisSourceProvider.validate(mixed + ("kinesis.maxFetchRate" -> "0")))
        .contains("kinesis.maxFetchRate")
    )
  }
}
