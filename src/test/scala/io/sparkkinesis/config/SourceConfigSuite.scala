package io.sparkkinesis.config

import java.time.Instant

import io.sparkkinesis.testutil.ErrorChecks.optionErrorMessage
import org.scalatest.funsuite.AnyFunSuite

class SourceConfigSuite extends AnyFunSuite {
  private val base = Map("kinesis.streamName" -> "orders", "kinesis.region" -> "us-east-1")

  private def noDefaultRegion: () => Option[String] = () => None

  private def parse(extra: (String, String)*): SourceConfig =
    SourceConfig.parse(base ++ extra, noDefaultRegion)

  private def failure(options: Map[String, String], defaultRegion: () => Option[String] = noDefaultRegion) =
    optionErrorMessage(intercept[IllegalArgumentException](SourceConfig.parse(options, defaultRegion)))

  private def failureWith(extra: (String, String)*): String = failure(base ++ extra)

  // ---------------------------------------------------------------- defaults

  test("every source setting has its documented default") {
    val c = parse()
    assert(c.streamName == "orders")
    assert(c.startingPosition == StartingPositionSpec.Latest)
    assert(!c.failOnDataLoss)
    assert(c.maxRecordsPerShard == 100000L)
    assert(c.maxFetchTimePerShardMs.isEmpty)
    assert(c.describeShardIntervalMs == 1000L)
    assert(c.idleProbeIntervalMs == 1000L)
    assert(c.minBatchesToRetain.isEmpty)
    assert(c.metadataThreads == 8)
    assert(c.metadataPath.isEmpty)
    assert(c.metadataRetry == RetryPolicy(retries = 5, baseMs = 1000L, maxMs = 10000L))
    assert(c.recordsPerFetch == 10000)
    assert(c.fetchIntervalMs == 200L)
    assert(
      c.client == AwsClientConfig(
        region = "us-east-1",
        endpointUrl = "https://kinesis.us-east-1.amazonaws.com",
        numRetries = 5,
        retryBaseDelayMs = 1000L,
        retryMaxDelayMs = 10000L
      )
    )
  }

  test("every fixed default in the option table parses back to itself and passes its own check") {
    val fixed = KinesisOptions.all.collect { case o if o.default.isInstanceOf[OptionDefault.Fixed[_]] => o }
    assert(fixed.size >= 20)
    fixed.foreach { o =>
      def roundTrip[T](spec: OptionSpec[T]): Unit = {
        val value = spec.default.asInstanceOf[OptionDefault.Fixed[T]].value
        assert(spec.optionType.parse(spec.optionType.render(value)) == Right(value), spec.fullKey)
        assert(spec.check(value).isEmpty, spec.fullKey)
      }
      roundTrip(o)
    }
  }

  test("the option table: unique keys in any case, each with a doc, all under the kinesis. prefix") {
    val keys = KinesisOptions.all.map(_.lowerKey)
    assert(keys.distinct.size == keys.size)
    KinesisOptions.all.foreach { o =>
      assert(o.fullKey.startsWith("kinesis."))
      assert(o.doc.trim.nonEmpty, o.fullKey)
      assert(KinesisOptions.lookup(o.fullKey.toUpperCase(java.util.Locale.ROOT)).contains(o))
    }
  }

  test("required, derived and fixed defaults are described for the docs") {
    assert(KinesisOptions.StreamName.defaultText == "required")
    assert(KinesisOptions.DescribeShardInterval.defaultText == "1s")
    assert(KinesisOptions.MaxFetchRecordsPerShard.defaultText == "100000")
    assert(KinesisOptions.EndpointUrl.defaultText.contains("<region>"))
  }

  // ---------------------------------------------------------------- parsing

