package io.sparkkinesis.config

import scala.jdk.CollectionConverters._

import com.fasterxml.jackson.databind.ObjectMapper
import org.scalatest.funsuite.AnyFunSuite

class OptionsExportSuite extends AnyFunSuite {
  private val root = new ObjectMapper().readTree(OptionsExport.json)
  private val exported = root.get("options").elements().asScala.toList

  test("every option is exported once, in table order") {
    assert(root.get("formatVersion").asInt == OptionsExport.FormatVersion)
    assert(exported.map(_.get("key").asText) == KinesisOptions.all.map(_.key))
  }

  test("every option KinesisOptions declares is in its table, in the order of the declarations") {
    val declared = KinesisOptions.getClass.getDeclaredMethods.toSeq
      .filter(m => m.getParameterCount == 0 && m.getReturnType == classOf[OptionSpec[_]])
      .map(_.invoke(KinesisOptions).asInstanceOf[OptionSpec[_]])
    assert(declared.size > 80)
    assert(declared.toSet == KinesisOptions.all.toSet)
    assert(
      KinesisOptions.all.head == KinesisOptions.EndpointUrl && KinesisOptions.all.last == KinesisOptions.SchemaRegistryEndpointUrl
    )
  }

  test("bounds, choices, defaults and secrecy are exported as data") {
    def find(key: String) = exported.find(_.get("key").asText == key).get
    val perFetch = find(KinesisOptions.RecordsPerFetch.key)
    assert(perFetch.get("type").asText == "integer")
    assert(perFetch.get("min").asLong == 1 && perFetch.get("max").asLong == 10000)
    assert(perFetch.get("default").asText == "10000")
    val consumerType = find(KinesisOptions.ConsumerType.key)
    assert(consumerType.get("type").asText == "choice")
    assert(
      consumerType.get("choices").elements().asScala.map(_.asText).toSeq == Seq(
        "GetRecords",
        "SubscribeToShard"
      )
    )
    val stream = find(KinesisOptions.StreamName.key)
    assert(stream.get("required").asBoolean && stream.get("default").isNull)
    assert(find(KinesisOptions.AwsSecretKey.key).get("secret").asBoolean)
    assert(find(KinesisOptions.DescribeShardInterval.key).get("default").asText == "1s")
    val timeout = find(KinesisOptions.SubscribeTimeoutSec.key)
    assert(timeout.get("type").asText == "duration" && timeout.get("unit").asText == "s")
    assert(
      (timeout.get("min").asLong, timeout.get("max").asLong, timeout.get("default").asText) == ((
        1000L,
        3600000L,
        "1m"
      ))
    )
    assert(find(KinesisOptions.FetchIntervalMs.key).get("unit").asText == "ms")
    assert(perFetch.get("unit").isNull)
  }

  test("value patterns and the cross-option rules are exported as data, in evaluation order") {
    def find(key: String) = exported.find(_.get("key").asText == key).get
    assert(find(KinesisOptions.EndpointUrl.key).get("pattern").asText == OptionSpec.HttpUrl.regex)
    assert(find(KinesisOptions.EndpointUrl.key).get("patternText").asText == "an http:// or https:// URL")
    assert(find(KinesisOptions.AwsSecretKey.key).get("pattern").isNull)
    val names = find(KinesisOptions.StreamName.key)
    assert(names.get("pattern").asText == StreamArns.NamePattern)
    assert(names.get("patternListOf").asText == "a stream name")
    assert(find(KinesisOptions.Region.key).get("patternListOf").isNull)
    val rate = find(KinesisOptions.MaxFetchRate.key)
    assert(
      (rate.get("min").isNull, rate.get("above").asDouble, rate.get("max").asDouble) == ((true, 0.0, 1000.0))
    )
    val rules = root.get("rules").elements().asScala.toList
    assert(rules.map(_.get("id").asText) == OptionRules.all.map(_.id))
    val notPaced = rules.find(_.get("id").asText == "fan-out-not-paced").get
    assert(notPaced.get("scope").asText == "source")
    val when = notPaced.get("when").get("all").elements().asScala.toList
    assert(
      when.head.get("equals").elements().asScala.map(_.asText).toList == List(
        "consumerType",
        "SubscribeToShard"
      )
    )
    assert(when(1).get("set").asText == "maxFetchRate")
    assert(notPaced.get("require").get("any").size == 0)
    assert(notPaced.get("message").asText.contains("{kinesis.maxFetchRate}"))
  }

  test("the position grammar is exported from the parsers: each name parses as its canonical name") {
    val positions = root.get("positions")
    val start = positions.get("start")
    assert(start.get("option").asText == KinesisOptions.StartingPosition.key)
    val names =
      start.get("names").properties().iterator().asScala.map(e => e.getKey -> e.getValue.asText).toList
    assert(
      names == List("LATEST" -> "LATEST", "TRIM_HORIZON" -> "TRIM_HORIZON", "EARLIEST" -> "TRIM_HORIZON")
    )
    names.foreach { case (name, canonical) =>
      assert(StartingPositionSpec.parse(name.toLowerCase) == StartingPositionSpec.parse(canonical))
    }
    val end = positions.get("end")
    assert(end.get("names").properties().iterator().asScala.map(_.getKey).toList == List("LATEST"))
    assert(end.get("placeTypes").elements().asScala.map(_.asText).toList == ShardPositions.EndTypes.toList)
    assert(StartingPositionSpec.parse("NOW") == Left(start.get("allowed").asText))
    val at = positions.get("atTimestamp").asText
    assert(EndingPositionSpec.parse(s"$at 2026-11-01T00:00:00Z").isRight)
    val shardId = positions.get("shardIdPattern").asText
    assert("shardId-000000000000".matches(shardId) && !"shard 0".matches(shardId))
    val seq = positions.get("sequenceNumberPattern").asText
    assert("49590338271490256608559692538361571095921575989136588898".matches(seq) && !"012".matches(seq))
    val identity = positions.get("identityFields")
    assert(identity.get("arn").asText == StreamIdentity.ArnField)
    assert(identity.get("created").asText == StreamIdentity.CreatedField)
  }

  test("the build put the same JSON into the classes directory the jar is made from") {
    val resource = getClass.getClassLoader.getResourceAsStream(OptionsExport.ResourcePath)
    assert(
      resource != null,
      s"${OptionsExport.ResourcePath} is missing: the exec-maven-plugin step did not run"
    )
    val text =
      try new String(resource.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8)
      finally resource.close()
    assert(text == OptionsExport.json)
  }
}
