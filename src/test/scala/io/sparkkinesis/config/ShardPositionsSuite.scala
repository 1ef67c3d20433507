package io.sparkkinesis.config

import java.time.Instant

import org.scalatest.funsuite.AnyFunSuite

/** Per-shard positions documents: what they mean, and one clear message per kind of mistake. */
class ShardPositionsSuite extends AnyFunSuite {
  private val Seq1 = "49590338271490256608559692538361571095921575989136588898"
  private val base = Map("kinesis.streamName" -> "orders,clicks", "kinesis.region" -> "us-east-1")

  private def config(extra: (String, String)*): SourceConfig = SourceConfig.parse(base ++ extra, () => None)

  private def failure(extra: (String, String)*): String =
    intercept[IllegalArgumentException](config(extra: _*)).getMessage

  private def startDoc(json: String): ShardPositions =
    config("kinesis.startingPosition" -> json).startingPosition match {
      case StartingPositionSpec.PerShard(p) => p
      case other => fail(s"not a document: $other")
    }

  test("every place type is read, with optional sub-sequence numbers") {
    val doc = startDoc(
      s"""{"orders": {
         |  "shardId-000000000000": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": "$Seq1", "subSequenceNumber": 2},
         |  "shardId-000000000001": {"type": "AT_SEQUENCE_NUMBER", "sequenceNumber": "$Seq1"},
         |  "shardId-000000000002": {"type": "TRIM_HORIZON"},
         |  "shardId-000000000003": {"type": "LATEST"},
         |  "shardId-000000000004": {"type": "AT_TIMESTAMP", "timestamp": "2023-08-30T19:00:05-08:00"},
         |  "shardId-000000000005": {"type": "SHARD_END"}},
         | "clicks": {"shardId-000000000000": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": "7"}}}""".stripMargin
    )
    assert(doc.placeOf("orders", "shardId-000000000000").contains(ShardPlace.AfterSequence(Seq1, Some(2))))
    assert(doc.placeOf("orders", "shardId-000000000001").contains(ShardPlace.AtSequence(Seq1, None)))
    assert(doc.placeOf("orders", "shardId-000000000002").contains(ShardPlace.TrimHorizon))
    assert(doc.placeOf("orders", "shardId-000000000003").contains(ShardPlace.Latest))
    assert(
      doc
        .placeOf("orders", "shardId-000000000004")
        .contains(ShardPlace.AtTimestamp(Instant.parse("2023-08-31T03:00:05Z")))
    )
    assert(doc.placeOf("orders", "shardId-000000000005").contains(ShardPlace.ShardEnd))
    assert(doc.placeOf("clicks", "shardId-000000000000").contains(ShardPlace.AfterSequence("7", None)))
    assert(doc.placeOf("clicks", "shardId-000000000001").isEmpty)
  }

  test("a document survives writing and reading back") {
    val doc = ShardPositions(
      Map(
        "orders" -> Map(
          "shardId-000000000000" -> ShardPlace.AfterSequence(Seq1, Some(0)),
          "shardId-000000000001" -> ShardPlace.AtSequence("5", Some(3)),
          "shardId-000000000002" -> ShardPlace.AtTimestamp(Instant.parse("2026-11-24T10:00:00Z")),
          "shardId-000000000003" -> ShardPlace.ShardEnd
        )
      )
    )
    assert(ShardPositions.parse(doc.toJson, ShardPositions.StartTypes) == Right(doc))
  }

  test("the single-value forms are unchanged") {
    assert(
      config(
        "kinesis.startingPosition" -> "trim_horizon"
      ).startingPosition == StartingPositionSpec.TrimHorizon
    )
    assert(config().endingPosition.isEmpty)
    assert(config("kinesis.endingPosition" -> "LATEST").endingPosition.contains(EndingPositionSpec.Latest))
    assert(
      config("kinesis.endingPosition" -> "AT_TIMESTAMP 2023-08-30T19:00:05Z").endingPosition
        .contains(EndingPositionSpec.AtTimestamp(Instant.parse("2023-08-30T19:00:05Z")))
    )
  }

  private val shard0 = "shardId-000000000000"

  private def startFailure(position: String, stream: String = "orders", shard: String = shard0): String =
    failure("kinesis.startingPosition" -> s"""{"$stream": {"$shard": $position}}""")

