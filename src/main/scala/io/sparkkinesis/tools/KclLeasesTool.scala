package io.sparkkinesis.tools

import java.time.Instant
import java.util.Locale

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config._
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.metadata.DynamoDbClients
import software.amazon.awssdk.services.dynamodb.model.{AttributeValue, ResourceNotFoundException, ScanRequest}

/**
 * Reads the lease table of a KCL 1.x, 2.x or 3.x application (a Spark DStream Kinesis receiver included) and turns its
 * per-shard checkpoints into a positions document for `kinesis.startingPosition`, so that a query starts where the
 * application stopped (`spark-kinesis positions --from-kcl-table`). Since KCL 3.5 the table also holds items that are
 * not leases (coordinator state, worker metrics); they are told apart as the KCL's own lease reader does, by the
 * `entityType` attribute (`LEASE` or none is a lease), and skipped and counted in a `note:` line.
 * The request arrives as JSON on standard input, so that no option (secrets included) is on the command line:
 * `{"table": "...", "initialTimestamp": "2026-11-24T10:00:00Z" (optional), "options": {"kinesis.streamName": ...}}`.
 * The table is read with the connector's DynamoDB settings and a consistent, paginated Scan. The answer is the
 * document on standard output (`{"<stream>": {"<shardId>": {"type": ...}, ...}}`, shards sorted by id); warnings go
 * to standard error as `warning:` lines, skipped items as `note:` lines, errors as one `error:` line (exit code 1).
 */
object KclLeasesTool {
  import ToolMain.{mapper, text, textMap}

  /** The document for one stream (places by shard id), the warnings met, and notes on the items skipped. */
  final case class Positions(
      stream: String,
      shards: Seq[(String, ShardPlace)],
      warnings: Seq[String],
      notes: Seq[String] = Nil
  ) {
    def document: ShardPositions = ShardPositions(Map(stream -> shards.toMap))
  }

  final case class Request(table: String, initialTimestamp: Option[Instant], options: Map[String, String])

  val LeaseKey = "leaseKey"
  val Checkpoint = "checkpoint"
  val CheckpointSubSequenceNumber = "checkpointSubSequenceNumber"
  val PendingCheckpoint = "pendingCheckpoint"
  val EntityType = "entityType"

  /** What an item of a lease table is; `describe` names an item of this kind (with key `key`) in messages. */
  sealed trait ItemKind {

    def describe(key: String): String = this match {
      case ItemKind.Lease => s"the lease of shard $key"
      case ItemKind.Coordinator(t) => s"${coordinatorItems.getOrElse(t, coordinatorItems("STREAM"))} ($key)"
      case ItemKind.WorkerMetrics => s"the worker-metrics item of worker $key"
      case ItemKind.Unknown(t) => s"an unknown item with key '$key' and entityType '$t'"
    }
  }

  object ItemKind {

    /** A shard's lease (`entityType` LEASE, or none: KCL 1.x/2.x and KCL 3.0-3.4 write none). */
    case object Lease extends ItemKind

    /** A KCL coordinator-state item (migration states, leader lock, stream info), in the lease table since KCL 3.5. */
    final case class Coordinator(entityType: String) extends ItemKind

    /** One worker's metrics (KCL 3.5+ keeps them in the lease table, keyed by the worker id). */
    case object WorkerMetrics extends ItemKind

    /** An `entityType` this tool does not know (a later KCL's): not a lease, so skipped as the KCL skips it. */
    final case class Unknown(entityType: String) extends ItemKind
  }

  /** The `entityType`s of the KCL's coordinator-state items, and how messages name them. */
  private val coordinatorItems = Map(
    "CLIENT_VERSION_MIGRATION" -> "the KCL migration state item",
    "TABLE_MIGRATION" -> "the KCL table-migration state item",
    "LEADER" -> "the KCL leader lock item",
    "STREAM" -> "a KCL stream-info item"
  )

