package io.sparkkinesis.source

import java.time.Instant

import scala.io.Source

import io.sparkkinesis.client._
import io.sparkkinesis.config.{ShardPlace, ShardPositions, StreamIdentity}
import io.sparkkinesis.errors.KinesisError
import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import org.apache.spark.sql.connector.read.streaming.ReadLimit
import org.scalatest.funsuite.AnyFunSuite

/**
 * A stream deleted and re-created under its name: identities in offsets, recorded ends and positions documents (old
 * and new forms), the pure decision, and what a restarted source does with a checkpoint of the old stream.
 */
class StreamIdentitySuite extends AnyFunSuite {
  import StreamFakes._

  private val OldCreated = Instant.parse("2026-11-26T17:13:22.126Z")
  private val NewCreated = Instant.parse("2026-11-26T17:13:22.624Z")
  private def arn(stream: String) = s"arn:aws:kinesis:us-east-1:123456789012:stream/$stream"
  private val Seq1 = "49590338271490256608559692538361571095921575989136588898"

  private def resource(name: String): String = {
    val source = Source.fromResource(s"offsets/$name", getClass.getClassLoader)
    try source.mkString
    finally source.close()
  }

  // ---- codec ----

  test("offsets written before identities (versions 1 and 2) read with none, and write as before") {
    for (name <- Seq("v1-offset.json", "v2-offset-grouped.json")) {
      val offset = OffsetJson.readOffset(resource(name))
      assert(offset.identities.isEmpty, name)
      assert(!offset.json().contains("streamIdentities"), name)
      assert(OffsetJson.readOffset(offset.json()) == offset, name)
    }
  }

  test("an offset with identities reads them (version 1 and 2 fixtures) and writes them back unchanged") {
    val v1 = OffsetJson.readOffset(resource("v1-offset-with-stream-identities.json"))
    assert(
      v1.identities == Map(
        "orders" -> StreamIdentity.of(arn("orders"), Some(OldCreated)),
        "payments" -> StreamIdentity.of(arn("payments"), Some(Instant.parse("2025-01-02T03:04:05Z")))
      )
    )
    // The shards are those of the fixture without identities: the field adds, it changes nothing else.
    assert(v1.shards == OffsetJson.readOffset(resource("v1-offset.json")).shards)
    assert(OffsetJson.readOffset(v1.json()) == v1)
    assert(v1.json().contains("\"version\":1"))
    val v2 = OffsetJson.readOffset(resource("v2-offset-grouped-with-stream-identities.json"))
    assert(v2.identities("orders").createdAt.contains(OldCreated))
    assert(v2.json().contains("\"version\":2"))
    assert(OffsetJson.readOffset(v2.json()) == v2)
    // Offsets that differ only in identities are not equal.
    assert(v1 != v1.copy(identities = Map.empty))
  }

  test("a recorded end carries the identity of the stream read; entries without one read as unknown") {
    val plain = RecordedEndJson.readRecordedEnd(resource("v1-shard-end.json"))
    assert(plain.stream.isEmpty)
    val stamped = RecordedEndJson.readRecordedEnd(resource("v1-shard-end-with-stream-identity.json"))
    assert(stamped.stream.contains(StreamIdentity.of(arn("orders"), Some(OldCreated))))
    assert(stamped.copy(stream = None) == plain)
    assert(RecordedEndJson.readRecordedEnd(RecordedEndJson.writeEnd(stamped)) == stamped)
    assert(!RecordedEndJson.writeEnd(plain).contains("\"stream\""))
  }

  test("a malformed identity fails naming the field") {
    val bad = resource("v1-offset-with-stream-identities.json").replace("2025-01-02T03:04:05Z", "yesterday")
    val e = intercept[IllegalArgumentException](OffsetJson.readOffset(bad))
    assert(e.getMessage.contains("'yesterday' is not an ISO-8601 instant"))
  }

  // ---- positions documents ----