  test("bad documents fail when the query is defined, naming the option, the shard and the problem") {
    val cases = Seq(
      startFailure("""{"type": "AT_SEQUENCE_NUMBER", "sequenceNumber": "12x4"}""") ->
        Seq("kinesis.startingPosition", shard0, "12x4", "not a Kinesis sequence number"),
      startFailure("""{"type": "AT_SEQUENCE_NUMBER", "sequenceNumber": 1234}""") ->
        Seq(shard0, "1234", "a string of decimal digits"),
      startFailure("""{"type": "AFTER_SEQUENCE_NUMBER"}""") -> Seq(shard0, "needs a sequenceNumber"),
      startFailure("""{"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": "5", "subSequenceNumber": -1}""") ->
        Seq(shard0, "subSequenceNumber -1", "at least 0"),
      startFailure("""{"type": "SOMEWHERE"}""") -> Seq(shard0, "type 'SOMEWHERE'", "TRIM_HORIZON, LATEST"),
      startFailure("""{"type": "TRIM_HORIZON", "sequenceNumber": "5"}""") -> Seq(
        shard0,
        "TRIM_HORIZON takes no"
      ),
      startFailure("""{"type": "AT_TIMESTAMP", "timestamp": "yesterday"}""") -> Seq(shard0, "'yesterday'"),
      startFailure("""{"type": "TRIM_HORIZON", "sequnceNumber": "5"}""") -> Seq(
        shard0,
        "unknown field 'sequnceNumber'"
      ),
      startFailure("""{"type": "TRIM_HORIZON"}""", shard = "shard 7") -> Seq("'shard 7' is not a shard id"),
      startFailure("""{"type": "TRIM_HORIZON"}""", stream = "payments") ->
        Seq("kinesis.startingPosition", "stream 'payments' is not read by this query", "orders, clicks"),
      failure("kinesis.startingPosition" -> """{"orders": [1, 2]}""") -> Seq(
        "stream 'orders'",
        "non-empty object"
      ),
      failure("kinesis.startingPosition" -> """{"orders": {""") -> Seq(
        "kinesis.startingPosition",
        "not valid JSON"
      ),
      failure("kinesis.endingPosition" -> s"""{"orders": {"$shard0": {"type": "SHARD_END"}}}""") ->
        Seq("kinesis.endingPosition", "type 'SHARD_END' is not one of", "AFTER_SEQUENCE_NUMBER"),
      failure("kinesis.endingPosition" -> "TRIM_HORIZON") -> Seq(
        "kinesis.endingPosition",
        "LATEST, 'AT_TIMESTAMP"
      )
    )
    cases.foreach { case (message, expected) =>
      expected.foreach(e => assert(message.contains(e), s"'$e' missing from: $message"))
    }
  }

  test(
    "an end before the start of the same shard is refused, naming the shard; an equal one is an empty read"
  ) {
    def doc(tpe: String, seq: String, sub: Option[Int] = None) =
      s"""{"orders": {"$shard0": {"type": "$tpe", "sequenceNumber": "$seq"${sub.fold("")(s =>
          s""", "subSequenceNumber": $s"""
        )}}}}"""
    val m = failure(
      "kinesis.startingPosition" -> doc("AFTER_SEQUENCE_NUMBER", "500"),
      "kinesis.endingPosition" -> doc("AT_SEQUENCE_NUMBER", "400")
    )
    assert(
      m.contains("kinesis.endingPosition") && m.contains(shard0) && m.contains("before the starting position")
    )
    // Inside one aggregate: after sub-record 3 versus at sub-record 2.
    assert(
      failure(
        "kinesis.startingPosition" -> doc("AFTER_SEQUENCE_NUMBER", "500", Some(3)),
        "kinesis.endingPosition" -> doc("AT_SEQUENCE_NUMBER", "500", Some(2))
      ).contains("before the starting position")
    )
    config(
      "kinesis.startingPosition" -> doc("AT_SEQUENCE_NUMBER", "500"),
      "kinesis.endingPosition" -> doc("AT_SEQUENCE_NUMBER", "500")
    )
    config(
      "kinesis.startingPosition" -> doc("AFTER_SEQUENCE_NUMBER", "500", Some(3)),
      "kinesis.endingPosition" -> doc("AT_SEQUENCE_NUMBER", "500", Some(4))
    )
  }

  test("an ending timestamp before the starting timestamp is refused, for every shard or per shard") {
    val early = "2026-11-24T09:00:00Z"
    val late = "2026-11-24T10:00:00Z"
    def ts(at: String) = s"""{"orders": {"$shard0": {"type": "AT_TIMESTAMP", "timestamp": "$at"}}}"""
    val everyShard =
      failure(
        "kinesis.startingPosition" -> s"AT_TIMESTAMP $late",
        "kinesis.endingPosition" -> s"AT_TIMESTAMP $early"
      )
    assert(everyShard.contains("kinesis.endingPosition") && everyShard.contains(s"ending timestamp $early"))
    assert(everyShard.contains(s"before the starting timestamp $late"))
    for (
      (start, end) <- Seq(
        s"AT_TIMESTAMP $late" -> ts(early),
        ts(late) -> s"AT_TIMESTAMP $early",
        ts(late) -> ts(early)
      )
    ) {
      val m = failure("kinesis.startingPosition" -> start, "kinesis.endingPosition" -> end)
      assert(
        m.contains("kinesis.endingPosition") && m.contains(shard0) && m.contains("before the starting"),
        m
      )
    }
    // Equal times read nothing; a later end, or an end of another shard, is fine.
    config(
      "kinesis.startingPosition" -> s"AT_TIMESTAMP $late",
      "kinesis.endingPosition" -> s"AT_TIMESTAMP $late"
    )
    config("kinesis.startingPosition" -> ts(early), "kinesis.endingPosition" -> s"AT_TIMESTAMP $late")
    config(
      "kinesis.startingPosition" -> ts(late),
      "kinesis.endingPosition" -> s"""{"orders": {"shardId-000000000001": {"type": "AT_TIMESTAMP", "timestamp": "$early"}}}"""
    )
  }
}