  test("every source option is parsed into its typed setting") {
    val c = SourceConfig.parse(
      Map(
        "kinesis.streamName" -> " payments ",
        "kinesis.region" -> "eu-west-1",
        "kinesis.endpointUrl" -> "http://localhost:4566",
        "kinesis.startingPosition" -> "TRIM_HORIZON",
        "kinesis.failOnDataLoss" -> "TRUE",
        "kinesis.maxFetchRecordsPerShard" -> "1_000",
        "kinesis.maxFetchTimePerShardSec" -> "30",
        "kinesis.describeShardInterval" -> "2s",
        "kinesis.idleProbeIntervalMs" -> "250",
        "kinesis.minBatchesToRetain" -> "7",
        "kinesis.checkNewRecordThreads" -> "3",
        "kinesis.metadataCommitterType" -> "hdfs",
        "kinesis.metadataPath" -> "/tmp/meta",
        "kinesis.metadataNumRetries" -> "2",
        "kinesis.metadataRetryIntervalsMs" -> "10",
        "kinesis.metadataMaxRetryIntervalMs" -> "40",
        "kinesis.clientNumRetries" -> "4",
        "kinesis.clientRetryIntervalsMs" -> "20",
        "kinesis.clientMaxRetryIntervalMs" -> "80",
        "kinesis.getRecords.numberOfRecordsPerFetch" -> "500",
        "kinesis.getRecords.fetchIntervalMs" -> "0",
        "kinesis.consumerType" -> "getrecords",
        "checkpointLocation" -> "/not/ours", // options without the prefix belong to Spark and are ignored
        "path" -> "whatever"
      ),
      noDefaultRegion
    )
    assert(c.streamName == "payments")
    assert(c.client == AwsClientConfig("eu-west-1", "http://localhost:4566", 4, 20L, 80L))
    assert(c.startingPosition == StartingPositionSpec.TrimHorizon)
    assert(c.failOnDataLoss)
    assert(c.maxRecordsPerShard == 1000L)
    assert(c.maxFetchTimePerShardMs.contains(30000L))
    assert(c.describeShardIntervalMs == 2000L)
    assert(c.idleProbeIntervalMs == 250L)
    assert(c.minBatchesToRetain.contains(7))
    assert(c.metadataThreads == 3)
    assert(c.metadataPath.contains("/tmp/meta"))
    assert(c.metadataRetry == RetryPolicy(2, 10L, 40L))
    assert(c.recordsPerFetch == 500)
    assert(c.fetchIntervalMs == 0L)
  }

  test("option keys are matched case-insensitively") {
    val c = SourceConfig.parse(
      Map(
        "KINESIS.STREAMNAME" -> "orders",
        "kinesis.REGION" -> "us-west-2",
        "Kinesis.MaxFetchRecordsPerShard" -> "12",
        "kinesis.getrecords.fetchintervalms" -> "50"
      ),
      noDefaultRegion
    )
    assert(c.streamName == "orders")
    assert(c.client.region == "us-west-2")
    assert(c.maxRecordsPerShard == 12L)
    assert(c.fetchIntervalMs == 50L)
    assert(parse("kinesis.streamname" -> "other").streamName == "other")
  }

  test("durations accept a unit or bare milliseconds") {
    def interval(text: String) = parse("kinesis.describeShardInterval" -> text).describeShardIntervalMs
    assert(interval("750") == 750L)
    assert(interval("750ms") == 750L)
    assert(interval("3s") == 3000L)
    assert(interval(" 3 SEC ") == 3000L)
    assert(interval("2m") == 120000L)
    assert(interval("2min") == 120000L)
    assert(interval("1h") == 3600000L)
    assert(interval("1d") == 86400000L)
    assert(interval("0") == 0L)
  }

  test("a time option named in seconds reads a bare number as seconds and takes any duration") {
    def timeout(text: String) = parse(
      "kinesis.consumerType" -> "SubscribeToShard",
      "kinesis.consumerName" -> "c",
      "kinesis.subscribeToShard.timeoutSec" -> text
    ).readMode.asInstanceOf[ReadMode.FanOut].consumer.subscribeTimeoutMs
    assert(timeout("2m") == 120000L)
    assert(timeout("45") == 45000L)
    assert(timeout("1500ms") == 1500L)
    assert(parse("kinesis.maxFetchTimePerShardSec" -> "90").maxFetchTimePerShardMs.contains(90000L))
    assert(parse("kinesis.maxFetchTimePerShardSec" -> "1h").maxFetchTimePerShardMs.contains(3600000L))
    assert(parse("kinesis.getRecords.fetchIntervalMs" -> "1s").fetchIntervalMs == 1000L)
    assert(parse("kinesis.clientConnectTimeoutMs" -> "5s").client.network.connectTimeoutMs == 5000L)
  }

