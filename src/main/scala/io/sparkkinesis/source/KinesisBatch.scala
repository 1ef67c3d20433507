package io.sparkkinesis.source

import io.sparkkinesis.client._
import io.sparkkinesis.config._
import io.sparkkinesis.config.KinesisOptions.{EndingPosition, StartingPosition}
import io.sparkkinesis.reader._
import io.sparkkinesis.resources.Lease
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory}
import org.slf4j.LoggerFactory

/** Where a batch read stops in one shard, before the driver turns it into a [[io.sparkkinesis.reader.RunBound]]. */
private[sparkkinesis] sealed trait BatchEnd

private[sparkkinesis] object BatchEnd {

  /** The shard's tip when the read is planned. */
  case object Tip extends BatchEnd

  /** Before the first record that arrived at or after `epochMillis`. */
  final case class Timestamp(epochMillis: Long) extends BatchEnd

  /** A place fixed by sequence number, see [[io.sparkkinesis.reader.RunBound.Before]]. */
  final case class Before(sequenceNumber: String, subRecords: Int) extends BatchEnd

  /** The end of a closed shard. */
  case object ShardEnd extends BatchEnd
}

/** One shard of a batch read, as planned. */
private[sparkkinesis] final case class PlannedShardRead(
    shard: ShardDescription,
    start: ShardPosition,
    end: BatchEnd
)

/**
 * Pure planning of a batch read: which shards it reads, from where and to where. Every listed shard with something
 * between its start and its end is read, parents first (a batch result has no order to keep). Shards created after
 * the read is planned are not listed, so not read: all their records were put after the planned end.
 */
private[sparkkinesis] object BatchPlanner {

  import scala.math.Ordering.Implicits._

  def plan(
      streamName: String,
      listing: Seq[ShardDescription],
      start: StartPositions,
      end: EndingPositionSpec
  ): Seq[PlannedShardRead] = {
    val byId = listing.map(s => s.shardId -> s).toMap

    /*
     * The end of a shard that an ending document does not list, from its nearest listed ancestors (Kinesis puts a
     * child's records after all of its parents' records):
     *   - an ancestor ended by sequence number (or at TRIM_HORIZON) ends before its shard closed, so every record of
     *     the descendant lies after that end: nothing is read;
     *   - an ancestor ended at a timestamp passes that timestamp on (the earliest, after a merge);
     *   - otherwise (LATEST, or no listed ancestor) the descendant ends at LATEST.
     */
    def inheritedEnd(shard: ShardDescription, doc: ShardPositions): ShardPlace = {
      def listedAncestors(id: String, seen: Set[String]): Seq[ShardPlace] =
        byId.get(id).toSeq.flatMap(_.parents).filterNot(seen.contains).flatMap { parent =>
          doc.placeOf(streamName, parent) match {
            case Some(place) => Seq(place)
            case None => listedAncestors(parent, seen + parent)
          }
        }
      val inherited = listedAncestors(shard.shardId, Set(shard.shardId))
      val times = inherited.collect { case ShardPlace.AtTimestamp(instant) => instant }
      inherited
        .collectFirst {
          case ShardPlace.TrimHorizon | _: ShardPlace.AtSequence | _: ShardPlace.AfterSequence =>
            ShardPlace.TrimHorizon
        }
        .getOrElse(
          if (times.nonEmpty) ShardPlace.AtTimestamp(times.minBy(_.toEpochMilli)) else ShardPlace.Latest
        )
    }

    // None when the end is TRIM_HORIZON: nothing lies before it.
    def endOf(shard: ShardDescription): Option[BatchEnd] = (end match {
      case EndingPositionSpec.Latest => ShardPlace.Latest
      case EndingPositionSpec.AtTimestamp(instant) => ShardPlace.AtTimestamp(instant)
      case EndingPositionSpec.PerShard(doc) =>
        doc.placeOf(streamName, shard.shardId).getOrElse(inheritedEnd(shard, doc))
    }) match {
      case ShardPlace.TrimHorizon => None
      case ShardPlace.Latest if shard.isClosed => Some(BatchEnd.ShardEnd)
      case ShardPlace.AtTimestamp(instant) => Some(BatchEnd.Timestamp(instant.toEpochMilli))
      case ShardPlace.AtSequence(seq, sub) => Some(BatchEnd.Before(seq, sub.getOrElse(0)))
      case ShardPlace.AfterSequence(seq, None) => Some(BatchEnd.Before(seq, Int.MaxValue))
      case ShardPlace.AfterSequence(seq, Some(k)) => Some(BatchEnd.Before(seq, k + 1))
      // LATEST of an open shard (SHARD_END is refused in ending positions).
      case _ => Some(BatchEnd.Tip)
    }

    lineageOrder(for {
      shard <- listing
      from <- start.positions.getOrElse(shard.shardId, None).toSeq
      to <- endOf(shard).toSeq
      if !empty(from, to)
    } yield PlannedShardRead(shard, from, to))
  }

  /** True when nothing lies between the start and the end of a shard, both fixed by sequence number. */
  private def empty(from: ShardPosition, to: BatchEnd): Boolean = (from, to) match {
    case (ShardPosition.At(s), BatchEnd.Before(e, sub)) => place(e, sub) <= place(s, 0)
    case (ShardPosition.After(s, k), BatchEnd.Before(e, sub)) =>
      val next = if (k < 0) Long.MaxValue else k.toLong + 1L
      place(e, sub) <= place(s, next)
    case _ => false
  }

  private def place(seq: String, sub: Long): (BigInt, Long) = BigInt(seq) -> sub

  /** Parents before children, then by shard id. */
  private def lineageOrder(reads: Seq[PlannedShardRead]): Seq[PlannedShardRead] = {
    val byId = reads.map(r => r.shard.shardId -> r).toMap
    def depth(id: String, seen: Set[String]): Int =
      byId.get(id).filterNot(_ => seen.contains(id)) match {
        case None => 0
        case Some(r) => 1 + r.shard.parents.map(depth(_, seen + id)).foldLeft(0)(math.max)
      }
    reads.sortBy(r => (depth(r.shard.shardId, Set.empty), r.shard.shardId))
  }
}

