package io.sparkkinesis.config

import io.sparkkinesis.config.OptionSpec.Bounds
import io.sparkkinesis.testutil.ErrorChecks.optionErrorMessage
import org.scalatest.funsuite.AnyFunSuite

/**
 * Every option of the option table with a value of the wrong type and, where the option has a range or a format,
 * a value outside it: the message names the option, echoes the value (never a secret's) and says what is allowed.
 * Then the combinations of valid values that do not go together, one test each.
 */
class BadInputCatalogueSuite extends AnyFunSuite {
  private val base = Map("kinesis.streamName" -> "orders", "kinesis.region" -> "us-east-1")
  private val noRegion: () => Option[String] = () => None

  private def sourceFailure(options: Map[String, String]): String =
    optionErrorMessage(intercept[IllegalArgumentException](SourceConfig.parse(base ++ options, noRegion)))

  private def sinkFailure(options: Map[String, String]): String =
    optionErrorMessage(intercept[IllegalArgumentException](SinkConfig.parse(base ++ options, noRegion)))

  private def functionFailure(options: Map[String, String]): String =
    optionErrorMessage(
      intercept[IllegalArgumentException](
        SchemaRegistryConfig.parse(
          "from_glue_schema_registry",
          Map("kinesis.region" -> "us-east-1", "kinesis.schemaRegistry.schemaName" -> "orders") ++ options,
          noRegion
        )
      )
    )

  /** The sides (source, sink, functions) that take the option, each with the function that parses options there. */
  private def sides(spec: OptionSpec[_]): Seq[(String, Map[String, String] => String)] = spec.scope match {
    case OptionScope.Source => Seq("source" -> sourceFailure)
    case OptionScope.Sink => Seq("sink" -> sinkFailure)
    case OptionScope.Both => Seq("source" -> sourceFailure, "sink" -> sinkFailure)
    case OptionScope.Functions => Seq("functions" -> functionFailure)
  }

  /** A value that does not parse as the option's type, and what the message must say is allowed. */
  private def wrongType(t: OptionType[_]): (String, Seq[String]) = t match {
    case OptionType.Str => ("   ", Seq("a non-empty string"))
    case OptionType.Bool => ("yes please", Seq("true or false"))
    case OptionType.Integer => ("12x", Seq("a whole number"))
    case OptionType.Decimal => ("fast", Seq("a decimal number"))
    case d: OptionType.Duration =>
      (
        "soon",
        Seq(
          "a duration such as 500ms",
          s"a bare number of ${if (d.bareUnit == "s") "seconds" else "milliseconds"}"
        )
      )
    case c: OptionType.OneOf[_] => ("no-such-choice", c.names)
  }

  /** Values that parse but that the option's check refuses, each with what the message must say is allowed. */
  private def outOfRange[T](spec: OptionSpec[T]): Seq[(String, String)] =
    (spec.optionType, spec.check) match {
      case (t, b: Bounds) =>
        val below =
          if (b.min > 0 || (b.min > Long.MinValue && t == OptionType.Integer)) Seq(b.min - 1)
          else Nil
        val above = b.max.filter(_ < Long.MaxValue).map(_ + 1).toSeq
        // A duration's bounds are milliseconds: given with the ms suffix.
        val suffix = if (b.duration) "ms" else ""
        (below ++ above).map(v => s"$v$suffix" -> b(v).get)
      case (OptionType.Decimal, check) =>
        val checkD = check.asInstanceOf[Double => Option[String]]
        Seq(-1.0, 0.0, 1e12).flatMap(v => checkD(v).map(allowed => v.toString -> allowed)).take(2)
      case (OptionType.Str, check) =>
        val checkS = check.asInstanceOf[String => Option[String]]
        Seq("bad value!", "x" * 300, "arn:aws:nothing")
          .flatMap(v => checkS(v).map(allowed => v -> allowed))
          .take(1)
      case _ => Nil
    }

  private def unsupported[T](spec: OptionSpec[T]): Seq[(String, String)] =
    spec.unsupportedValues.toSeq.map { case (v, reason) => spec.optionType.render(v) -> reason }

  private def assertNamesAndEchoes(spec: OptionSpec[_], value: String, message: String): Unit = {
    assert(message.contains(spec.fullKey), s"${spec.fullKey}: $message")
    if (spec.secret) {
      assert(message.contains("<redacted>") && (value.trim.isEmpty || !message.contains(value)), message)
    } else assert(message.contains(s"'$value'"), s"${spec.fullKey} = '$value': $message")
  }

