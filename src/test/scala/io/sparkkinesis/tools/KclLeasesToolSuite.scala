package io.sparkkinesis.tools

import java.time.Instant

import io.sparkkinesis.config.ShardPlace
import io.sparkkinesis.errors.KinesisIllegalArgumentException
import io.sparkkinesis.tools.KclLeasesTool.Positions
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.services.dynamodb.model.AttributeValue

class KclLeasesToolSuite extends AnyFunSuite {
  private val Seq1 = "49590338271490256608559692538361571095921575989136588898"
  private val Seq2 = "49590338271490256608559692538361571095921575989136588900"
  private val At = Instant.parse("2026-11-24T10:00:00Z")

  private def s(v: String) = AttributeValue.builder().s(v).build()
  private def n(v: Long) = AttributeValue.builder().n(v.toString).build()

  /** A lease item as KCL writes it, with the attributes the tool ignores. */
  private def lease(
      key: String,
      checkpoint: String,
      sub: Option[Long] = Some(0L),
      extra: Map[String, AttributeValue] = Map.empty
  ): Map[String, AttributeValue] =
    Map(
      "leaseKey" -> s(key),
      "checkpoint" -> s(checkpoint),
      "leaseOwner" -> s("worker-1"),
      "leaseCounter" -> n(42),
      "ownerSwitchesSinceCheckpoint" -> n(0),
      "parentShardId" -> AttributeValue.builder().ss("shardId-000000000000").build()
    ) ++ sub.map(v => "checkpointSubSequenceNumber" -> n(v)) ++ extra

  private def doc(stream: String, items: Seq[Map[String, AttributeValue]], at: Option[Instant] = None) =
    KclLeasesTool.positions(stream, items, at).document.toJson

  /** The problem a refused lease table is reported with (KINESIS_TOOL_REQUEST_INVALID, for the positions command). */
  private def failure(stream: String, items: Seq[Map[String, AttributeValue]], at: Option[Instant] = None) = {
    val e = intercept[KinesisIllegalArgumentException](KclLeasesTool.positions(stream, items, at))
    assert(e.getCondition == "KINESIS_TOOL_REQUEST_INVALID" && e.parameters("command") == "positions")
    e.parameters("problem")
  }

  test(
    "KCL 1.x leases: every sentinel and sequence numbers with their sub-sequence numbers, sorted by shard id"
  ) {
    val items = Seq(
      lease("shardId-000000000004", "SHARD_END"),
      lease("shardId-000000000001", Seq1, sub = Some(3L)),
      lease("shardId-000000000000", Seq2),
      lease("shardId-000000000002", "TRIM_HORIZON"),
      lease("shardId-000000000003", "LATEST"),
      lease("shardId-000000000005", "AT_TIMESTAMP"),
      lease("shardId-000000000006", Seq1, sub = None)
    )
    assert(
      doc("orders", items, Some(At)) ==
        """{"orders":{""" +
        s""""shardId-000000000000":{"type":"AFTER_SEQUENCE_NUMBER","sequenceNumber":"$Seq2","subSequenceNumber":0},""" +
        s""""shardId-000000000001":{"type":"AFTER_SEQUENCE_NUMBER","sequenceNumber":"$Seq1","subSequenceNumber":3},""" +
        """"shardId-000000000002":{"type":"TRIM_HORIZON"},""" +
        """"shardId-000000000003":{"type":"LATEST"},""" +
        """"shardId-000000000004":{"type":"SHARD_END"},""" +
        """"shardId-000000000005":{"type":"AT_TIMESTAMP","timestamp":"2026-11-24T10:00:00Z"},""" +
        s""""shardId-000000000006":{"type":"AFTER_SEQUENCE_NUMBER","sequenceNumber":"$Seq1"}}}"""
    )
  }

  test("a sentinel checkpoint ignores its sub-sequence number") {
    val result =
      KclLeasesTool.positions("orders", Seq(lease("shardId-000000000000", "LATEST", Some(7L))), None)
    assert(result == Positions("orders", Seq("shardId-000000000000" -> ShardPlace.Latest), Nil))
  }

