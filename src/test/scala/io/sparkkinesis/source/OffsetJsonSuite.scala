package io.sparkkinesis.source

import scala.io.Source
import scala.jdk.CollectionConverters._
import scala.util.Random

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.{ArrayNode, ObjectNode}
import io.sparkkinesis.client.{ChildShard, HashKeyRange}
import io.sparkkinesis.reader.{ShardEnd, ShardPosition}
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset}
import org.scalatest.funsuite.AnyFunSuite

class OffsetJsonSuite extends AnyFunSuite {
  private val MaxHashKey = BigInt("340282366920938463463374607431768211455") // 2^128 - 1
  private val Half = BigInt("170141183460469231731687303715884105728") // 2^127
  private val Seq1 = "49590338271490256608559692538361571095921575989136588898"
  private val Seq2 = "49590338271490256608559692540925702759324208523137515618"
  private val mapper = new ObjectMapper()

  private def resource(name: String): String = {
    val source = Source.fromResource(s"offsets/$name", getClass.getClassLoader)
    try source.mkString
    finally source.close()
  }

  private val sampleOffset = KinesisOffset(
    batchId = 41L,
    runId = "0f8fad5b-d9cb-469f-a165-70867728950e",
    shards = Map(
      ShardKey("orders", "shardId-000000000000") ->
        ShardEntry(ShardPosition.After(Seq1, -1), ShardStatus.Finished, Nil, HashKeyRange(0, MaxHashKey)),
      ShardKey("orders", "shardId-000000000001") -> ShardEntry(
        ShardPosition.After(Seq2, 3),
        ShardStatus.Read,
        Seq("shardId-000000000000"),
        HashKeyRange(0, Half - 1)
      ),
      ShardKey("orders", "shardId-000000000002") -> ShardEntry(
        ShardPosition.TrimHorizon,
        ShardStatus.Waiting,
        Seq("shardId-000000000001", "shardId-000000000003"),
        HashKeyRange(Half, MaxHashKey)
      ),
      ShardKey("payments", "shardId-000000000007") -> ShardEntry(
        ShardPosition.AtTimestamp(1693422005000L),
        ShardStatus.Read,
        Nil,
        HashKeyRange(0, MaxHashKey)
      )
    )
  )

  private val sampleEnd = ShardEnd(
    end = ShardPosition.After(Seq2, 3),
    finished = true,
    childShards = Seq(
      ChildShard("shardId-000000000004", Seq("shardId-000000000001"), HashKeyRange(0, Half / 2 - 1)),
      ChildShard("shardId-000000000005", Seq("shardId-000000000001"), HashKeyRange(Half / 2, Half - 1))
    ),
    recordCount = 1234L,
    millisBehindLatest = Some(0L),
    reachedTip = true,
    lost = false
  )

  // ---------------------------------------------------------------- round trips

  test("an offset round-trips: every position kind, status, parent list and 128-bit hash range") {
    val back = OffsetJson.readOffset(OffsetJson.write(sampleOffset))
    assert(back == sampleOffset)
    assert(back.json() == sampleOffset.json())
  }

  test("the initial offset (batch -1) and an offset with no shards round-trip") {
    val initial = KinesisOffset(-1L, "run", Map.empty)
    assert(OffsetJson.readOffset(initial.json()) == initial)
    val edge = KinesisOffset(
      Long.MaxValue,
      "r",
      Map(
        ShardKey("a.b-c_d", "shardId-1") ->
          ShardEntry(ShardPosition.AtTimestamp(0L), ShardStatus.Waiting, Seq("p"), HashKeyRange(0, 0))
      )
    )
    assert(OffsetJson.readOffset(edge.json()) == edge)
  }

  test("random offsets round-trip") {
    val rnd = new Random(7)
    def hash(): BigInt = BigInt(128, rnd.self)
    def position(): ShardPosition = rnd.nextInt(4) match {
      case 0 => ShardPosition.TrimHorizon
      case 1 => ShardPosition.AtTimestamp(rnd.nextLong())
      case 2 => ShardPosition.After(BigInt(180, rnd.self).toString, -1)
      case _ => ShardPosition.After(BigInt(180, rnd.self).toString, rnd.nextInt(10000))
    }
    for (_ <- 0 until 200) {
      val shards = (0 until rnd.nextInt(12)).map { i =>
        val (a, b) = (hash(), hash())
        ShardKey(s"stream-${rnd.nextInt(3)}", f"shardId-$i%012d") -> ShardEntry(
          position(),
          ShardStatus.all(rnd.nextInt(3)),
          (0 until rnd.nextInt(3)).map(p => f"shardId-$p%012d"),
          HashKeyRange(a.min(b), a.max(b)),
          if (rnd.nextBoolean()) Some(rnd.nextInt(100)) else None
        )
      }.toMap
      val offset = KinesisOffset(rnd.nextLong(), java.util.UUID.randomUUID().toString, shards)
      assert(OffsetJson.readOffset(offset.json()) == offset)
    }
  }