  KinesisOptions.all.foreach { spec =>
    spec.notYetSupported match {
      case Some(reason) =>
        test(s"${spec.fullKey}: not supported yet, said with the reason") {
          sides(spec).foreach { case (_, fail) =>
            val m = fail(Map(spec.fullKey -> "x"))
            assert(m.contains(spec.fullKey) && m.contains("not supported yet") && m.contains(reason), m)
          }
        }
      case None =>
        test(
          s"${spec.fullKey}: a value of the wrong type names the option, echoes the value, says what is allowed"
        ) {
          val (value, allowed) = wrongType(spec.optionType)
          sides(spec).foreach { case (side, fail) =>
            val m = fail(Map(spec.fullKey -> value))
            assertNamesAndEchoes(spec, value, m)
            assert(m.contains("expected"), s"$side: $m")
            allowed.foreach(a => assert(m.contains(a), s"$side: '$a' missing in: $m"))
          }
        }
        val ranges = outOfRange(spec)
        if (ranges.nonEmpty) {
          test(s"${spec.fullKey}: a value outside its range or format names the option and what is allowed") {
            for ((value, allowed) <- ranges; (side, fail) <- sides(spec)) {
              val m = fail(Map(spec.fullKey -> value))
              assertNamesAndEchoes(spec, value, m)
              assert(m.contains(allowed), s"$side: '$allowed' missing in: $m")
            }
          }
        }
        unsupported(spec).foreach { case (value, reason) =>
          test(s"${spec.fullKey} = $value: not supported yet, said with the reason") {
            sides(spec).foreach { case (_, fail) =>
              val m = fail(Map(spec.fullKey -> value))
              assert(m.contains(spec.fullKey) && m.contains("not supported yet") && m.contains(reason), m)
            }
          }
        }
    }
    if (spec.scope != OptionScope.Both) {
      test(s"${spec.fullKey}: refused on the side it does not apply to") {
        val (fail, where) = spec.scope match {
          case OptionScope.Source => (sinkFailure _, "reads (the source) only")
          case OptionScope.Sink => (sourceFailure _, "writes (the sink) only")
          case _ => (sourceFailure _, "to_glue_schema_registry only")
        }
        val m = fail(Map(spec.fullKey -> "1"))
        assert(m.contains(spec.fullKey) && m.contains(where) && m.contains("remove it"), m)
      }
    }
  }

  test("every option of the table is in this catalogue (the table is not empty, keys are unique)") {
    assert(KinesisOptions.all.size > 30)
    assert(KinesisOptions.all.map(_.lowerKey).distinct.size == KinesisOptions.all.size)
  }

  // ---------------------------------------------------------------- combinations

  private val Efo = Map("kinesis.consumerType" -> "SubscribeToShard", "kinesis.consumerName" -> "c")
  private val StreamArn = "arn:aws:kinesis:us-east-1:123456789012:stream/orders"

  test("streamName together with streamArn") {
    val m = optionErrorMessage(
      intercept[IllegalArgumentException](
        SourceConfig.parse(Map("kinesis.streamName" -> "orders", "kinesis.streamArn" -> StreamArn), noRegion)
      )
    )
    assert(m == "Options kinesis.streamName and kinesis.streamArn are both set; set one of them.", m)
  }

  test("neither streamName nor streamArn") {
    val m = optionErrorMessage(
      intercept[IllegalArgumentException](SourceConfig.parse(Map("kinesis.region" -> "us-east-1"), noRegion))
    )
    assert(m.contains("kinesis.streamName is required") && m.contains("kinesis.streamArn may be given"), m)
  }

  test("SubscribeToShard without consumerName") {
    val m = sourceFailure(Map("kinesis.consumerType" -> "SubscribeToShard"))
    assert(m.contains("kinesis.consumerName is required when kinesis.consumerType is SubscribeToShard"), m)
  }

  test("SubscribeToShard with maxFetchRate") {
    val m = sourceFailure(Efo + ("kinesis.maxFetchRate" -> "1.5"))
    assert(m.contains("kinesis.maxFetchRate = 1.5 applies to kinesis.consumerType = GetRecords only"), m)
  }

  private val ConsumerOf = (stream: String) =>
    s"arn:aws:kinesis:us-east-1:123456789012:stream/$stream/consumer/c:1"

  test(
    "consumerArn with consumerName, consumerDeregisterOnStop or consumerTags; consumer options when polling"
  ) {
    val byArn =
      Map("kinesis.consumerType" -> "SubscribeToShard", "kinesis.consumerArn" -> ConsumerOf("orders"))
    val both = sourceFailure(byArn + ("kinesis.consumerName" -> "c"))
    assert(both.contains("kinesis.consumerName and kinesis.consumerArn are both set; set one"), both)
    val deregister = sourceFailure(byArn + ("kinesis.consumerDeregisterOnStop" -> "true"))
    assert(deregister.contains("a consumer given by kinesis.consumerArn is never deregistered by the query"))
    val tags = sourceFailure(byArn + ("kinesis.consumerTags" -> "team=risk"))
    assert(
      tags.contains("kinesis.consumerTags tags the consumers the query registers") && tags.contains("--tags")
    )
    for (key <- Seq("kinesis.consumerArn", "kinesis.consumerTags")) {
      val value = if (key.endsWith("Arn")) ConsumerOf("orders") else "a=b"
      val polling = sourceFailure(Map(key -> value))
      assert(polling.contains("apply only when kinesis.consumerType is SubscribeToShard"), polling)
    }
  }