  test("KCL 2.x multi-stream keys: the shard id after the last ':', only the requested stream's leases") {
    val items = Seq(
      lease("123456789012:orders:1700000000:shardId-000000000001", Seq1, sub = Some(2L)),
      lease("123456789012:orders:1700000000:shardId-000000000000", "SHARD_END"),
      lease("123456789012:payments:1700000001:shardId-000000000000", Seq2)
    )
    assert(
      doc("orders", items) ==
        """{"orders":{"shardId-000000000000":{"type":"SHARD_END"},""" +
        s""""shardId-000000000001":{"type":"AFTER_SEQUENCE_NUMBER","sequenceNumber":"$Seq1","subSequenceNumber":2}}}"""
    )
    assert(
      doc("payments", items) ==
        s"""{"payments":{"shardId-000000000000":{"type":"AFTER_SEQUENCE_NUMBER","sequenceNumber":"$Seq2",""" +
        """"subSequenceNumber":0}}}"""
    )
    assert(
      failure("clicks", items).contains("no lease for stream clicks (it has leases of orders, payments)")
    )
  }

  test("KCL 2.x multi-stream: a re-created stream's older incarnation is dropped with a warning") {
    val items = Seq(
      lease("123456789012:orders:1700000000:shardId-000000000000", Seq1),
      lease("123456789012:orders:1800000000:shardId-000000000000", "TRIM_HORIZON")
    )
    val result = KclLeasesTool.positions("orders", items, None)
    assert(result.shards == Seq("shardId-000000000000" -> ShardPlace.TrimHorizon))
    assert(result.warnings.size == 1 && result.warnings.head.contains("creation epochs 1700000000"))
  }

  test("a pending checkpoint is reported, and the committed checkpoint used") {
    val item = lease("shardId-000000000000", Seq1, extra = Map("pendingCheckpoint" -> s(Seq2)))
    val result = KclLeasesTool.positions("orders", Seq(item), None)
    assert(result.shards == Seq("shardId-000000000000" -> ShardPlace.AfterSequence(Seq1, Some(0))))
    assert(result.warnings.size == 1)
    assert(
      result.warnings.head.contains("shardId-000000000000") && result.warnings.head.contains(
        "pendingCheckpoint"
      )
    )
  }

  test("AT_TIMESTAMP without the initial timestamp names the shard and the flag") {
    val message = failure(
      "orders",
      Seq(lease("shardId-000000000000", Seq1), lease("shardId-000000000003", "AT_TIMESTAMP"))
    )
    assert(message.contains("shardId-000000000003") && message.contains("--initial-timestamp"))
  }

  test("a checkpoint that is neither digits nor a sentinel names the shard and the value") {
    val message = failure("orders", Seq(lease("shardId-000000000002", "49590x")))
    assert(message.contains("shardId-000000000002") && message.contains("'49590x'"))
    assert(message.contains("TRIM_HORIZON, LATEST, AT_TIMESTAMP, SHARD_END"))
    assert(
      failure("orders", Seq(lease("shardId-000000000002", "")))
        .contains("checkpoint ''")
    )
    assert(failure("orders", Seq(lease("shardId-000000000002", Seq1, sub = Some(-1L)))).contains("'-1'"))
  }

  test("malformed leases and tables") {
    assert(failure("orders", Nil).contains("no lease for stream orders"))
    assert(failure("orders", Seq(Map("queryRun" -> s("x")))).contains("no string attribute leaseKey"))
    assert(
      failure("orders", Seq(lease("a:orders:shardId-000000000000", Seq1)))
        .contains("'a:orders:shardId-000000000000'")
    )
    assert(
      failure("orders", Seq(lease("shardId-000000000000", Seq1) - "checkpoint"))
        .contains("no string attribute checkpoint")
    )
    val twice = Seq(
      lease("shardId-000000000000", Seq1),
      lease("123456789012:orders:1700000000:shardId-000000000000", Seq2)
    )
    assert(failure("orders", twice).contains("Shard shardId-000000000000 has several leases"))
  }

