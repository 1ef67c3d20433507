package io.sparkkinesis.config

import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.scalatest.funsuite.AnyFunSuite

class StreamListSuite extends AnyFunSuite {

  private def parse(streams: String) =
    SourceConfig.parse(Map("kinesis.streamName" -> streams, "kinesis.region" -> "us-east-1"), () => None)

  test("one stream name or a comma-separated list, spaces around names ignored") {
    assert(parse("orders").streamNames == Seq("orders"))
    assert(parse("orders, clicks ,audit.v2").streamNames == Seq("orders", "clicks", "audit.v2"))
  }

  test("an empty or invalid name in the list fails, naming the option and the name") {
    val empty = intercept[IllegalArgumentException](parse("orders,,clicks"))
    assert(
      empty.getMessage.contains("kinesis.streamName") && empty.getMessage.contains("'' is not a stream name")
    )
    val bad = intercept[IllegalArgumentException](parse("orders,cl icks"))
    assert(bad.getMessage.contains("'cl icks' is not a stream name"))
  }

  test("a stream listed twice fails") {
    val error = intercept[IllegalArgumentException](parse("orders,clicks,orders"))
    assert(error.getMessage.contains("stream 'orders' is listed twice"))
  }

  test(
    "SubscribeToShard with several streams fails when the query is defined; with one stream it is accepted"
  ) {
    def efo(streams: String) = SourceConfig.parse(
      Map(
        "kinesis.streamName" -> streams,
        "kinesis.region" -> "us-east-1",
        "kinesis.consumerType" -> "SubscribeToShard",
        "kinesis.consumerName" -> "reader"
      ),
      () => None
    )
    val error = intercept[IllegalArgumentException](efo("orders,clicks"))
    assertCondition(error, "KINESIS_UNSUPPORTED_OPTION")
    assert(error.getMessage.contains("SubscribeToShard with several streams is not supported yet"))
    assert(error.getMessage.contains("'orders,clicks'") && error.getMessage.contains("kinesis.consumerType"))
    assert(efo("orders").readMode.consumerType == "SubscribeToShard")
  }
}
