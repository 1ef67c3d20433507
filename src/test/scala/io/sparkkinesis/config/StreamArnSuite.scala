package io.sparkkinesis.config

import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.scalatest.funsuite.AnyFunSuite

class StreamArnSuite extends AnyFunSuite {
  private val orders = "arn:aws:kinesis:eu-west-1:123456789012:stream/orders"
  private val clicks = "arn:aws:kinesis:eu-west-1:210987654321:stream/clicks"

  private def parse(options: (String, String)*) = SourceConfig.parse(options.toMap, () => Some("us-east-1"))

  test("one ARN or a list: stream names, ARNs for requests, region and endpoint from the ARN") {
    val c = parse("kinesis.streamArn" -> s"$orders, $clicks")
    assert(c.streamNames == Seq("orders", "clicks"))
    assert(c.streamId("orders") == orders && c.streamId("clicks") == clicks)
    assert(c.client.region == "eu-west-1")
    assert(c.client.endpointUrl == "https://kinesis.eu-west-1.amazonaws.com")
    assert(parse("kinesis.streamName" -> "orders").streamId("orders") == "orders")
  }

  test("the parts of an ARN are parsed, for every partition") {
    val Seq(a) = StreamArns.parse("k", "arn:aws-cn:kinesis:cn-north-1:123456789012:stream/x.y_z-1")
    assert(a == StreamArn(a.arn, "aws-cn", "cn-north-1", "123456789012", "x.y_z-1"))
    assert(
      StreamArns
        .parse("k", "arn:aws-us-gov:kinesis:us-gov-west-1:123456789012:stream/s")
        .head
        .region == "us-gov-west-1"
    )
  }

  test("a malformed ARN fails, naming the option, the value and the expected form") {
    val bad = Seq(
      "orders",
      "arn:aws:kinesis:eu-west-1:12345:stream/orders",
      "arn:aws:sqs:eu-west-1:123456789012:stream/orders",
      "arn:aws:kinesis:eu-west-1:123456789012:orders",
      "arn:aws:kinesis:eu-west-1:123456789012:stream/",
      "arn:aws:kinesis::123456789012:stream/orders"
    )
    for (text <- bad) {
      val error = intercept[IllegalArgumentException](parse("kinesis.streamArn" -> text))
      assertCondition(error, "KINESIS_INVALID_OPTION")
      assert(error.getMessage.contains("kinesis.streamArn"), text)
      assert(error.getMessage.contains(s"'$text' is not a Kinesis stream ARN"), text)
      assert(
        error.getMessage.contains("arn:<partition>:kinesis:<region>:<12-digit account>:stream/<stream name>")
      )
    }
  }

  test("name and ARN together, neither, ARNs of several regions, or a disagreeing region option fail") {
    assert(
      intercept[IllegalArgumentException](
        parse("kinesis.streamName" -> "o", "kinesis.streamArn" -> orders)
      ).getMessage
        .contains("set one of them")
    )
    assert(
      intercept[IllegalArgumentException](parse()).getMessage
        .contains("kinesis.streamArn may be given instead")
    )
    val other = "arn:aws:kinesis:us-east-1:123456789012:stream/other"
    assert(
      intercept[IllegalArgumentException](parse("kinesis.streamArn" -> s"$orders,$other")).getMessage
        .contains("several regions")
    )
    assert(
      intercept[IllegalArgumentException](
        parse("kinesis.streamArn" -> orders, "kinesis.region" -> "us-east-1")
      ).getMessage
        .contains("is in region eu-west-1")
    )
    assert(parse("kinesis.streamArn" -> orders, "kinesis.region" -> "eu-west-1").client.region == "eu-west-1")
  }

  test("two ARNs naming the same stream fail") {
    val twin = "arn:aws:kinesis:eu-west-1:210987654321:stream/orders"
    assert(
      intercept[IllegalArgumentException](parse("kinesis.streamArn" -> s"$orders,$twin")).getMessage
        .contains("two ARNs name stream 'orders'")
    )
  }
}