  // The items below have the attributes a KCL 3.5.1 worker wrote to its lease table on ministack (scanned from
  // tests/test_kcl3_handover.py's run): the migration state, the leader lock, one worker's metrics and the leases.
  private val Worker = "kcl-app-0fdf4fb4-fb31-482e-92c7-10325b62b187"

  private val migrationItem = Map(
    "leaseKey" -> s("Migration3.0"),
    "entityType" -> s("CLIENT_VERSION_MIGRATION"),
    "cv" -> s("CLIENT_VERSION_3X"),
    "mb" -> s(Worker),
    "mts" -> n(1795713657993L)
  )

  private val leaderItem = Map(
    "leaseKey" -> s("Leader"),
    "entityType" -> s("LEADER"),
    "ownerName" -> s(Worker),
    "recordVersionNumber" -> s("ef04a3dc-c557-41e5-822d-dd1eba792544"),
    "leaseDuration" -> s("120000")
  )

  private def metricsItem(worker: String) = Map(
    "leaseKey" -> s(worker),
    "entityType" -> s("WORKER_METRIC_STATS"),
    "lut" -> n(1795713673L),
    "sup" -> n(1L),
    "opr" -> AttributeValue.builder().m(java.util.Map.of()).build()
  )

  private def lease3(key: String, checkpoint: String, sub: Long = 0L) =
    lease(key, checkpoint, Some(sub), Map("entityType" -> s("LEASE"), "checkpointOwner" -> s(Worker)))

  test("KCL 3.x: items are told apart by entityType, as the KCL's lease reader does") {
    import KclLeasesTool.{ItemKind, classify}
    assert(classify("shardId-000000000000", lease3("shardId-000000000000", Seq1)) == ItemKind.Lease)
    assert(classify("shardId-000000000000", lease("shardId-000000000000", Seq1)) == ItemKind.Lease)
    assert(classify("Migration3.0", migrationItem) == ItemKind.Coordinator("CLIENT_VERSION_MIGRATION"))
    assert(classify("Leader", leaderItem) == ItemKind.Coordinator("LEADER"))
    assert(
      classify(
        "TableMigration3.5",
        Map("leaseKey" -> s("TableMigration3.5"), "entityType" -> s("TABLE_MIGRATION"))
      )
        == ItemKind.Coordinator("TABLE_MIGRATION")
    )
    assert(
      classify("s1", Map("leaseKey" -> s("s1"), "entityType" -> s("STREAM"))) == ItemKind.Coordinator(
        "STREAM"
      )
    )
    assert(classify(Worker, metricsItem(Worker)) == ItemKind.WorkerMetrics)
    assert(
      classify("x", Map("leaseKey" -> s("x"), "entityType" -> s("SOMETHING_NEW"))) == ItemKind.Unknown(
        "SOMETHING_NEW"
      )
    )
    // Without entityType, a coordinator-state key is that item (the KCL's coordinator reader infers it the same way).
    assert(
      classify("Migration3.0", migrationItem - "entityType") == ItemKind.Coordinator(
        "CLIENT_VERSION_MIGRATION"
      )
    )
    assert(classify("Leader", leaderItem - "entityType") == ItemKind.Coordinator("LEADER"))
    // The way each is named in messages.
    assert(
      ItemKind
        .Coordinator("CLIENT_VERSION_MIGRATION")
        .describe("Migration3.0")
        .contains("KCL migration state item")
    )
    assert(ItemKind.WorkerMetrics.describe(Worker) == s"the worker-metrics item of worker $Worker")
    assert(ItemKind.Unknown("X").describe("k") == "an unknown item with key 'k' and entityType 'X'")
  }