  // ---------------------------------------------------------------- errors

  test("an unknown key fails, names the key, and suggests the closest option") {
    val m = failureWith("kinesis.streamNme" -> "x")
    assert(m.contains("Unknown option 'kinesis.streamNme'"))
    assert(m.contains("Did you mean 'kinesis.streamName'?"))
    val m2 = failureWith("kinesis.maxFetchRecordPerShard" -> "5")
    assert(m2.contains("Did you mean 'kinesis.maxFetchRecordsPerShard'?"))
    val m3 = failureWith("KINESIS.FAILONDATALOS" -> "true")
    assert(m3.contains("'KINESIS.FAILONDATALOS'") && m3.contains("Did you mean 'kinesis.failOnDataLoss'?"))
  }

  test("an unknown key far from every option fails without a misleading suggestion") {
    val m = failureWith("kinesis.completelyUnrelatedSetting" -> "1")
    assert(m.contains("Unknown option 'kinesis.completelyUnrelatedSetting'"))
    assert(!m.contains("Did you mean"))
    assert(m.contains("docs/options.md"))
  }

  test("a bad boolean names the option, echoes the value and says what is allowed") {
    val m = failureWith("kinesis.failOnDataLoss" -> "yes")
    assert(m == "Invalid value 'yes' for option kinesis.failOnDataLoss: expected true or false.")
  }

  test("a bad integer names the option, echoes the value and says what is allowed") {
    val m = failureWith("kinesis.maxFetchRecordsPerShard" -> "1e3")
    assert(
      m.contains("'1e3'") && m.contains("kinesis.maxFetchRecordsPerShard") && m.contains("a whole number")
    )
    val m2 = failureWith("kinesis.getRecords.fetchIntervalMs" -> "")
    assert(m2.contains("kinesis.getRecords.fetchIntervalMs") && m2.contains("a bare number of milliseconds"))
  }

  test("a bad duration names the option, echoes the value and says what is allowed") {
    for (bad <- Seq("5 parsecs", "1.5s", "-1s", "s", "ten seconds")) {
      val m = failureWith("kinesis.describeShardInterval" -> bad)
      assert(m.contains(s"'$bad'"), m)
      assert(m.contains("kinesis.describeShardInterval"), m)
      assert(m.contains("a duration such as 500ms, 30s, 2m"), m)
    }
  }

  test("a duration too large to represent is rejected, not wrapped around") {
    // 213503982335 days overflow a Long of milliseconds and would wrap to about 9.5 hours.
    val m = failureWith("kinesis.describeShardInterval" -> "213503982335d")
    assert(m.contains("'213503982335d'") && m.contains("kinesis.describeShardInterval"), m)
    val m2 = failureWith("kinesis.describeShardInterval" -> "99999999999999999999")
    assert(m2.contains("kinesis.describeShardInterval"), m2)
  }

  test("a bad enum value names the option, echoes the value and lists the choices") {
    val m = failureWith("kinesis.consumerType" -> "Polling")
    assert(
      m == "Invalid value 'Polling' for option kinesis.consumerType: expected one of GetRecords, SubscribeToShard."
    )
    val m2 = failureWith("kinesis.metadataCommitterType" -> "S3")
    assert(m2.contains("'S3'") && m2.contains("one of HDFS, DYNAMODB"))
  }

  test("out-of-range values name the option, echo the value and give the range") {
    assert(
      failureWith("kinesis.maxFetchRecordsPerShard" -> "0") ==
        "Invalid value '0' for option kinesis.maxFetchRecordsPerShard: expected a value of at least 1."
    )
    assert(
      failureWith("kinesis.getRecords.numberOfRecordsPerFetch" -> "10001") ==
        "Invalid value '10001' for option kinesis.getRecords.numberOfRecordsPerFetch: " +
        "expected a value from 1 to 10000."
    )
    assert(failureWith("kinesis.checkNewRecordThreads" -> "0").contains("a value from 1 to 256"))
    assert(failureWith("kinesis.checkNewRecordThreads" -> "257").contains("a value from 1 to 256"))
    assert(failureWith("kinesis.metadataNumRetries" -> "101").contains("a value from 0 to 100"))
    assert(failureWith("kinesis.clientNumRetries" -> "-1").contains("a value from 0 to 100"))
    assert(failureWith("kinesis.maxFetchTimePerShardSec" -> "0").contains("a value of at least 1s"))
    assert(failureWith("kinesis.maxFetchTimePerShardSec" -> "999ms").contains("a value of at least 1s"))
    assert(failureWith("kinesis.getRecords.fetchIntervalMs" -> "-5").contains("'-5'"))
    assert(failureWith("kinesis.minBatchesToRetain" -> "0").contains("kinesis.minBatchesToRetain"))
    assert(failureWith("kinesis.endpointUrl" -> "localhost:4566").contains("an http:// or https:// URL"))
    // The limits themselves are allowed.
    assert(parse("kinesis.getRecords.numberOfRecordsPerFetch" -> "10000").recordsPerFetch == 10000)
    assert(parse("kinesis.checkNewRecordThreads" -> "256").metadataThreads == 256)
  }

