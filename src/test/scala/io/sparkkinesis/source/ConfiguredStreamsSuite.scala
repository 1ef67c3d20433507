package io.sparkkinesis.source

import java.time.Instant

import io.sparkkinesis.client._
import io.sparkkinesis.config.StreamIdentity
import io.sparkkinesis.errors.KinesisError
import org.scalatest.funsuite.AnyFunSuite

/** The configured streams against a checkpoint's: streams added, dropped and re-created since, described once. */
class ConfiguredStreamsSuite extends AnyFunSuite {
  import StreamFakes._

  private def arn(stream: String) = s"arn:aws:kinesis:us-east-1:123456789012:stream/$stream"
  private val Created = Instant.parse("2026-11-26T17:13:22.126Z")

  /** Streams created at `created` (a test may re-create one), each with the shards `shards`. */
  private final class Streams(var created: Map[String, Instant]) extends StreamMetadataClient {
    var describes = 0

    def describeStream(streamName: String): StreamSummary = {
      describes += 1
      StreamSummary(streamName, arn(streamName), "ACTIVE", 24, Some(0L), createdAt = created.get(streamName))
    }

    def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage =
      ShardPage(open("shardId-000000000000", "shardId-000000000001"), None)
    def close(): Unit = ()
  }

  private def configured(client: Streams, options: (String, String)*): ConfiguredStreams = {
    val c = config(options: _*)
    val listing = new ShardListing(client, c.streamNames, c.streamId, c.describeShardIntervalMs, () => 0L)
    ConfiguredStreams.describe(c, client, () => listing.shards(), () => 0L)
  }

  private def streamsOf(offset: KinesisOffset) = offset.shards.keySet.map(_.streamName)

  test("each stream is described once, and the first offset reads all of them with their identities") {
    val client = new Streams(Map("orders" -> Created, "clicks" -> Created))
    val streams = configured(client, "kinesis.streamName" -> "orders,clicks")
    assert(client.describes == 2)
    val initial = streams.initial()
    assert(initial.batchId == -1L && streamsOf(initial) == Set("orders", "clicks"))
    assert(initial.identities("clicks") == StreamIdentity.of(arn("clicks"), Some(Created)))
    assert(initial.readShards.size == 4 && client.describes == 2)
  }

  test("a stream added since the checkpoint starts unread, a dropped one goes, the run id is kept") {
    val client = new Streams(Map("orders" -> Created, "clicks" -> Created))
    val checkpoint = configured(client, "kinesis.streamName" -> "orders").initial()
    val now = configured(client, "kinesis.streamName" -> "clicks").reconcile(checkpoint)
    assert(streamsOf(now) == Set("clicks") && now.runId == checkpoint.runId)
    assert(now.readShards.isEmpty, "the shards added are read from the next offset on")
    assert(now.identities.keySet == Set("clicks"))
    val same = configured(client, "kinesis.streamName" -> "orders")
    assert(same.reconcile(checkpoint) == checkpoint)
  }

  test(
    "a stream re-created since the checkpoint fails the query, or starts again with failOnDataLoss=false"
  ) {
    val client = new Streams(Map("orders" -> Created))
    val checkpoint = configured(client).initial()
    client.created = Map("orders" -> Created.plusSeconds(60))
    val failing = configured(client)
    val error = intercept[Exception](failing.restarted(checkpoint))
    assert(error.asInstanceOf[KinesisError].getCondition == "KINESIS_STREAM_RECREATED")
    assert(error.getMessage.contains("orders"))
    val lenient = configured(client, "kinesis.failOnDataLoss" -> "false")
    assert(lenient.restarted(checkpoint) == Set("orders"))
    val again = lenient.reconcile(checkpoint)
    assert(again.identities("orders").createdAt.contains(Created.plusSeconds(60)))
    assert(again.shards.keySet == checkpoint.shards.keySet && again.readShards.isEmpty)
  }

  test("a checkpoint without identities keeps its streams and records their identities from now on") {
    val client = new Streams(Map("orders" -> Created))
    val checkpoint = configured(client).initial().copy(identities = Map.empty)
    val streams = configured(client)
    assert(streams.restarted(checkpoint).isEmpty)
    assert(streams.reconcile(checkpoint) == checkpoint.copy(identities = streams.identities))
  }
}