  test("KCL 3.x table: the leases make the document, the other items are skipped and counted in a note") {
    val items = Seq(
      migrationItem,
      metricsItem(Worker),
      lease3("shardId-000000000001", Seq2, sub = 4L),
      leaderItem,
      metricsItem("worker-2"),
      lease3("shardId-000000000000", "SHARD_END")
    )
    val result = KclLeasesTool.positions("orders", items, None)
    assert(
      result.shards == Seq(
        "shardId-000000000000" -> ShardPlace.ShardEnd,
        "shardId-000000000001" -> ShardPlace.AfterSequence(Seq2, Some(4))
      )
    )
    assert(result.warnings.isEmpty)
    assert(
      result.notes == Seq(
        "skipped 2 coordinator items (Leader, Migration3.0) and 2 worker-metrics items: KCL 3.x items that are " +
          "not leases"
      )
    )
    val unknown = Map("leaseKey" -> s("future"), "entityType" -> s("SOMETHING_NEW"))
    val withUnknown = KclLeasesTool.positions("orders", items :+ unknown, None)
    assert(withUnknown.shards == result.shards && withUnknown.notes == result.notes)
    assert(
      withUnknown.warnings == Seq(
        "skipped an unknown item with key 'future' and entityType 'SOMETHING_NEW': not a lease (the KCL's lease " +
          "reader skips it too)"
      )
    )
    // A KCL 1.x/2.x table has nothing to skip: no note.
    assert(KclLeasesTool.positions("orders", Seq(lease("shardId-000000000000", Seq1)), None).notes.isEmpty)
  }

  test(
    "KCL 3.x: a table with only non-lease items, and a lease without checkpoint, are named for what they are"
  ) {
    val none = failure("orders", Seq(migrationItem, metricsItem(Worker)))
    assert(none.contains("no lease for stream orders"))
    assert(
      none.endsWith(
        s"Its other items are not leases: the KCL migration state item (Migration3.0), the worker-metrics item " +
          s"of worker $Worker."
      )
    )
    val noCheckpoint =
      failure("orders", Seq(migrationItem, lease3("shardId-000000000000", Seq1) - "checkpoint"))
    assert(
      noCheckpoint.startsWith("The lease of shard shardId-000000000000 has no string attribute checkpoint")
    )
    assert(noCheckpoint.contains("entityType, leaseCounter, leaseKey"))
    // An item without entityType and a key no shard has is taken for a lease, as the KCL does, and named by its key.
    val odd = failure("orders", Seq(Map("leaseKey" -> s("stray"), "owner" -> s("x"))))
    assert(odd.startsWith("The item with key 'stray' (taken for a shard lease: it has no entityType)"))
    assert(odd.contains("no string attribute checkpoint"))
  }

  test("the request: table, initial timestamp (ISO-8601 with an offset), options") {
    val request = KclLeasesTool.parseRequest(
      """{"table": "app", "initialTimestamp": "2026-11-24T11:00:00+01:00",
        | "options": {"kinesis.streamName": "orders", "kinesis.region": "eu-west-1"}}""".stripMargin
    )
    assert(request.table == "app" && request.initialTimestamp.contains(At))
    val (stream, dynamo) = KclLeasesTool.dynamoDbConfig(
      request.copy(options =
        request.options ++ Map("kinesis.dynamodb.endpointUrl" -> "http://localhost:4566")
      )
    )
    assert(stream == "orders" && dynamo.tableName == "app" && dynamo.region == "eu-west-1")
    assert(dynamo.endpointUrl.contains("http://localhost:4566"))
    val bad = intercept[IllegalArgumentException](
      KclLeasesTool.parseRequest("""{"table": "app", "initialTimestamp": "today"}""")
    )
    assert(bad.getMessage.contains("'today'") && bad.getMessage.contains("--initial-timestamp"))
    assert(intercept[IllegalArgumentException](KclLeasesTool.parseRequest("{}")).getMessage.contains("table"))
    val several = intercept[IllegalArgumentException](
      KclLeasesTool.dynamoDbConfig(
        request.copy(options = Map("kinesis.streamName" -> "a,b", "kinesis.region" -> "us-east-1"))
      )
    )
    assert(several.getMessage.contains("names 2 streams"))
  }
}