  test("a positions document may name its stream; the identity keys are not shards, and it renders back") {
    val raw =
      s"""{"orders": {"streamArn": "${arn("orders")}", "streamCreationTimestamp": "2026-11-26T17:13:22.126Z",
         |"shardId-000000000000": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": "$Seq1"}},
         |"clicks": {"shardId-000000000000": {"type": "TRIM_HORIZON"}}}""".stripMargin
    val doc = ShardPositions.parse(raw, ShardPositions.StartTypes).toOption.get
    assert(doc.streams("orders").keySet == Set("shardId-000000000000"))
    assert(doc.identities == Map("orders" -> StreamIdentity.of(arn("orders"), Some(OldCreated))))
    assert(ShardPositions.parse(doc.toJson, ShardPositions.StartTypes) == Right(doc))
    assert(doc.placeOf("orders", "shardId-000000000000").contains(ShardPlace.AfterSequence(Seq1, None)))
  }

  test("a document's identity is checked: an ARN of another stream, a bad time, identity without shards") {
    def problem(raw: String) = ShardPositions.parse(raw, ShardPositions.StartTypes).swap.toOption.get
    val shard = """"shardId-0": {"type": "TRIM_HORIZON"}"""
    assert(
      problem(s"""{"orders": {"streamArn": "${arn("clicks")}", $shard}}""")
        .contains("is not the ARN of stream 'orders'")
    )
    assert(
      problem(s"""{"orders": {"streamCreationTimestamp": "26/11/2026", $shard}}""")
        .contains("streamCreationTimestamp '26/11/2026' is not an ISO-8601 instant")
    )
    assert(problem(s"""{"orders": {"streamCreationTimestamp": 5, $shard}}""").contains("must be a string"))
    assert(
      problem("""{"orders": {"streamCreationTimestamp": "2026-11-26T17:13:22Z"}}""")
        .contains("non-empty object of shard id -> position")
    )
  }

  // ---- the pure decision ----

  private val old = StreamIdentity.of(arn("orders"), Some(OldCreated))
  private val fresh = StreamIdentity.of(arn("orders"), Some(NewCreated))

  private def decide(recorded: Option[StreamIdentity], current: StreamIdentity, failOnDataLoss: Boolean) = {
    var warned = Seq.empty[String]
    val d = StreamIdentity.restarts(
      "orders",
      recorded,
      current,
      failOnDataLoss,
      "the checkpoint",
      "use a new checkpoint location",
      m => warned :+= m
    )
    (d, warned)
  }

  test("decision: the same stream, or nothing recorded, goes on without a word") {
    assert(decide(Some(old), old, failOnDataLoss = true) == (false, Nil))
    assert(decide(None, fresh, failOnDataLoss = true) == (false, Nil))
    // A part one side does not know is not compared: an ARN alone matches any creation time.
    assert(!decide(Some(StreamIdentity(Some(arn("orders")), None)), fresh, failOnDataLoss = true)._1)
  }

  test(
    "decision: a re-created stream (same ARN, later creation) fails naming both times, both ARNs and the fixes"
  ) {
    val e = intercept[IllegalStateException](decide(Some(old), fresh, failOnDataLoss = true))
    assert(e.asInstanceOf[KinesisError].getCondition == "KINESIS_STREAM_RECREATED")
    val m = e.getMessage
    Seq(
      "Stream orders was deleted and re-created",
      s"created $OldCreated, ARN ${arn("orders")}",
      s"created $NewCreated, ARN ${arn("orders")}",
      "use a new checkpoint location",
      "kinesis.failOnDataLoss=false"
    ).foreach(part => assert(m.contains(part), s"'$part' not in: $m"))
    // Another ARN (another account or region) is another stream too, whatever the times say.
    intercept[IllegalStateException](
      decide(
        Some(StreamIdentity(Some(arn("orders").replace("123456789012", "210987654321")), None)),
        fresh,
        true
      )
    )
  }

  test("decision: with failOnDataLoss=false a re-created stream restarts from TRIM_HORIZON with a warning") {
    val (d, warned) = decide(Some(old), fresh, failOnDataLoss = false)
    assert(d)
    assert(warned.size == 1)
    assert(warned.head.contains(OldCreated.toString) && warned.head.contains(NewCreated.toString))
    assert(warned.head.contains("Reading the new stream from TRIM_HORIZON"))
  }

  // ---- the source, restarted on a checkpoint ----

