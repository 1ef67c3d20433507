package io.sparkkinesis.config

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
    assert(error.getMessage.contains("'orders' is listed twice"))
  }

  test("SubscribeToShard reads several streams: one consumer name for all, or one consumer ARN per stream") {
    def efo(streams: String, consumer: (String, String)) = SourceConfig.parse(
      Map(
        "kinesis.streamName" -> streams,
        "kinesis.region" -> "us-east-1",
        "kinesis.consumerType" -> "SubscribeToShard",
        consumer
      ),
      () => None
    )
    val named = efo("orders,clicks", "kinesis.consumerName" -> "reader").readMode
    assert(named.describe == "SubscribeToShard, consumerName=reader")
    val arn = (s: String) => s"arn:aws:kinesis:us-east-1:123456789012:stream/$s/consumer/shared:1700000000"
    val given = efo("orders,clicks", "kinesis.consumerArn" -> s"${arn("clicks")} , ${arn("orders")}").readMode
    given match {
      case ReadMode.FanOut(c) =>
        assert(
          c.consumerName.isEmpty && c.consumerArns == Map(
            "orders" -> arn("orders"),
            "clicks" -> arn("clicks")
          )
        )
      case other => fail(other.toString)
    }
  }
}
