package io.sparkkinesis.sink

import io.sparkkinesis.config.{MetricsLevel, ProducerKind, ProducerSettings, SinkConfig, ThreadingModel}
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.testutil.ErrorChecks.optionErrorMessage
import org.scalatest.funsuite.AnyFunSuite

class SinkConfigSuite extends AnyFunSuite {

  private val base = Map(
    "kinesis.streamName" -> "enriched",
    "kinesis.region" -> "eu-west-1",
    "kinesis.endpointUrl" -> "https://localhost:4567"
  )

  private def parse(extra: (String, String)*): SinkConfig = SinkConfig.parse(base ++ extra, () => None)

  private def failure(extra: (String, String)*): String =
    optionErrorMessage(intercept[IllegalArgumentException](parse(extra: _*)))

  test("every sink setting has its documented default") {
    val c = parse()
    assert(c.streamName == "enriched")
    assert(c.flushWaitTimeMs == 100L)
    assert(c.maxOutstandingRecords == 10000L)
    assert(
      c.producer == ProducerSettings(
        region = "eu-west-1",
        endpointHost = "localhost",
        endpointPort = 4567L,
        stsEndpoint = None,
        verifyCertificate = true,
        recordMaxBufferedTimeMs = 1000L,
        maxConnections = 1L,
        aggregationEnabled = true,
        aggregationMaxCount = 4294967295L,
        aggregationMaxSize = 51200L,
        recordTtlMs = 30000L,
        requestTimeoutMs = 6000L,
        rateLimit = 150L,
        metricsLevel = MetricsLevel.NoMetrics,
        threadingModel = ThreadingModel.PerRequest
      )
    )
    assert(c.commitTimeoutMs == 30000L + 2 * 6000L + 10000L)
  }

  test("the endpoint defaults to the region's, on port 443") {
    val c = SinkConfig.parse(Map("kinesis.streamName" -> "s", "kinesis.region" -> "us-east-2"), () => None)
    assert(c.producer.endpointHost == "kinesis.us-east-2.amazonaws.com")
    assert(c.producer.endpointPort == 443L)
  }

  test("every option reaches the KPL configuration") {
    val c = parse(
      "kinesis.sink.recordMaxBufferedTimeMs" -> "250",
      "kinesis.sink.maxConnections" -> "4",
      "kinesis.sink.aggregationEnabled" -> "false",
      "kinesis.sink.aggregationMaxCount" -> "100",
      "kinesis.sink.aggregationMaxSize" -> "4096",
      "kinesis.sink.recordTtl" -> "5000",
      "kinesis.sink.requestTimeoutMs" -> "2000",
      "kinesis.sink.rateLimit" -> "80",
      "kinesis.sink.metricsLevel" -> "SUMMARY",
      "kinesis.sink.threadingModel" -> "pooled",
      "kinesis.sink.verifyCertificate" -> "false",
      "kinesis.sink.stsEndpointUrl" -> "https://sts.local:8443"
    )
    val credentials = AwsCredentials.acquire(c.client.credentials).value
    val kpl = KplProducer.configuration(c.producer, credentials)
    assert(kpl.getRegion == "eu-west-1")
    assert(kpl.getKinesisEndpoint == "localhost")
    assert(kpl.getKinesisPort == 4567L)
    assert(!kpl.isVerifyCertificate)
    assert(kpl.getRecordMaxBufferedTime == 250L)
    assert(kpl.getMaxConnections == 4L)
    assert(!kpl.isAggregationEnabled)
    assert(kpl.getAggregationMaxCount == 100L)
    assert(kpl.getAggregationMaxSize == 4096L)
    assert(kpl.getRecordTtl == 5000L)
    assert(kpl.getRequestTimeout == 2000L)
    assert(kpl.getRateLimit == 80L)
    assert(kpl.getMetricsLevel == "summary")
    assert(kpl.getThreadingModel.toString == "POOLED")
    assert(kpl.getCredentialsProvider eq credentials)
    assert(kpl.getRecordDistributionStrategyDefault.toString == "USER_PARTITION_KEY")
    assert(kpl.getStsEndpoint == "sts.local" && kpl.getStsPort == 8443L)
  }

  test("an http endpoint is refused for writes: the KPL speaks only HTTPS") {
    val message = failure("kinesis.endpointUrl" -> "http://127.0.0.1:4566")
    assert(message.contains("kinesis.endpointUrl") && message.contains("'http://127.0.0.1:4566'"))
    assert(message.contains("speaks only HTTPS") && message.contains("kinesis.sink.verifyCertificate"))
  }

  test("kinesis.sink.producer picks the producer, KPL by default") {
    assert(parse().producer.producer == ProducerKind.Kpl)
    assert(parse("kinesis.sink.producer" -> "java").producer.producer == ProducerKind.Java)
    assert(failure("kinesis.sink.producer" -> "native").contains("one of KPL, JAVA"))
  }

  test("the in-JVM producer refuses the KPL's own options, naming the producer, and speaks HTTP too") {
    val java = "kinesis.sink.producer" -> "JAVA"
    for (
      (option, value) <- Seq(
        "kinesis.sink.threadingModel" -> "POOLED",
        "kinesis.sink.metricsLevel" -> "summary",
        "kinesis.sink.stsEndpointUrl" -> "https://sts.local"
      )
    ) {
      val message = failure(java, option -> value)
      assert(message.contains(option) && message.contains("kinesis.sink.producer is JAVA"), message)
      assert(message.contains("kinesis.sink.producer=KPL"), message)
      assert(parse(option -> value).producer.producer == ProducerKind.Kpl) // the KPL takes it
    }
    // Options both producers share keep their meaning; metricsLevel=none asks for nothing.
    val shared = parse(
      java,
      "kinesis.sink.metricsLevel" -> "none",
      "kinesis.sink.aggregationMaxCount" -> "100",
      "kinesis.sink.recordTtl" -> "5s",
      "kinesis.endpointUrl" -> "http://127.0.0.1:4566"
    )
    assert(shared.producer.aggregationMaxCount == 100 && shared.producer.recordTtlMs == 5000)
    assert(shared.client.endpointUrl == "http://127.0.0.1:4566")
  }

  test("bad sink values name the option, the value and what is allowed") {
    assert(failure("kinesis.sink.maxConnections" -> "0").contains("a value from 1 to 256"))
    assert(failure("kinesis.sink.recordTtl" -> "soon").contains("'soon' for option kinesis.sink.recordTtl"))
    assert(failure("kinesis.sink.metricsLevel" -> "all").contains("one of none, summary, detailed"))
    assert(failure("kinesis.sink.aggregationMaxSize" -> "2000000").contains("from 64 to 1048576"))
  }

  test("source options are refused in a write") {
    assert(failure("kinesis.startingPosition" -> "LATEST").contains("applies to reads (the source) only"))
  }
}
