package io.sparkkinesis.tools

import java.time.Instant
import java.util.Locale

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import io.sparkkinesis.config.{
  DynamoDbConfig,
  KinesisOptions,
  ShardPlace,
  ShardPositions,
  SourceConfig,
  StartingPositionSpec
}
import io.sparkkinesis.metadata.DynamoDbClients
import software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain
import software.amazon.awssdk.services.dynamodb.model.{AttributeValue, ResourceNotFoundException, ScanRequest}

/**
 * Reads the lease table of a KCL 1.x/2.x application (a Spark DStream Kinesis receiver included) and turns its
 * per-shard checkpoints into a positions document for `kinesis.startingPosition`, so that a query starts where the
 * application stopped. Run by the Python command `spark-kinesis positions --from-kcl-table`.
 *
 * The request arrives as JSON on standard input, so that no option (secrets included) is on the command line:
 * `{"table": "...", "initialTimestamp": "2026-11-24T10:00:00Z" (optional), "options": {"kinesis.streamName": ...}}`.
 * The table is read with the connector's DynamoDB settings (`kinesis.dynamodb.region`, `kinesis.dynamodb.endpointUrl`,
 * credentials, `kinesis.metadata*` retries) and a consistent, paginated Scan. The answer is the document on standard
 * output: `{"<stream>": {"<shardId>": {"type": ...}, ...}}`, shards sorted by id. Warnings go to standard error as
 * lines starting with `warning:`; errors as one line starting with `error:`, with exit code 1.
 */
object KclLeasesTool {
  private val mapper = new ObjectMapper()

  /** The document for one stream: places keyed by shard id, and the warnings met on the way. */
  final case class Positions(stream: String, shards: Seq[(String, ShardPlace)], warnings: Seq[String]) {
    def document: ShardPositions = ShardPositions(Map(stream -> shards.toMap))
  }

  final case class Request(table: String, initialTimestamp: Option[Instant], options: Map[String, String])

  val LeaseKey = "leaseKey"
  val Checkpoint = "checkpoint"
  val CheckpointSubSequenceNumber = "checkpointSubSequenceNumber"
  val PendingCheckpoint = "pendingCheckpoint"

  private val digits = "[0-9]+".r

  /** A multi-stream lease key (KCL 2.x): `account:streamName:creationEpoch:shardId`. */
  private final case class MultiStreamKey(stream: String, epoch: BigInt, shardId: String)

  private def multiStreamKey(leaseKey: String): Option[MultiStreamKey] = leaseKey.split(":", -1) match {
    case Array(_) => None
    case Array(_, stream, epoch @ digits(), shardId) if stream.nonEmpty && shardId.nonEmpty =>
      Some(MultiStreamKey(stream, BigInt(epoch), shardId))
    case _ =>
      throw new IllegalArgumentException(
        s"Lease key '$leaseKey' is neither a shard id (KCL single-stream mode) nor " +
          "account:streamName:creationEpoch:shardId (KCL 2.x multi-stream mode)."
      )
  }