  test("offsets compare by value, and with Spark's serialized form by JSON; the hash is the JSON's") {
    val same = OffsetJson.readOffset(sampleOffset.json())
    assert(same ne sampleOffset)
    assert(same == sampleOffset && same.hashCode == sampleOffset.hashCode)
    assert(sampleOffset.hashCode == sampleOffset.json().hashCode)
    assert(sampleOffset.copy(batchId = sampleOffset.batchId + 1) != sampleOffset)
    assert(sampleOffset.copy(runId = "other") != sampleOffset)
    val moved = sampleOffset.shards.head match {
      case (key, entry) => sampleOffset.shards.updated(key, entry.copy(task = Some(99)))
    }
    assert(sampleOffset.copy(shards = moved) != sampleOffset)
    // Spark's SerializedOffset is an Offset holding JSON text: equal both ways when the text is the same.
    def serialized(text: String): SparkOffset = new SparkOffset { override def json(): String = text }
    assert(sampleOffset == serialized(sampleOffset.json()))
    assert(serialized(sampleOffset.json()) == sampleOffset)
    assert(sampleOffset != serialized(KinesisOffset(-1L, "run", Map.empty).json()))
    assert(!sampleOffset.equals("not an offset"))
  }

  test("a shard end round-trips, with and without lag, children, loss") {
    assert(RecordedEndJson.readEnd(RecordedEndJson.writeEnd(sampleEnd)) == sampleEnd)
    val others = Seq(
      ShardEnd(ShardPosition.TrimHorizon, false, Nil, 0L, None, false, false),
      ShardEnd(ShardPosition.AtTimestamp(1693422005000L), true, Nil, 0L, Some(12345L), false, true),
      ShardEnd(
        ShardPosition.After(Seq1, -1),
        true,
        Seq(ChildShard("c", Seq("p1", "p2"), HashKeyRange(0, MaxHashKey))),
        Long.MaxValue,
        Some(0L),
        true,
        false
      )
    )
    others.foreach(e => assert(RecordedEndJson.readEnd(RecordedEndJson.writeEnd(e)) == e))
  }

  test("the JSON lists streams and shards in sorted order, whatever the map's order") {
    val root = mapper.readTree(sampleOffset.json())
    assert(root.get("streams").fieldNames().asScala.toSeq == Seq("orders", "payments"))
    assert(
      root.get("streams").get("orders").fieldNames().asScala.toSeq ==
        Seq("shardId-000000000000", "shardId-000000000001", "shardId-000000000002")
    )
    val reversed = KinesisOffset(
      41L,
      sampleOffset.runId,
      scala.collection.immutable.ListMap(sampleOffset.shards.toSeq.reverse: _*)
    )
    assert(reversed.json() == sampleOffset.json())
  }

  test("readShards lists the shards the batch reads, sorted") {
    assert(
      sampleOffset.readShards.map(_._1) ==
        Seq(ShardKey("orders", "shardId-000000000001"), ShardKey("payments", "shardId-000000000007"))
    )
  }

  // ---------------------------------------------------------------- version-1 fixtures

  test("the stored version-1 offset keeps parsing to the same values") {
    val o = OffsetJson.readOffset(resource("v1-offset.json"))
    assert(o.batchId == 41L)
    assert(o.runId == "0f8fad5b-d9cb-469f-a165-70867728950e")
    assert(
      o.shards.keySet.map(_.toString) == Set(
        "orders/shardId-000000000000",
        "orders/shardId-000000000001",
        "orders/shardId-000000000002",
        "payments/shardId-000000000007"
      )
    )
    val s0 = o.shards(ShardKey("orders", "shardId-000000000000"))
    assert(s0.position == ShardPosition.After("49590338271490256608559692538361571095921575989136588898", -1))
    assert(s0.status == ShardStatus.Finished && s0.parents.isEmpty)
    assert(s0.hashKeyRange == HashKeyRange(0, BigInt(2).pow(128) - 1))
    val s1 = o.shards(ShardKey("orders", "shardId-000000000001"))
    assert(s1.position == ShardPosition.After("49590338271490256608559692540925702759324208523137515618", 3))
    assert(s1.status == ShardStatus.Read && s1.parents == Seq("shardId-000000000000"))
    assert(s1.hashKeyRange == HashKeyRange(0, BigInt(2).pow(127) - 1))
    val s2 = o.shards(ShardKey("orders", "shardId-000000000002"))
    assert(s2.position == ShardPosition.TrimHorizon && s2.status == ShardStatus.Waiting)
    assert(s2.parents == Seq("shardId-000000000001", "shardId-000000000003"))
    assert(s2.hashKeyRange == HashKeyRange(BigInt(2).pow(127), BigInt(2).pow(128) - 1))
    val p7 = o.shards(ShardKey("payments", "shardId-000000000007"))
    assert(p7.position == ShardPosition.AtTimestamp(1693422005000L) && p7.status == ShardStatus.Read)
    assert(o == sampleOffset)
  }