  /**
   * The keys of the KCL's coordinator-state items. The KCL's coordinator-state reader takes an item without
   * `entityType` under one of these keys for that item; no shard lease has such a key (a shard id is `shardId-...`).
   */
  private val coordinatorKeys =
    Map(
      "Migration3.0" -> "CLIENT_VERSION_MIGRATION",
      "TableMigration3.5" -> "TABLE_MIGRATION",
      "Leader" -> "LEADER"
    )

  /** What `item` (whose key is `key`) is, by its `entityType` attribute as the KCL reads it. */
  def classify(key: String, item: Map[String, AttributeValue]): ItemKind =
    item.get(EntityType).flatMap(v => Option(v.s())) match {
      case None if !item.contains(EntityType) && coordinatorKeys.contains(key) =>
        ItemKind.Coordinator(coordinatorKeys(key))
      case None | Some("LEASE") => ItemKind.Lease
      case Some("WORKER_METRIC_STATS") => ItemKind.WorkerMetrics
      case Some(t) if coordinatorItems.contains(t) => ItemKind.Coordinator(t)
      case Some(t) => ItemKind.Unknown(t)
    }

  /** One `note:` line on the KCL items skipped because they are not leases, if any were. */
  private def skippedNote(skipped: Seq[(String, ItemKind)]): Option[String] = {
    def plural(n: Int, what: String) = if (n == 1) s"1 $what item" else s"$n $what items"
    val coordinators = skipped.collect { case (k, _: ItemKind.Coordinator) => k }.sorted
    val metrics = skipped.count(_._2 == ItemKind.WorkerMetrics)
    val parts =
      (if (coordinators.isEmpty) Nil
       else Seq(s"${plural(coordinators.size, "coordinator")} (${coordinators.mkString(", ")})")) ++
        (if (metrics == 0) Nil else Seq(plural(metrics, "worker-metrics")))
    if (parts.isEmpty) None
    else Some(s"skipped ${parts.mkString(" and ")}: KCL 3.x items that are not leases")
  }

  private val digits = "[0-9]+".r

  /** A multi-stream lease key (KCL 2.x): `account:streamName:creationEpoch:shardId`. */
  private final case class MultiStreamKey(stream: String, epoch: BigInt, shardId: String)

  private def multiStreamKey(leaseKey: String): Option[MultiStreamKey] = leaseKey.split(":", -1) match {
    case Array(_) => None
    case Array(_, stream, epoch @ digits(), shardId) if stream.nonEmpty && shardId.nonEmpty =>
      Some(MultiStreamKey(stream, BigInt(epoch), shardId))
    case _ =>
      throw invalid(
        s"Lease key '$leaseKey' is neither a shard id (KCL single-stream mode) nor " +
          "account:streamName:creationEpoch:shardId (KCL 2.x multi-stream mode)."
      )
  }