  test(
    "consumerArn: one consumer per stream read, of that stream; a missing, extra or mismatched one is named"
  ) {
    def failure(streams: (String, String), arns: String*) = optionErrorMessage(
      intercept[IllegalArgumentException](
        SourceConfig.parse(
          Efo - "kinesis.consumerName" + streams + ("kinesis.region" -> "us-east-1") +
            ("kinesis.consumerArn" -> arns.mkString(",")),
          noRegion
        )
      )
    )
    val names = "kinesis.streamName" -> "orders,clicks"
    val missing = failure(names, ConsumerOf("orders"))
    assert(missing.contains("kinesis.consumerArn") && missing.contains(s"'${ConsumerOf("orders")}'"), missing)
    val expected =
      "expected one consumer of each stream read (orders, clicks), in any order; it gives consumers of "
    assert(missing.contains(expected + "'orders'"), missing)
    val extra = failure(names, ConsumerOf("orders"), ConsumerOf("clicks"), ConsumerOf("views"))
    assert(extra.contains(expected + "'orders', 'clicks', 'views'"), extra)
    val twice =
      failure(names, ConsumerOf("orders"), ConsumerOf("clicks"), ConsumerOf("orders").dropRight(1) + "2")
    assert(twice.contains(expected + "'orders', 'clicks', 'orders'"), twice)
    val byArn = "kinesis.streamArn" -> "arn:aws:kinesis:us-east-1:999999999999:stream/orders"
    val otherAccount = failure(byArn, ConsumerOf("orders"))
    assert(
      otherAccount.contains("belongs to arn:aws:kinesis:us-east-1:123456789012:stream/orders"),
      otherAccount
    )
    val bad = failure(names, "arn:aws:kinesis:us-east-1:123456789012:stream/orders")
    assert(bad.contains("one consumer ARN per stream"), bad)
  }

  test("consumerTags: a key given twice or a reserved key") {
    val twice = sourceFailure(Efo + ("kinesis.consumerTags" -> "team=risk, team=fraud"))
    assert(twice.contains("tag key 'team' is given twice"), twice)
    val reserved = sourceFailure(Efo + ("kinesis.consumerTags" -> "aws:owner=me"))
    assert(reserved.contains("keys not starting with 'aws:'"), reserved)
  }

  test("a DynamoDB option without metadataCommitterType DYNAMODB") {
    for (
      key <- Seq("kinesis.dynamodb.tableName", "kinesis.dynamodb.region", "kinesis.dynamodb.endpointUrl")
    ) {
      val value = if (key.endsWith("Url")) "http://127.0.0.1:8000" else "us-east-1"
      val m = sourceFailure(Map(key -> value))
      assert(m == s"Option $key applies only when kinesis.metadataCommitterType is DYNAMODB.", m)
    }
  }

  test("DYNAMODB without a table name, and with metadataPath") {
    val missing = sourceFailure(Map("kinesis.metadataCommitterType" -> "DYNAMODB"))
    assert(missing.contains("kinesis.dynamodb.tableName is required"), missing)
    val both = sourceFailure(
      Map(
        "kinesis.metadataCommitterType" -> "DYNAMODB",
        "kinesis.dynamodb.tableName" -> "t",
        "kinesis.metadataPath" -> "/tmp/m"
      )
    )
    assert(
      both.contains("kinesis.metadataPath applies only when kinesis.metadataCommitterType is HDFS"),
      both
    )
  }

  test("STS options without a role to assume") {
    val values = Map(
      "kinesis.stsSessionName" -> "reader",
      "kinesis.stsExternalId" -> "ext-1",
      "kinesis.stsEndpointUrl" -> "http://127.0.0.1:4566"
    )
    for ((key, value) <- values; fail <- Seq(sourceFailure _, sinkFailure _)) {
      val m = fail(Map(key -> value))
      assert(m == s"Option $key needs kinesis.stsRoleArn (the role to assume).", m)
      assert(!m.contains(value), "an STS value is not echoed (the external id is a secret)")
    }
  }

  test("static keys without their partner, and a session token alone") {
    assert(
      sourceFailure(Map("kinesis.awsAccessKeyId" -> "AKID")) ==
        "Options kinesis.awsAccessKeyId and kinesis.awsSecretKey go together: set both or neither."
    )
    assert(sourceFailure(Map("kinesis.awsSecretKey" -> "s3cr3t")).contains("set both or neither"))
    val token = sourceFailure(Map("kinesis.sessionToken" -> "tok"))
    assert(
      token == "Option kinesis.sessionToken needs kinesis.awsAccessKeyId and kinesis.awsSecretKey.",
      token
    )
  }

  test("credentialProviderParam without credentialProviderClass") {
    val m = sourceFailure(Map("kinesis.credentialProviderParam" -> "p"))
    assert(m == "Option kinesis.credentialProviderParam needs kinesis.credentialProviderClass.", m)
  }
}