  /**
   * The positions of `stream` from the items of a KCL lease table. Single-stream keys (a shard id) are all kept: such
   * a table serves one stream. Multi-stream keys are kept for `stream` only, and, when the stream was deleted and
   * created again, for its newest creation epoch only (with a warning). Fails on a lease that cannot be read, on an
   * AT_TIMESTAMP checkpoint without `initialTimestamp`, and when no lease is for `stream`.
   */
  def positions(
      stream: String,
      items: Seq[Map[String, AttributeValue]],
      initialTimestamp: Option[Instant]
  ): Positions = {
    val keyed = items.map { item =>
      val key = item.get(LeaseKey).flatMap(v => Option(v.s())).getOrElse {
        throw new IllegalArgumentException(
          s"An item of the lease table has no string attribute $LeaseKey (attributes: " +
            s"${item.keys.toSeq.sorted.mkString(", ")}); is this a KCL lease table?"
        )
      }
      (key, multiStreamKey(key), item)
    }
    val otherStreams = keyed.flatMap(_._2).map(_.stream).filter(_ != stream).distinct.sorted
    val multi = keyed.filter(_._2.exists(_.stream == stream))
    val warnings = Seq.newBuilder[String]
    val newestEpoch = multi.flatMap(_._2).map(_.epoch).reduceOption(_ max _)
    val staleEpochs = multi.flatMap(_._2).map(_.epoch).filterNot(newestEpoch.contains).distinct.sorted
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
      throw new IllegalArgumentException(
        s"The lease table has no lease for stream $stream$others: nothing to start from."
      )
    }
    kept.groupBy(_._2).foreach { case (shardId, leases) =>
      if (leases.size > 1)
        throw new IllegalArgumentException(
          s"Shard $shardId has several leases (${leases.map(_._1).sorted.mkString(", ")}); keep one of them."
        )
    }
    val shards = kept.sortBy(_._2).map { case (key, shardId, item) =>
      if (item.contains(PendingCheckpoint))
        warnings += s"shard $shardId (lease $key) has a $PendingCheckpoint: the KCL application did not " +
          s"complete a two-phase checkpoint; its committed $Checkpoint is used"
      shardId -> position(shardId, item, initialTimestamp)
    }
    Positions(stream, shards, warnings.result())
  }

  private def position(
      shardId: String,
      item: Map[String, AttributeValue],
      at: Option[Instant]
  ): ShardPlace = {
    val checkpoint = item.get(Checkpoint).flatMap(v => Option(v.s())).getOrElse {
      throw new IllegalArgumentException(s"The lease of shard $shardId has no string attribute $Checkpoint.")
    }
    checkpoint match {
      case "TRIM_HORIZON" => ShardPlace.TrimHorizon
      case "LATEST" => ShardPlace.Latest
      case "SHARD_END" => ShardPlace.ShardEnd
      case "AT_TIMESTAMP" =>
        ShardPlace.AtTimestamp(at.getOrElse {
          throw new IllegalArgumentException(
            s"Shard $shardId has checkpoint AT_TIMESTAMP, whose timestamp a KCL lease does not store: give the " +
              "KCL application's initial timestamp with --initial-timestamp (initialTimestamp in the request)."
          )
        })
      // A KCL checkpoint (seq, sub) means every user record up to and including sub-record `sub` was processed.
      case digits() => ShardPlace.AfterSequence(checkpoint, subSequenceNumber(shardId, item))
      case other =>
        throw new IllegalArgumentException(
          s"Shard $shardId has checkpoint '$other'; expected a sequence number (decimal digits) or one of " +
            "TRIM_HORIZON, LATEST, AT_TIMESTAMP, SHARD_END."
        )
    }
  }

  private def subSequenceNumber(shardId: String, item: Map[String, AttributeValue]): Option[Int] =
    item.get(CheckpointSubSequenceNumber).map { value =>
      val text = Option(value.n()).getOrElse(String.valueOf(value.s()))
      scala.util.Try(text.toInt).toOption.filter(_ >= 0).getOrElse {
        throw new IllegalArgumentException(
          s"Shard $shardId has $CheckpointSubSequenceNumber '$text'; expected a whole number >= 0."
        )
      }
    }

  /** An ISO-8601 instant, with the syntax `kinesis.startingPosition` accepts for AT_TIMESTAMP. */
  def parseInstant(text: String): Instant =
    StartingPositionSpec.parse(s"AT_TIMESTAMP $text") match {
      case Right(StartingPositionSpec.AtTimestamp(instant)) => instant
      case _ =>
        throw new IllegalArgumentException(
          s"Initial timestamp (--initial-timestamp) '$text' is not an ISO-8601 instant with an offset, " +
            "e.g. 2026-11-24T10:00:00Z."
        )
    }

  def parseRequest(json: String): Request = {
    val root = mapper.readTree(json)
    val table = Option(root.get("table")).filterNot(_.isNull).map(_.asText).getOrElse("")
    require(table.nonEmpty, "the request names no lease table ('table')")
    val initial = Option(root.get("initialTimestamp")).filterNot(_.isNull).map(n => parseInstant(n.asText))
    val options =
      Option(root.get("options")).toSeq.flatMap(_.fields().asScala.map(e => e.getKey -> e.getValue.asText))
    Request(table, initial, options.toMap)
  }

  /** The DynamoDB settings of the request: the connector's options, with the lease table as the DynamoDB table. */
  def dynamoDbConfig(request: Request): (String, DynamoDbConfig) = {
    import KinesisOptions._
    val replaced =
      Set(MetadataCommitterType, MetadataPath, DynamoDbTableName).map(_.fullKey.toLowerCase(Locale.ROOT))
    val options = request.options.filterNot { case (k, _) =>
      replaced.contains(k.toLowerCase(Locale.ROOT))
    } ++ Map(
      MetadataCommitterType.fullKey -> "DYNAMODB",
      DynamoDbTableName.fullKey -> request.table
    )
    val config = SourceConfig.parse(
      options,
      () => scala.util.Try(new DefaultAwsRegionProviderChain().getRegion.id()).toOption
    )
    val streams = config.streamNames
    if (streams.size != 1)
      throw new IllegalArgumentException(
        s"Option ${StreamName.fullKey} = '${config.streamName}' names ${streams.size} streams; a KCL lease " +
          "table is read for one stream at a time."
      )
    (streams.head, config.dynamoDb.get)
  }

  def run(request: Request): Positions = {
    val (stream, config) = dynamoDbConfig(request)
    val lease = DynamoDbClients.open(config, None)
    val client = lease.value
    val items =
      try {
        val scan = ScanRequest.builder().tableName(config.tableName).consistentRead(true).build()
        client.scanPaginator(scan).items().asScala.map(_.asScala.toMap).toList
      } catch {
        case _: ResourceNotFoundException =>
          throw new IllegalArgumentException(
            s"DynamoDB table '${config.tableName}' does not exist in region ${config.region} at endpoint " +
              s"${config.endpointUrl.getOrElse("(the regional DynamoDB endpoint)")}: name the KCL application's " +
              "lease table (by default the application name), and set kinesis.dynamodb.region or " +
              "kinesis.dynamodb.endpointUrl if it is elsewhere."
          )
      } finally lease.close()
    positions(stream, items, request.initialTimestamp)
  }

  def main(args: Array[String]): Unit = {
    val outcome =
      try Right(run(parseRequest(new String(System.in.readAllBytes(), "UTF-8"))))
      catch { case NonFatal(e) => Left(Option(e.getMessage).getOrElse(e.getClass.getSimpleName)) }
    outcome match {
      case Right(result) =>
        result.warnings.foreach(w => System.err.println(s"warning: $w"))
        println(result.document.toJson)
      case Left(message) =>
        System.err.println(s"error: ${message.replace('\n', ' ')}")
        System.exit(1)
    }
  }
}