  /**
   * The positions of `stream` from the items of a KCL lease table. Single-stream keys (a shard id) are all kept;
   * multi-stream keys only for `stream`, and for its newest creation epoch (with a warning). Fails on a lease that
   * cannot be read, on an AT_TIMESTAMP checkpoint without `initialTimestamp`, and when no lease is for `stream`.
   */
  def positions(
      stream: String,
      items: Seq[Map[String, AttributeValue]],
      initialTimestamp: Option[Instant]
  ): Positions = {
    val classified = items.map { item =>
      val key = item.get(LeaseKey).flatMap(v => Option(v.s())).getOrElse {
        throw invalid(
          s"An unknown item of the lease table has no string attribute $LeaseKey (attributes: " +
            s"${item.keys.toSeq.sorted.mkString(", ")}); is this a KCL lease table?"
        )
      }
      (key, classify(key, item), item)
    }
    val (leases, skipped) = classified.partition(_._2 == ItemKind.Lease)
    val notes = skippedNote(skipped.map { case (k, kind, _) => (k, kind) }).toSeq
    val warnings = Seq.newBuilder[String]
    val unknown = skipped.collect { case (key, kind: ItemKind.Unknown, _) => kind.describe(key) }.sorted
    warnings ++= unknown.map(u => s"skipped $u: not a lease (the KCL's lease reader skips it too)")
    val keyed = leases.map { case (key, _, item) => (key, multiStreamKey(key), item) }
    val otherStreams = keyed.flatMap(_._2).map(_.stream).filter(_ != stream).distinct.sorted
    val epochs = keyed.flatMap(_._2).filter(_.stream == stream).map(_.epoch)
    val newestEpoch = epochs.reduceOption(_ max _)
    val staleEpochs = epochs.filterNot(newestEpoch.contains).distinct.sorted
    if (staleEpochs.nonEmpty)
      warnings += s"the table has leases of earlier incarnations of stream $stream (creation epochs " +
        s"${staleEpochs.mkString(", ")}); only those of the newest one (${newestEpoch.get}) are used"
    val kept = keyed.collect {
      case (key, None, item) => (key, key, item)
      case (key, Some(m), item) if m.stream == stream && newestEpoch.contains(m.epoch) =>
        (key, m.shardId, item)
    }
    if (kept.isEmpty) {
      val others = if (otherStreams.isEmpty) "" else s" (it has leases of ${otherStreams.mkString(", ")})"
      val onlyOthers = skipped.map { case (key, kind, _) => kind.describe(key) }.sorted match {
        case Seq() => ""
        case items => items.mkString(" Its other items are not leases: ", ", ", ".")
      }
      throw invalid(
        s"The lease table has no lease for stream $stream$others: nothing to start from.$onlyOthers"
      )
    }
    kept.groupBy(_._2).foreach { case (shardId, leases) =>
      if (leases.size > 1)
        throw invalid(
          s"Shard $shardId has several leases (${leases.map(_._1).sorted.mkString(", ")}); keep one of them."
        )
    }
    val shards = kept.sortBy(_._2).map { case (key, shardId, item) =>
      if (item.contains(PendingCheckpoint))
        warnings += s"shard $shardId (lease $key) has a $PendingCheckpoint: the KCL application did not " +
          s"complete a two-phase checkpoint; its committed $Checkpoint is used"
      shardId -> position(shardId, key, item, initialTimestamp)
    }
    Positions(stream, shards, warnings.result(), notes)
  }

  /** How messages name a lease: by its shard, and by its key when that is not the shard id. */
  private def leaseName(shardId: String, key: String, item: Map[String, AttributeValue]): String = {
    val entity = if (item.contains(EntityType)) "" else s", which has no $EntityType"
    if (key == shardId && shardId.startsWith("shardId-")) ItemKind.Lease.describe(shardId) + entity
    else if (key == shardId) s"the item with key '$key' (taken for a shard lease: it has no $EntityType)"
    else s"the lease of shard $shardId (key $key$entity)"
  }

  private def position(
      shardId: String,
      key: String,
      item: Map[String, AttributeValue],
      at: Option[Instant]
  ): ShardPlace = {
    val checkpoint = item.get(Checkpoint).flatMap(v => Option(v.s())).getOrElse {
      throw invalid(
        s"${leaseName(shardId, key, item).capitalize} has no string attribute $Checkpoint (attributes: " +
          s"${item.keys.toSeq.sorted.mkString(", ")})."
      )
    }
    checkpoint match {
      case "TRIM_HORIZON" => ShardPlace.TrimHorizon
      case "LATEST" => ShardPlace.Latest
      case "SHARD_END" => ShardPlace.ShardEnd
      case "AT_TIMESTAMP" =>
        ShardPlace.AtTimestamp(at.getOrElse {
          throw invalid(
            s"Shard $shardId has checkpoint AT_TIMESTAMP, whose timestamp a KCL lease does not store: give the " +
              "KCL application's initial timestamp with --initial-timestamp (initialTimestamp in the request)."
          )
        })
      // A KCL checkpoint (seq, sub) means every user record up to and including sub-record `sub` was processed.
      case digits() => ShardPlace.AfterSequence(checkpoint, subSequenceNumber(shardId, item))
      case other =>
        throw invalid(
          s"Shard $shardId has checkpoint '$other'; expected a sequence number (decimal digits) or one of " +
            "TRIM_HORIZON, LATEST, AT_TIMESTAMP, SHARD_END."
        )
    }
  }