  test("an integer too large for its setting is rejected, not wrapped around") {
    // 3000000000 does not fit an Int: taken as is it would become a negative number of batches to retain.
    val m = failureWith("kinesis.minBatchesToRetain" -> "3000000000")
    assert(m.contains("'3000000000'") && m.contains("kinesis.minBatchesToRetain"), m)
    // Seconds that overflow when turned into milliseconds are refused, not turned into a negative time limit.
    val huge = failureWith("kinesis.maxFetchTimePerShardSec" -> (Long.MaxValue / 1000 + 1).toString)
    assert(huge.contains("kinesis.maxFetchTimePerShardSec") && huge.contains("below 2^63 ms"), huge)
    assert(
      parse(
        "kinesis.maxFetchTimePerShardSec" -> (Long.MaxValue / 1000).toString
      ).maxFetchTimePerShardMs.nonEmpty
    )
  }

  test("the stream name is required and must not be blank") {
    val m = failure(Map("kinesis.region" -> "us-east-1"))
    assert(m.contains("kinesis.streamName is required"))
    val m2 = failureWith("kinesis.streamName" -> "   ")
    assert(m2.contains("kinesis.streamName") && m2.contains("a non-empty string"))
  }

  test("SubscribeToShard (enhanced fan-out): consumer settings, defaults and checks") {
    assert(
      parse().readMode == ReadMode.Polling(None) && parse().readMode.consumerType == ConsumerType.GetRecords
    )
    val c =
      parse("kinesis.consumerType" -> "subscribetoshard", "kinesis.consumerName" -> "fraud-detector_v1.2")
    assert(c.readMode.consumerType == ConsumerType.SubscribeToShard)
    assert(
      c.readMode == ReadMode.FanOut(
        EfoConfig(Some("fraud-detector_v1.2"), Map.empty, Map.empty, true, 60000L, 10, HttpProtocol.Http2)
      )
    )
    val tuned = parse(
      "kinesis.consumerType" -> "SubscribeToShard",
      "kinesis.consumerName" -> "c",
      "kinesis.consumerDeregisterOnStop" -> "false",
      "kinesis.consumerTags" -> "team = risk,cost-center=42,note=a=b",
      "kinesis.subscribeToShard.timeoutSec" -> "5",
      "kinesis.subscribeToShard.maxRetries" -> "0",
      "kinesis.subscribeToShard.httpProtocol" -> "http1_1"
    )
    val tags = Map("team" -> "risk", "cost-center" -> "42", "note" -> "a=b")
    assert(
      tuned.readMode == ReadMode.FanOut(
        EfoConfig(Some("c"), Map.empty, tags, false, 5000L, 0, HttpProtocol.Http1)
      )
    )
    // Consumer options are ignored by GetRecords, so a query can switch type by changing only consumerType.
    assert(parse("kinesis.consumerName" -> "c").readMode == ReadMode.Polling(None))
    val missing = failureWith("kinesis.consumerType" -> "SubscribeToShard")
    assert(missing.contains("kinesis.consumerName is required") && missing.contains("SubscribeToShard"))
    for (bad <- Seq("has space", "x" * 129, "slash/name", "ümlaut")) {
      val m = failureWith("kinesis.consumerType" -> "SubscribeToShard", "kinesis.consumerName" -> bad)
      assert(
        m.contains("kinesis.consumerName") && m.contains(s"'$bad'") && m.contains("1 to 128 characters"),
        m
      )
    }
    assert(
      parse("kinesis.consumerType" -> "SubscribeToShard", "kinesis.consumerName" -> "x" * 128).readMode
        .isInstanceOf[ReadMode.FanOut]
    )
    assert(failureWith("kinesis.subscribeToShard.timeoutSec" -> "0").contains("from 1s to 1h"))
    assert(failureWith("kinesis.subscribeToShard.timeoutSec" -> "3601").contains("from 1s to 1h"))
    assert(
      failureWith("kinesis.subscribeToShard.httpProtocol" -> "h3").contains("HTTP2, HTTP2_ALPN, HTTP1_1")
    )
  }