  test("the stored version-1 shard end keeps parsing to the same values") {
    val e = RecordedEndJson.readEnd(resource("v1-shard-end.json"))
    assert(e.end == ShardPosition.After("49590338271490256608559692540925702759324208523137515618", 3))
    assert(e.finished && e.reachedTip && !e.lost)
    assert(e.recordCount == 1234L)
    assert(e.millisBehindLatest.contains(0L))
    assert(e.childShards.map(_.shardId) == Seq("shardId-000000000004", "shardId-000000000005"))
    assert(e.childShards.forall(_.parentShardIds == Seq("shardId-000000000001")))
    assert(e.childShards(0).hashKeyRange == HashKeyRange(0, BigInt("85070591730234615865843651857942052863")))
    assert(
      e.childShards(1).hashKeyRange == HashKeyRange(
        BigInt("85070591730234615865843651857942052864"),
        BigInt("170141183460469231731687303715884105727")
      )
    )
    assert(e == sampleEnd)
  }

  // ---------------------------------------------------------------- versions and garbage

  private def withVersion(json: String, version: Int): String = {
    val root = mapper.readTree(json).asInstanceOf[ObjectNode]
    root.put("version", version)
    mapper.writeValueAsString(root)
  }

  test("an offset or shard end from a newer format version fails and says to upgrade") {
    val e1 =
      intercept[IllegalStateException](OffsetJson.readOffset(withVersion(resource("v1-offset.json"), 3)))
    assert(e1.getMessage.contains("version 3") && e1.getMessage.contains("Upgrade the connector"))
    assert(e1.getMessage.contains("up to 2"))
    val e2 =
      intercept[IllegalStateException](RecordedEndJson.readEnd(withVersion(resource("v1-shard-end.json"), 3)))
    assert(e2.getMessage.contains("version 3") && e2.getMessage.contains("Upgrade the connector"))
  }

  test(
    "version 2: an offset of grouped read tasks and a task's entry read back; ungrouped offsets stay version 1"
  ) {
    val grouped = OffsetJson.readOffset(resource("v2-offset-grouped.json"))
    assert(
      grouped.readTasks.map(t => t.metadataKey -> t.shards.map(_.shardId)) == Seq(
        "tasks/1" -> Seq("shardId-000000000001", "shardId-000000000003"),
        "tasks/0" -> Seq("shardId-000000000002")
      )
    )
    assert(OffsetJson.readOffset(grouped.json()) == grouped)
    assert(mapper.readTree(grouped.json()).get("version").asInt == 2)
    assert(mapper.readTree(sampleOffset.json()).get("version").asInt == 1)
    assert(
      sampleOffset.readTasks.map(_.metadataKey) == Seq(
        "orders/shardId-000000000001",
        "payments/shardId-000000000007"
      )
    )

    val ends = RecordedEndJson.readTaskEnds(resource("v2-task-ends.json"))
    assert(
      ends.keySet == Set(
        ShardKey("orders", "shardId-000000000001"),
        ShardKey("orders", "shardId-000000000003")
      )
    )
    assert(ends(ShardKey("orders", "shardId-000000000001")).end.end == ShardPosition.After(Seq2, -1))
    assert(ends(ShardKey("orders", "shardId-000000000003")).end.recordCount == 0L)
    assert(RecordedEndJson.readTaskEnds(RecordedEndJson.writeTaskEnds(ends)) == ends)
  }

  test("text that is not JSON fails clearly") {
    for (garbage <- Seq("not json {", "{\"version\": 1,", "\u0000\u0001")) {
      val e = intercept[IllegalArgumentException](OffsetJson.readOffset(garbage))
      assert(e.getMessage.contains("Cannot parse the Kinesis offset"), e.getMessage)
      val e2 = intercept[IllegalArgumentException](RecordedEndJson.readEnd(garbage))
      assert(e2.getMessage.contains("Cannot parse the Kinesis shard end"), e2.getMessage)
    }
  }