  private def subSequenceNumber(shardId: String, item: Map[String, AttributeValue]): Option[Int] =
    item.get(CheckpointSubSequenceNumber).map { value =>
      val n = Option(value.n()).getOrElse(String.valueOf(value.s()))
      scala.util.Try(n.toInt).toOption.filter(_ >= 0).getOrElse {
        throw invalid(s"Shard $shardId has $CheckpointSubSequenceNumber '$n'; expected a whole number >= 0.")
      }
    }

  /** An ISO-8601 instant, with the syntax `kinesis.startingPosition` accepts for AT_TIMESTAMP. */
  def parseInstant(text: String): Instant =
    StartingPositionSpec.parse(s"AT_TIMESTAMP $text") match {
      case Right(StartingPositionSpec.AtTimestamp(instant)) => instant
      case _ =>
        throw invalid(
          s"Initial timestamp (--initial-timestamp) '$text' is not an ISO-8601 instant with an offset, " +
            "e.g. 2026-11-24T10:00:00Z."
        )
    }

  private val Command = "positions"

  private def invalid(problem: String) = KinesisErrors.toolRequestInvalid(Command, problem)

  def parseRequest(json: String): Request = {
    val root = mapper.readTree(json)
    val table = text(root, "table").filter(_.nonEmpty).getOrElse {
      throw invalid("the request names no lease table ('table')")
    }
    Request(table, text(root, "initialTimestamp").map(parseInstant), textMap(root.get("options")))
  }

  /** The DynamoDB settings of the request: the connector's options, with the lease table as the DynamoDB table. */
  def dynamoDbConfig(request: Request): (String, DynamoDbConfig) = {
    import KinesisOptions._
    val replaced =
      Set(MetadataCommitterType, MetadataPath, DynamoDbTableName).map(_.fullKey.toLowerCase(Locale.ROOT))
    val options = request.options.filterNot { case (k, _) => replaced(k.toLowerCase(Locale.ROOT)) } +
      (MetadataCommitterType.fullKey -> CommitterType.DynamoDb.name) + (DynamoDbTableName.fullKey -> request.table)
    val config = SourceConfig.parse(options, AwsClientConfig.environmentRegion)
    val streams = config.streamNames
    if (streams.size != 1)
      throw invalid(
        s"Option ${StreamName.fullKey} = '${config.streamName}' names ${streams.size} streams; a KCL lease " +
          "table is read for one stream at a time."
      )
    (streams.head, config.dynamoDb.get)
  }

  def run(request: Request): Positions = {
    val (stream, config) = dynamoDbConfig(request)
    val lease = DynamoDbClients.open(config, None)
    val items =
      try {
        val scan = ScanRequest.builder().tableName(config.tableName).consistentRead(true).build()
        lease.value.scanPaginator(scan).items().asScala.map(_.asScala.toMap).toList
      } catch {
        case _: ResourceNotFoundException =>
          throw invalid(
            s"DynamoDB table '${config.tableName}' does not exist in region ${config.region} at endpoint " +
              s"${config.endpointUrl.getOrElse("(the regional DynamoDB endpoint)")}: name the KCL application's " +
              "lease table (by default the application name), and set kinesis.dynamodb.region or " +
              "kinesis.dynamodb.endpointUrl if it is elsewhere."
          )
      } finally lease.close()
    positions(stream, items, request.initialTimestamp)
  }

  def main(args: Array[String]): Unit = ToolMain.serve { request =>
    val result = run(parseRequest(request))
    ToolAnswer(result.document.toJson, result.warnings.map("warning: " + _) ++ result.notes.map("note: " + _))
  }
}