  test(
    "maxFetchRate is refused with SubscribeToShard, naming both options and the value; GetRecords takes it"
  ) {
    val m = failureWith(
      "kinesis.consumerType" -> "SubscribeToShard",
      "kinesis.consumerName" -> "c",
      "kinesis.maxFetchRate" -> "0.5"
    )
    assert(
      m.contains("kinesis.maxFetchRate = 0.5") && m.contains("kinesis.consumerType = GetRecords only"),
      m
    )
    assert(m.contains("Remove kinesis.maxFetchRate"), m)
    assert(parse("kinesis.maxFetchRate" -> "0.5").readMode == ReadMode.Polling(Some(0.5)))
    assert(
      parse("kinesis.maxFetchRate" -> "0.5", "kinesis.consumerName" -> "c").readMode == ReadMode.Polling(
        Some(0.5)
      )
    )
  }

  test("DYNAMODB: the table name is required; region defaults to kinesis.region; options are checked") {
    val m = failureWith("kinesis.metadataCommitterType" -> "dynamodb")
    assert(m.contains("kinesis.dynamodb.tableName is required"), m)
    val c = parse(
      "kinesis.metadataCommitterType" -> "dynamodb",
      "kinesis.dynamodb.tableName" -> "meta",
      "kinesis.kinesisRegion" -> "eu-west-1",
      "kinesis.metadataNumRetries" -> "2"
    )
    val d = c.dynamoDb.get
    assert(d.tableName == "meta" && d.region == "us-east-1" && d.endpointUrl.isEmpty)
    assert(d.retry == c.metadataRetry && d.retry.retries == 2)
    assert(d.credentials == c.client.credentials)
    val other = parse(
      "kinesis.metadataCommitterType" -> "DYNAMODB",
      "kinesis.dynamodb.tableName" -> "meta",
      "kinesis.dynamodb.region" -> "eu-central-1",
      "kinesis.dynamodb.endpointUrl" -> "http://127.0.0.1:4566"
    ).dynamoDb.get
    assert(other.region == "eu-central-1" && other.endpointUrl.contains("http://127.0.0.1:4566"))
    assert(parse().dynamoDb.isEmpty)
    val stray = failureWith("kinesis.dynamodb.tableName" -> "t")
    assert(
      stray.contains("kinesis.dynamodb.tableName applies only when kinesis.metadataCommitterType is DYNAMODB")
    )
    val path = failureWith(
      "kinesis.metadataCommitterType" -> "DYNAMODB",
      "kinesis.dynamodb.tableName" -> "t",
      "kinesis.metadataPath" -> "/tmp/x"
    )
    assert(path.contains("kinesis.metadataPath applies only when"), path)
    assert(failureWith("kinesis.dynamodb.endpointUrl" -> "localhost:1").contains("http://"))
  }

