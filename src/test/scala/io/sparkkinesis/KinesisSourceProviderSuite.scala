package io.sparkkinesis

import scala.jdk.CollectionConverters._

import io.sparkkinesis.credentials.{NoArgProvider, NotAProvider}
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
    val both = new CaseInsensitiveStringMap((Map("kinesis.streamName" -> "orders") ++ wrong).asJava)
    assert(failure(KinesisSourceProvider.validate(both)).contains("does not implement"))
  }

  test("a custom credentials class that loads is accepted, for reads and writes") {
    val good = Map("kinesis.credentialProviderClass" -> classOf[NoArgProvider].getName)
    val source = KinesisSourceProvider.parse(read ++ good, region)
    assert(source.client.credentials.providerClass.contains(classOf[NoArgProvider].getName))
    assert(KinesisSourceProvider.parseSink(write ++ good, region).client.credentials.providerClass.nonEmpty)
  }
}