  /** The control plane of streams whose creation times a test sets (None: unknown, as some emulators answer). */
  private final class Streams(var created: Map[String, Option[Instant]], shards: Seq[ShardDescription])
      extends StreamMetadataClient {
    var describes = 0

    def describeStream(streamName: String): StreamSummary = {
      describes += 1
      StreamSummary(streamName, arn(streamName), "ACTIVE", 24, createdAt = created(streamName))
    }
    def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage = ShardPage(shards, None)
    def close(): Unit = ()
  }

  private def source(
      metadata: Streams,
      entries: Entries,
      options: (String, String)*
  ): KinesisMicroBatchStream = {
    val c = config(options: _*)
    new KinesisMicroBatchStream(
      c,
      metadata,
      noRecords,
      noConsumers,
      StreamFakes.StoreOf(_ => entries),
      template(c),
      10
    )
  }

  /** Batch 0 of `orders,payments` read by a first run, its ends recorded: the checkpoint a restart finds. */
  private def firstRun(metadata: Streams, entries: Entries): KinesisOffset = {
    val s = source(metadata, entries, "kinesis.streamName" -> "orders,payments")
    try {
      val initial = s.initialOffset().asInstanceOf[KinesisOffset]
      assert(initial.identities.keySet == Set("orders", "payments"))
      val b0 = s.latestOffset(initial, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b0.identities == initial.identities && b0.readShards.size == 4)
      b0.readTasks.foreach { task =>
        val end =
          ShardEnd(ShardPosition.After(Seq1, -1), false, Nil, 1L, None, reachedTip = true, lost = false)
        entries.putIfAbsent(b0.batchId, task.metadataKey, RecordedEndJson.writeEnd(RecordedEnd(end)))
      }
      b0
    } finally s.stop()
  }

  private val twoShards = open("shardId-000000000000", "shardId-000000000001")