  test("credential options that do not form a usable combination fail, naming the options") {
    assert(failureWith("kinesis.awsAccessKeyId" -> "AKIA1").contains("set both or neither"))
    assert(failureWith("kinesis.awsSecretKey" -> "s").contains("set both or neither"))
    assert(failureWith("kinesis.sessionToken" -> "t").contains("kinesis.sessionToken needs"))
    assert(failureWith("kinesis.stsSessionName" -> "n").contains("needs kinesis.stsRoleArn"))
    assert(failureWith("kinesis.stsExternalId" -> "x").contains("needs kinesis.stsRoleArn"))
    assert(
      failureWith("kinesis.credentialProviderParam" -> "p").contains("needs kinesis.credentialProviderClass")
    )
    assert(failureWith("kinesis.stsRoleArn" -> "reader").contains("a role ARN such as"))
    assert(failureWith("kinesis.stsEndpointUrl" -> "sts.local").contains("http://"))
    // The class is loaded by the query's definition (KinesisSourceProviderSuite), not by option parsing.
    assert(
      parse(
        "kinesis.credentialProviderClass" -> "com.example.Missing"
      ).client.credentials.providerClass.nonEmpty
    )
    val c = parse(
      "kinesis.stsRoleArn" -> "arn:aws:iam::123456789012:role/reader",
      "kinesis.stsExternalId" -> "ext-1"
    ).client.credentials
    assert(
      c.stsRoleArn.contains("arn:aws:iam::123456789012:role/reader") && c.stsExternalId.contains("ext-1")
    )
    assert(c.stsRegion.contains("us-east-1"))
    assert(!c.toString.contains("ext-1"))
  }

  test("a secret option is refused without echoing its value, whatever the case of its key") {
    val secret = "AKIAIOSFODNN7EXAMPLE"
    for (
      key <- Seq(
        "kinesis.awsAccessKeyId",
        "KINESIS.AWSACCESSKEYID",
        "kinesis.awsSecretKey",
        "kinesis.sessionToken",
        "kinesis.stsExternalId",
        "kinesis.credentialProviderParam"
      )
    ) {
      val m = failureWith(key -> secret)
      assert(m.contains("Option") && m.contains("kinesis."), m) // names the options at fault
      assert(!m.contains(secret), s"$key: the message echoes the secret: $m")
    }
    // A misspelt secret key is unknown: its value is not echoed either.
    val m = failureWith("kinesis.awsAccessKey" -> secret)
    assert(m.contains("Did you mean 'kinesis.awsAccessKeyId'?") && !m.contains(secret))
  }

  test("a sink-only option on the source is refused as belonging to the sink") {
    for (key <- Seq("kinesis.sink.maxConnections", "kinesis.sink.aggregationEnabled")) {
      val m = failureWith(key -> "1")
      assert(m.contains(key) && m.contains("writes (the sink) only"), m)
    }
  }

  test("a source-only option used where the sink reads options is refused as belonging to the source") {
    val m = intercept[IllegalArgumentException](
      new OptionValues(Map("kinesis.failOnDataLoss" -> "true"), OptionScope.Sink)
    ).getMessage
    assert(m == "Option kinesis.failOnDataLoss applies to reads (the source) only; remove it here.")
    // Options for both sides are fine on the sink.
    val view = new OptionValues(Map("kinesis.streamName" -> "s", "kinesis.region" -> "r"), OptionScope.Sink)
    assert(view.get(KinesisOptions.Region).contains("r"))
  }

  // ---------------------------------------------------------------- starting positions

  private def start(text: String) = parse("kinesis.startingPosition" -> text).startingPosition

  test("starting positions LATEST, TRIM_HORIZON and EARLIEST, in any case") {
    assert(start("LATEST") == StartingPositionSpec.Latest)
    assert(start("latest") == StartingPositionSpec.Latest)
    assert(start("TRIM_HORIZON") == StartingPositionSpec.TrimHorizon)
    assert(start(" trim_horizon ") == StartingPositionSpec.TrimHorizon)
    assert(start("EARLIEST") == StartingPositionSpec.TrimHorizon)
  }

  test("starting position AT_TIMESTAMP with a UTC or offset instant") {
    assert(
      start("AT_TIMESTAMP 2023-08-30T19:00:05Z") ==
        StartingPositionSpec.AtTimestamp(Instant.parse("2023-08-30T19:00:05Z"))
    )
    assert(
      start("AT_TIMESTAMP 2023-08-30T19:00:05-08:00") ==
        StartingPositionSpec.AtTimestamp(Instant.parse("2023-08-31T03:00:05Z"))
    )
    assert(
      start("at_timestamp   2023-08-30T19:00:05.250+02:00") ==
        StartingPositionSpec.AtTimestamp(Instant.parse("2023-08-30T17:00:05.250Z"))
    )
  }