  test("JSON without a valid version fails clearly") {
    for (json <- Seq("", "[1, 2]", "42", "null", "{}", """{"version": 0}""", """{"version": "one"}""")) {
      val e = intercept[IllegalArgumentException](OffsetJson.readOffset(json))
      assert(e.getMessage.contains("no valid version"), s"$json: ${e.getMessage}")
    }
  }

  test("an unknown status or position type fails and names it") {
    val badStatus = resource("v1-offset.json").replace("\"WAITING\"", "\"PAUSED\"")
    assert(
      intercept[IllegalArgumentException](OffsetJson.readOffset(badStatus)).getMessage.contains("'PAUSED'")
    )
    val badType = resource("v1-offset.json").replace("\"TRIM_HORIZON\"", "\"LATEST\"")
    assert(
      intercept[IllegalArgumentException](OffsetJson.readOffset(badType)).getMessage.contains("'LATEST'")
    )
  }

  /**
   * Every field path of a document, except the names of streams and shards (map keys, not fields) and the optional
   * `millisBehindLatest`.
   */
  private def requiredFields(node: JsonNode, path: List[String] = Nil): Seq[List[String]] = node match {
    case o: ObjectNode =>
      o.fieldNames().asScala.toList.flatMap { name =>
        val child = path :+ name
        val isMapKey = path.headOption.contains("streams") && path.size <= 2
        val own = if (isMapKey || name == "version" || name == "millisBehindLatest") Nil else Seq(child)
        own ++ requiredFields(o.get(name), child)
      }
    case a: ArrayNode =>
      a.elements().asScala.toList.zipWithIndex.flatMap { case (e, i) =>
        requiredFields(e, path :+ i.toString)
      }
    case _ => Nil
  }

  private def without(json: String, path: List[String]): String = {
    val root = mapper.readTree(json)
    val parent = path.init.foldLeft(root)((n, p) => if (n.isArray) n.get(p.toInt) else n.get(p))
    parent.asInstanceOf[ObjectNode].remove(path.last)
    mapper.writeValueAsString(root)
  }

  test("an offset missing any field fails and names the field") {
    val json = resource("v1-offset.json")
    val paths = requiredFields(mapper.readTree(json))
    assert(paths.size > 20)
    paths.foreach { path =>
      val e = intercept[IllegalArgumentException](OffsetJson.readOffset(without(json, path)))
      assert(e.getMessage.contains(s"'${path.last}'"), s"without ${path.mkString(".")}: ${e.getMessage}")
    }
  }

  test("a shard end missing any field fails and names the field") {
    val json = resource("v1-shard-end.json")
    val paths = requiredFields(mapper.readTree(json))
    assert(paths.size > 10)
    paths.foreach { path =>
      val e = intercept[IllegalArgumentException](RecordedEndJson.readEnd(without(json, path)))
      assert(e.getMessage.contains(s"'${path.last}'"), s"without ${path.mkString(".")}: ${e.getMessage}")
    }
    // millisBehindLatest is optional: absent means unknown.
    assert(RecordedEndJson.readEnd(without(json, List("millisBehindLatest"))).millisBehindLatest.isEmpty)
  }

  test("fields of the wrong type fail and name the field") {
    val offset = resource("v1-offset.json")
    val cases = Seq(
      "batchId" -> offset.replace("\"batchId\": 41", "\"batchId\": \"41\""),
      "hashKeyRange" -> offset.replace("\"170141183460469231731687303715884105727\"", "\"not a number\""),
      "hashKeyRange" -> offset.replace("\"170141183460469231731687303715884105727\"", "-1"),
      "subIndex" -> offset.replace("\"subIndex\": 3", "\"subIndex\": \"three\""),
      "timestampMs" -> offset.replace("1693422005000", "\"yesterday\""),
      "parents" -> offset.replace("\"parents\": []", "\"parents\": \"none\"")
    )
    cases.foreach { case (field, json) =>
      assert(json != offset, field)
      val e = intercept[IllegalArgumentException](OffsetJson.readOffset(json))
      assert(e.getMessage.contains(s"'$field'"), s"$field: ${e.getMessage}")
    }
    val end = resource("v1-shard-end.json")
    val e = intercept[IllegalArgumentException](
      RecordedEndJson.readEnd(end.replace("\"finished\": true", "\"finished\": \"yes\""))
    )
    assert(e.getMessage.contains("'finished'"), e.getMessage)
  }
}