/**
 * A batch read (`spark.read.format("aws-kinesis")`): the driver lists the shards and pins each one's end (up to
 * [[DriverThreads.Max]] at a time), and tasks read the shards from their starts to those ends with the readers of a
 * streaming query ([[KinesisPartitionReader]]), `kinesis.shardsPerTask` shards per task (by default as many as keep
 * the read at one task per core of `parallelism`).
 */
private[sparkkinesis] final class KinesisBatch(
    config: SourceConfig,
    acquireClient: () => Lease[ShardRecordsClient with StreamMetadataClient],
    parallelism: () => Option[Int] = () => None
) extends Batch {
  private val log = LoggerFactory.getLogger(classOf[KinesisBatch])

  // The client is leased while the batch is planned only: tasks lease their own.
  private lazy val partitions: Array[InputPartition] = {
    val lease = acquireClient()
    val shards =
      try plan(lease.value)
      finally lease.close()
    // One task per core: a task reads its shards at once, so each core has all of its shards' reads in flight.
    val perTask =
      ShardGrouping.shardsPerTask(config.shardsPerTask, parallelism(), shards.size, tasksPerCore = 1)
    val tasks =
      for ((group, i) <- shards.grouped(perTask).zipWithIndex)
        yield KinesisReadTask(TaskKind.BatchRead, if (perTask <= 1) None else Some(i), group): InputPartition
    tasks.toArray
  }

  private def plan(client: ShardRecordsClient with StreamMetadataClient): Seq[ShardSlice] = {
    val end = config.endingPosition.getOrElse(EndingPositionSpec.Latest)
    val now = System.currentTimeMillis()
    config.streamNames.flatMap { stream =>
      val id = config.streamId(stream)
      val summary = summaryOf(client, stream, id)
      val auto = summary.exists(_.serviceManagedDistribution)
      val listing = client.listShards(id)
      val (startSpec, endSpec) = checkedDocuments(summary.getOrElse(client.describeStream(id)), stream, end)
      val start = StartPositions.resolve(stream, listing, startSpec, now)
      val endUnlisted = endSpec match {
        case EndingPositionSpec.PerShard(doc) => StartPositions.unlistedShards(stream, listing, doc)
        case _ => Nil
      }
      for ((shards, option) <- Seq(start.unlisted -> StartingPosition, endUnlisted -> EndingPosition))
        StartPositions.checkListed(stream, listing, shards, config.failOnDataLoss, log.warn, option.fullKey)
      val reads = BatchPlanner.plan(stream, listing, start, endSpec)
      // The end of an open shard is an iterator at the tip or at a time, probed once now, so that a bound already
      // decided (a record put since) is fixed by sequence number and cannot expire while the tasks wait for executors.
      def pinned(shard: ShardDescription, at: IteratorStart) =
        RunBound.of(TipProbe(client).poll(client.getShardIterator(id, shard.shardId, at)))
      val bounds = DriverThreads.inParallel(reads) { read =>
        read.end match {
          case BatchEnd.ShardEnd => RunBound.Unbounded
          case BatchEnd.Before(seq, sub) => RunBound.Before(seq, sub)
          case BatchEnd.Tip => pinned(read.shard, IteratorStart.Latest)
          case BatchEnd.Timestamp(ms) => pinned(read.shard, IteratorStart.AtTimestamp(ms))
        }
      }
      reads.zip(bounds).map { case (read, bound) =>
        ShardSlice(
          streamName = stream,
          shardId = read.shard.shardId,
          start = read.start,
          hashKeyRange = read.shard.hashKeyRange,
          streamArn = config.streamArns.get(stream),
          bound = bound,
          deliverOutsideRange = auto
        )
      }
    }
  }

  /** The stream's DescribeStreamSummary (distribution, identity), or None when the credentials may not call it. */
  private def summaryOf(client: StreamMetadataClient, stream: String, id: String): Option[StreamSummary] =
    try Some(client.describeStream(id))
    catch {
      case AccessDenied(code) =>
        log.warn(
          s"Could not read the record distribution strategy of stream $stream (DescribeStreamSummary: " +
            s"$code); KPL sub-records outside their shard's hash range are dropped and " +
            "counted, as on a stream placed by partition key. Grant kinesis:DescribeStreamSummary to read a stream " +
            "with service-managed record distribution (RecordDistributionStrategy AUTO) without losing them."
        )
        None
    }

  /**
   * The starting and ending positions of `stream`, once positions documents that name their stream are checked
   * against the stream of that name now (`summary`, evaluated only then). A stream re-created since fails the read,
   * or with `kinesis.failOnDataLoss=false` is read from TRIM_HORIZON (a start document's) to LATEST (an end one's).
   */
  private def checkedDocuments(
      summary: => StreamSummary,
      stream: String,
      end: EndingPositionSpec
  ): (StartingPositionSpec, EndingPositionSpec) = {
    val startDoc = config.batchStartingPosition match {
      case StartingPositionSpec.PerShard(doc) => doc.identities.get(stream)
      case _ => None
    }
    val endDoc = end match {
      case EndingPositionSpec.PerShard(doc) => doc.identities.get(stream)
      case _ => None
    }
    if (startDoc.isEmpty && endDoc.isEmpty) (config.batchStartingPosition, end)
    else {
      val described = summary
      val current = StreamIdentity.of(described.streamArn, described.createdAt)
      def restarts(recorded: Option[StreamIdentity], option: String, instead: String): Boolean =
        StreamIdentity.restarts(
          stream,
          recorded,
          current,
          config.failOnRecreatedStream,
          s"the $option document",
          s"give $option a positions document of the new stream (or $instead)",
          log.warn,
          s"Reading the new stream with $option $instead"
        )
      val start =
        if (restarts(startDoc, StartingPosition.fullKey, "TRIM_HORIZON")) StartingPositionSpec.TrimHorizon
        else config.batchStartingPosition
      (start, if (restarts(endDoc, EndingPosition.fullKey, "LATEST")) EndingPositionSpec.Latest else end)
    }
  }

  override def planInputPartitions(): Array[InputPartition] = partitions

  override def createReaderFactory(): PartitionReaderFactory = KinesisReaderFactory(ReadSettings.of(config))
}