  test("bad starting positions name the option, echo the value and list what is allowed") {
    val m = failureWith("kinesis.startingPosition" -> "NOW")
    assert(m.contains("'NOW'") && m.contains("kinesis.startingPosition"))
    assert(m.contains("LATEST, TRIM_HORIZON, EARLIEST") && m.contains("AT_TIMESTAMP"))
    for (bad <- Seq("AT_TIMESTAMP", "AT_TIMESTAMP yesterday", "AT_TIMESTAMP 2023-08-30T19:00:05")) {
      val mm = failureWith("kinesis.startingPosition" -> bad)
      assert(mm.contains(s"'$bad'") && mm.contains("ISO-8601"), mm)
    }
    // The parser on its own explains which part is not an instant.
    val Left(why) = StartingPositionSpec.parse("AT_TIMESTAMP 2023-13-45T00:00:00Z"): @unchecked
    assert(why.contains("'2023-13-45T00:00:00Z' is not an ISO-8601 instant"))
  }

  // ---------------------------------------------------------------- region and endpoint

  private def client(options: (String, String)*)(defaultRegion: Option[String] = None) =
    SourceConfig.parse(Map("kinesis.streamName" -> "s") ++ options, () => defaultRegion).client

  test("the endpoint is derived from the region, including China regions") {
    assert(
      client("kinesis.region" -> "eu-central-1")().endpointUrl == "https://kinesis.eu-central-1.amazonaws.com"
    )
    assert(
      client("kinesis.region" -> "cn-north-1")().endpointUrl == "https://kinesis.cn-north-1.amazonaws.com.cn"
    )
  }

  test("the region is derived from a regional endpoint") {
    val c = client("kinesis.endpointUrl" -> "https://kinesis.ap-southeast-2.amazonaws.com")()
    assert(c.region == "ap-southeast-2")
    assert(c.endpointUrl == "https://kinesis.ap-southeast-2.amazonaws.com")
    assert(
      client(
        "kinesis.endpointUrl" -> "https://kinesis-fips.us-gov-west-1.amazonaws.com/"
      )().region == "us-gov-west-1"
    )
    assert(
      client(
        "kinesis.endpointUrl" -> "https://kinesis.cn-northwest-1.amazonaws.com.cn"
      )().region == "cn-northwest-1"
    )
  }

  test("an explicit region wins over the endpoint's, and kinesisRegion wins over region") {
    val c = client(
      "kinesis.region" -> "us-west-2",
      "kinesis.endpointUrl" -> "https://kinesis.eu-west-1.amazonaws.com"
    )()
    assert(c.region == "us-west-2" && c.endpointUrl == "https://kinesis.eu-west-1.amazonaws.com")
    assert(
      client("kinesis.region" -> "us-west-2", "kinesis.kinesisRegion" -> "eu-west-3")().region == "eu-west-3"
    )
  }

  test("a custom endpoint without a region in it falls back to the default region chain") {
    val c = client("kinesis.endpointUrl" -> "http://localhost:4566")(Some("us-east-2"))
    assert(c.region == "us-east-2" && c.endpointUrl == "http://localhost:4566")
    val d = client()(Some("sa-east-1"))
    assert(d.region == "sa-east-1" && d.endpointUrl == "https://kinesis.sa-east-1.amazonaws.com")
  }

  test("the default region chain is not consulted when the options give a region") {
    var asked = 0
    val chain = () => { asked += 1; Some("us-east-2") }
    SourceConfig.parse(base, chain)
    SourceConfig.parse(
      Map("kinesis.streamName" -> "s", "kinesis.endpointUrl" -> "https://kinesis.eu-west-1.amazonaws.com"),
      chain
    )
    assert(asked == 0)
  }

  test("no region anywhere fails and says how to set one") {
    val m = failure(Map("kinesis.streamName" -> "s"))
    assert(m.contains("No AWS region") && m.contains("kinesis.region") && m.contains("kinesis.endpointUrl"))
    val m2 = failure(Map("kinesis.streamName" -> "s", "kinesis.endpointUrl" -> "http://localhost:4566"))
    assert(m2.contains("No AWS region"))
  }

  test("the retry policy doubles up to its cap") {
    val p = RetryPolicy(retries = 5, baseMs = 100L, maxMs = 1000L)
    assert((0 to 5).map(p.delayMs) == Seq(100L, 200L, 400L, 800L, 1000L, 1000L))
    assert(p.delayMs(200) == 1000L)
  }
}
