package io.sparkkinesis.source

import java.util.UUID

import scala.collection.mutable

import io.sparkkinesis.client.{ShardDescription, StreamMetadataClient, StreamSummary}
import io.sparkkinesis.config.{KinesisOptions, SourceConfig, StartingPositionSpec, StreamIdentity}
import org.slf4j.LoggerFactory

/**
 * The streams a query reads, as configured, against the ones a checkpoint's offset read: a query's first offset, and
 * a checkpoint's offset reconciled with the configured streams ([[reconcile]]). Each stream's summary is the answer
 * of one DescribeStreamSummary, when the query started; `listing` gives the current shards of every stream.
 */
private[source] final class ConfiguredStreams(
    config: SourceConfig,
    val summaries: Map[String, StreamSummary],
    listing: () => Map[String, Seq[ShardDescription]],
    nowMillis: () => Long
) {
  import ConfiguredStreams.log

  val names: Seq[String] = config.streamNames

  // Recorded in every offset planned; a checkpoint's is compared with it (see restarted).
  val identities: Map[String, StreamIdentity] =
    summaries.map { case (stream, s) => stream -> StreamIdentity.of(s.streamArn, s.createdAt) }

  // Streams whose re-creation (or first recorded identity) was logged already: planning runs every few milliseconds.
  private val logged = mutable.Set.empty[String]

  /**
   * Whether the tasks deliver KPL sub-records outside their shard's hash range (record distribution AUTO, as of the
   * query's start) or drop them; each task records the decision with its end, so a replay decides as the first run.
   */
  def deliversOutsideRange(stream: String): Boolean =
    summaries.get(stream).exists(_.serviceManagedDistribution)

  /**
   * Where `LATEST` starts a stream's shards: when the query started, by Kinesis' clock (the `Date` of its answer,
   * rounded down to the second), so a driver clock ahead of Kinesis' skips no record put after the start; records put
   * up to a second before may be read. The driver's clock serves only when the answer had no date.
   */
  private lazy val latestAtMillis: Map[String, Long] = summaries.map { case (stream, summary) =>
    stream -> summary.serviceTimeMillis.getOrElse {
      log.warn(
        s"Kinesis' answer for stream $stream carried no Date header: LATEST is pinned to the driver's clock"
      )
      nowMillis()
    }
  }

  /** The first offset of a query (batch -1, a new run id): every configured stream from its starting position. */
  def initial(): KinesisOffset = {
    val runId = UUID.randomUUID().toString
    KinesisOffset(-1L, runId, names.flatMap(s => initialFor(s, runId).shards).toMap, identities)
  }

  private def initialFor(
      stream: String,
      runId: String,
      from: StartingPositionSpec = config.startingPosition
  ): KinesisOffset = {
    val shards = listing()(stream)
    val start = from match {
      case StartingPositionSpec.PerShard(doc) =>
        // A document that names the stream it was written for must be about the stream of that name now.
        val restarts = StreamIdentity.restarts(
          stream,
          doc.identities.get(stream),
          identities(stream),
          config.failOnRecreatedStream,
          s"the ${KinesisOptions.StartingPosition.fullKey} document",
          s"give ${KinesisOptions.StartingPosition.fullKey} a positions document of the new stream, or a " +
            "position such as TRIM_HORIZON",
          log.warn
        )
        if (restarts) StartingPositionSpec.TrimHorizon else from
      case other => other
    }
    StartPositions.checkListed(
      stream,
      shards,
      StartPositions.resolve(stream, shards, start, 0L).unlisted,
      config.failOnDataLoss,
      log.warn,
      KinesisOptions.StartingPosition.fullKey
    )
    ShardPlanner.initial(stream, shards, start, latestAtMillis(stream), runId)
  }

  /**
   * The streams of `previous` (a checkpoint's offset) deleted and re-created since it was written, when
   * `kinesis.failOnDataLoss` is false; with true, the first such stream fails the query. A stream whose identity
   * `previous` lacks is taken as the same stream (whether it was re-created before this run cannot be told).
   */
  def restarted(previous: KinesisOffset): Set[String] =
    names.filter { stream =>
      previous.shards.keysIterator.exists(_.streamName == stream) && {
        val recorded = previous.identities.get(stream)
        if (recorded.isEmpty && logged.add(stream))
          log.info(
            s"The checkpoint's offset ${previous.batchId} has no identity for stream $stream: recording it as " +
              s"${identities(stream).describe} from this batch on"
          )
        StreamIdentity.restarts(
          stream,
          recorded,
          identities(stream),
          config.failOnRecreatedStream,
          s"the checkpoint (offset of batch ${previous.batchId}, run ${previous.runId})",
          "start the query with a new checkpoint location (with a kinesis.startingPosition for the new stream, a " +
            "positions document if need be)",
          msg => if (logged.add(s"recreated:$stream")) log.warn(msg)
        )
      }
    }.toSet

  /**
   * `previous` with the configured streams only: a stream added since the checkpoint was written starts per
   * `startingPosition`, one no longer configured is dropped, one re-created since ([[restarted]]) starts again from
   * TRIM_HORIZON. The shards added are not read yet; the result records the identity of every stream read.
   */
  def reconcile(previous: KinesisOffset): KinesisOffset = {
    val tracked = previous.shards.keySet.map(_.streamName)
    val dropped = tracked -- names
    if (dropped.nonEmpty)
      log.info(s"No longer reading streams ${dropped.mkString(", ")}: not in kinesis.streamName")
    val added = names.filterNot(tracked).map { s =>
      log.info(s"Reading stream $s, newly in kinesis.streamName, from ${config.startingPosition}")
      initialFor(s, previous.runId)
    }
    val recreated = restarted(previous)
    val again = recreated.toSeq.map(initialFor(_, previous.runId, StartingPositionSpec.TrimHorizon))
    val fresh = (added ++ again).flatMap(ShardPlanner.readOnly(_)(_ => false).shards)
    val configured =
      if (dropped.isEmpty && fresh.isEmpty && recreated.isEmpty) previous
      else
        previous.copy(shards = previous.shards.filter { case (key, _) =>
          names.contains(key.streamName) && !recreated.contains(key.streamName)
        } ++ fresh)
    if (configured.identities == identities) configured else configured.copy(identities = identities)
  }
}

private[source] object ConfiguredStreams {
  private val log = LoggerFactory.getLogger(classOf[ConfiguredStreams])

  /** Describes every configured stream once (DescribeStreamSummary): a stream missing or unreachable fails here. */
  def describe(
      config: SourceConfig,
      client: StreamMetadataClient,
      listing: () => Map[String, Seq[ShardDescription]],
      nowMillis: () => Long
  ): ConfiguredStreams = {
    val summaries = config.streamNames.map(s => s -> client.describeStream(config.streamId(s))).toMap
    for ((stream, summary) <- summaries if summary.serviceManagedDistribution)
      log.info(
        s"Stream $stream has service-managed record distribution (RecordDistributionStrategy AUTO): KPL " +
          "sub-records outside their shard's hash range are delivered"
      )
    new ConfiguredStreams(config, summaries, listing, nowMillis)
  }
}
