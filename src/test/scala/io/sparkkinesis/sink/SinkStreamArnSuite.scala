package io.sparkkinesis.sink

import io.sparkkinesis.client.{ShardNotFound, ShardPage, StreamMetadataClient, StreamSummary}
import io.sparkkinesis.config.{OptionRuleViolation, SinkConfig}
import io.sparkkinesis.testutil.ErrorChecks.{assertCondition, optionErrorMessage}
import org.scalatest.funsuite.AnyFunSuite

/** `kinesis.streamArn` on a write: parsing, and the driver's refusal of a stream the KPL cannot address. */
class SinkStreamArnSuite extends AnyFunSuite {

  private val arn = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders"
  private val base = Map("kinesis.endpointUrl" -> "https://localhost:4567")

  private def parse(extra: (String, String)*): SinkConfig = SinkConfig.parse(base ++ extra, () => None)

  /** Answers DescribeStreamSummary by name as the account of the credentials would. */
  private final class Account(byName: Map[String, String]) extends StreamMetadataClient {
    var asked: List[String] = Nil

    def describeStream(streamName: String): StreamSummary = {
      asked ::= streamName
      byName.get(streamName) match {
        case Some(a) => StreamSummary(streamName, a, "ACTIVE", 24)
        case None => throw new ShardNotFound(s"Stream $streamName not found", null)
      }
    }
    def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage = ShardPage(Nil, None)
    def close(): Unit = ()
  }

  test("a write named by ARN takes its stream name and region from it") {
    val c = parse("kinesis.streamArn" -> arn)
    assert(c.streamName == "orders" && c.streamArn.contains(arn))
    assert(c.client.region == "eu-west-1" && c.producer.region == "eu-west-1")
    assert(parse("kinesis.streamName" -> "orders", "kinesis.region" -> "eu-west-1").streamArn.isEmpty)
  }

  test("name and ARN at once, several ARNs, a region that disagrees, a malformed ARN: refused") {
    def rule(extra: (String, String)*): String = intercept[OptionRuleViolation](parse(extra: _*)).ruleId
    assert(rule("kinesis.streamArn" -> arn, "kinesis.streamName" -> "orders") == "sink-stream-name-or-arn")
    assert(rule("kinesis.streamArn" -> s"$arn,$arn-2") == "sink-one-stream-arn")
    assert(rule() == "sink-stream-required")
    def message(extra: (String, String)*): String =
      optionErrorMessage(intercept[IllegalArgumentException](parse(extra: _*)))
    assert(message("kinesis.streamArn" -> arn, "kinesis.region" -> "us-east-1").contains("region eu-west-1"))
    assert(message("kinesis.streamArn" -> "orders").contains("is not a Kinesis stream ARN"))
  }

  test("the ARN the KPL will find by name passes; another account's stream is refused before any row") {
    val config = parse("kinesis.streamArn" -> arn)
    val same = new Account(Map("orders" -> arn))
    SinkStreamArn.check(config, same)
    assert(same.asked == List("orders"), "the KPL's view: the stream by name in the credentials' account")

    val none = intercept[IllegalArgumentException](SinkStreamArn.check(config, new Account(Map.empty)))
    assertCondition(none, "KINESIS_UNSUPPORTED_OPTION")
    assert(
      none.getMessage.contains("account 123456789012") && none.getMessage.contains(
        "has no stream named orders"
      )
    )
    assert(none.getMessage.contains("cannot write to another account's stream"))

    val own = "arn:aws:kinesis:eu-west-1:999999999999:stream/orders"
    val other =
      intercept[IllegalArgumentException](SinkStreamArn.check(config, new Account(Map("orders" -> own))))
    assert(other.getMessage.contains(s"has its own orders: $own"), other.getMessage)

    // Without an ARN there is nothing to compare.
    val byName = new Account(Map.empty)
    SinkStreamArn.check(parse("kinesis.streamName" -> "orders", "kinesis.region" -> "eu-west-1"), byName)
    assert(byName.asked.isEmpty)
  }
}