  test(
    "restart on a checkpoint of the same streams goes on from the recorded ends, one describe per stream"
  ) {
    val metadata = new Streams(Map("orders" -> Some(OldCreated), "payments" -> Some(OldCreated)), twoShards)
    val entries = new Entries
    val b0 = firstRun(metadata, entries)
    metadata.describes = 0
    val s =
      source(metadata, entries, "kinesis.streamName" -> "orders,payments", "kinesis.failOnDataLoss" -> "true")
    try {
      val b1 = s.latestOffset(b0, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(b1.readShards.forall(_._2.position == ShardPosition.After(Seq1, -1)))
      assert(b1.identities == b0.identities)
      // Each task gets its stream's identity, which it writes with its recorded end.
      val tasks = s.planInputPartitions(b0, b1).toSeq.map(slice)
      assert(tasks.size == 4)
      assert(tasks.forall(p => p.streamIdentity == b1.identities.get(p.streamName)))
      assert(metadata.describes == 2) // at start, once per stream; not per batch
    } finally s.stop()
  }

  test("restart after one of several streams was re-created fails naming that stream (failOnDataLoss=true)") {
    val metadata = new Streams(Map("orders" -> Some(OldCreated), "payments" -> Some(OldCreated)), twoShards)
    val entries = new Entries
    val b0 = firstRun(metadata, entries)
    metadata.created = metadata.created.updated("payments", Some(NewCreated))
    val s =
      source(metadata, entries, "kinesis.streamName" -> "orders,payments", "kinesis.failOnDataLoss" -> "true")
    try {
      val e = intercept[IllegalStateException](s.latestOffset(b0, ReadLimit.allAvailable()))
      assert(e.getMessage.contains("Stream payments was deleted and re-created"), e.getMessage)
      assert(e.getMessage.contains(s"created $OldCreated") && e.getMessage.contains(s"created $NewCreated"))
      assert(e.getMessage.contains("new checkpoint location"))
      // A batch planned before the restart and run again fails too, before its tasks read anything.
      intercept[IllegalStateException](s.planInputPartitions(b0, b0))
    } finally s.stop()
  }

  test("restart after re-creation fails by default: kinesis.failOnDataLoss must be set to false explicitly") {
    val metadata = new Streams(Map("orders" -> Some(OldCreated), "payments" -> Some(OldCreated)), twoShards)
    val entries = new Entries
    val b0 = firstRun(metadata, entries)
    metadata.created = metadata.created.updated("orders", Some(NewCreated))
    val s = source(metadata, entries, "kinesis.streamName" -> "orders,payments")
    try {
      val e = intercept[IllegalStateException](s.latestOffset(b0, ReadLimit.allAvailable()))
      assert(e.getMessage.contains("Stream orders was deleted and re-created"), e.getMessage)
      assert(e.getMessage.contains("kinesis.failOnDataLoss=false explicitly"), e.getMessage)
    } finally s.stop()
  }

  test(
    "restart after re-creation with failOnDataLoss=false reads the new stream from TRIM_HORIZON, others on"
  ) {
    val metadata = new Streams(Map("orders" -> Some(OldCreated), "payments" -> Some(OldCreated)), twoShards)
    val entries = new Entries
    val b0 = firstRun(metadata, entries)
    metadata.created = metadata.created.updated("payments", Some(NewCreated))
    val s = source(
      metadata,
      entries,
      "kinesis.streamName" -> "orders,payments",
      "kinesis.failOnDataLoss" -> "false"
    )
    try {
      val b1 = s.latestOffset(b0, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      val (orders, payments) = b1.shards.partition(_._1.streamName == "orders")
      assert(orders.values.forall(_.position == ShardPosition.After(Seq1, -1)))
      assert(payments.size == 2 && payments.values.forall(_.position == ShardPosition.TrimHorizon))
      assert(payments.values.forall(_.status == ShardStatus.Read))
      assert(b1.identities("payments").createdAt.contains(NewCreated))
      assert(b1.identities("orders").createdAt.contains(OldCreated))
    } finally s.stop()
  }

  test(
    "an old checkpoint without identities goes on and records them from the first batch after the upgrade"
  ) {
    val metadata = new Streams(Map("orders" -> Some(NewCreated)), twoShards)
    val entries = new Entries
    val legacy = OffsetJson.readOffset(resource("v1-offset.json"))
    val checkpoint = legacy.copy(batchId = -1L, shards = legacy.shards.filter(_._1.streamName == "orders"))
    val s = source(metadata, entries, "kinesis.failOnDataLoss" -> "true")
    try {
      val next = s.latestOffset(checkpoint, ReadLimit.allAvailable()).asInstanceOf[KinesisOffset]
      assert(next.identities == Map("orders" -> StreamIdentity.of(arn("orders"), Some(NewCreated))))
      assert(next.shards.keySet.filter(_.streamName == "orders") == checkpoint.shards.keySet)
      assert(OffsetJson.readOffset(next.json()).identities == next.identities)
    } finally s.stop()
  }

  test("a starting positions document of the old stream fails a new query, or starts it at TRIM_HORIZON") {
    val metadata = new Streams(Map("orders" -> Some(NewCreated)), twoShards)
    val doc =
      s"""{"orders": {"streamArn": "${arn("orders")}", "streamCreationTimestamp": "$OldCreated",
         |"shardId-000000000000": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": "$Seq1"}}}""".stripMargin
    val failing =
      source(metadata, new Entries, "kinesis.startingPosition" -> doc, "kinesis.failOnDataLoss" -> "true")
    try {
      val e = intercept[IllegalStateException](failing.initialOffset())
      assert(
        e.getMessage.contains("the kinesis.startingPosition document was written for the stream created")
      )
    } finally failing.stop()
    val lenient =
      source(metadata, new Entries, "kinesis.startingPosition" -> doc, "kinesis.failOnDataLoss" -> "false")
    try {
      val initial = lenient.initialOffset().asInstanceOf[KinesisOffset]
      assert(initial.shards.values.forall(_.position == ShardPosition.TrimHorizon))
    } finally lenient.stop()
    // The same document of the current stream places the shard as written.
    val current = doc.replace(OldCreated.toString, NewCreated.toString)
    val placed =
      source(metadata, new Entries, "kinesis.startingPosition" -> current, "kinesis.failOnDataLoss" -> "true")
    try {
      val initial = placed.initialOffset().asInstanceOf[KinesisOffset]
      assert(
        initial.shards(ShardKey("orders", "shardId-000000000000")).position == ShardPosition.After(Seq1, -1)
      )
    } finally placed.stop()
  }
}
