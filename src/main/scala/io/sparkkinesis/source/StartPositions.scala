package io.sparkkinesis.source

import io.sparkkinesis.client.ShardDescription
import io.sparkkinesis.config.{ShardPlace, ShardPositions, StartingPositionSpec}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.reader.ShardPosition

/**
 * Where each listed shard of a stream starts: None for a shard with nothing to read (read to its end already).
 * `unlisted`: the shards a per-shard document names that the listing lacks (unknown, or expired since).
 */
private[sparkkinesis] final case class StartPositions(
    positions: Map[String, Option[ShardPosition]],
    unlisted: Seq[String]
)

private[sparkkinesis] object StartPositions {

  /**
   * Pure resolution of a starting position against a shard listing. LATEST is pinned to `latestAtMillis` (when the
   * query started), so a replay of the first batch starts at the same records; a closed shard starts finished. With
   * a per-shard document, a shard it does not list counts as finished when it is an ancestor of a listed shard (the
   * document's position there implies its ancestors were read), and starts at TRIM_HORIZON otherwise.
   */
  def resolve(
      streamName: String,
      listing: Seq[ShardDescription],
      start: StartingPositionSpec,
      latestAtMillis: Long
  ): StartPositions = start match {
    case StartingPositionSpec.TrimHorizon => uniform(listing, _ => Some(ShardPosition.TrimHorizon))
    case StartingPositionSpec.AtTimestamp(instant) =>
      uniform(listing, _ => Some(ShardPosition.AtTimestamp(instant.toEpochMilli)))
    case StartingPositionSpec.Latest => uniform(listing, latest(latestAtMillis))
    case StartingPositionSpec.PerShard(doc) => perShard(streamName, listing, doc, latestAtMillis)
  }

  private def uniform(listing: Seq[ShardDescription], at: ShardDescription => Option[ShardPosition]) =
    StartPositions(listing.map(s => s.shardId -> at(s)).toMap, Nil)

  private def latest(latestAtMillis: Long)(shard: ShardDescription): Option[ShardPosition] =
    if (shard.isClosed) None else Some(ShardPosition.AtTimestamp(latestAtMillis))

  private def perShard(
      streamName: String,
      listing: Seq[ShardDescription],
      doc: ShardPositions,
      latestAtMillis: Long
  ): StartPositions = {
    val places = doc.streams.getOrElse(streamName, Map.empty)
    val byId = listing.map(s => s.shardId -> s).toMap
    val ancestors = ancestorsOf(places.keySet.filter(byId.contains), byId)
    val positions = listing.map { s =>
      s.shardId -> (places.get(s.shardId) match {
        case Some(place) => position(place, s, latestAtMillis)
        case None if ancestors.contains(s.shardId) => None
        case None => Some(ShardPosition.TrimHorizon)
      })
    }.toMap
    StartPositions(positions, unlistedShards(streamName, listing, doc))
  }

  /** The shards `doc` names for `streamName` that the listing lacks, sorted (see [[checkListed]]). */
  def unlistedShards(streamName: String, listing: Seq[ShardDescription], doc: ShardPositions): Seq[String] = {
    val listed = listing.map(_.shardId).toSet
    doc.streams.getOrElse(streamName, Map.empty).keys.filterNot(listed.contains).toSeq.sorted
  }

  /** A document's place as a reader's start; None when the shard has nothing left to read. */
  def position(place: ShardPlace, shard: ShardDescription, latestAtMillis: Long): Option[ShardPosition] =
    place match {
      case ShardPlace.TrimHorizon => Some(ShardPosition.TrimHorizon)
      case ShardPlace.Latest => latest(latestAtMillis)(shard)
      case ShardPlace.AtTimestamp(instant) => Some(ShardPosition.AtTimestamp(instant.toEpochMilli))
      case ShardPlace.ShardEnd => None
      // Before sub-record k is after sub-record k - 1.
      case ShardPlace.AtSequence(seq, None | Some(0)) => Some(ShardPosition.At(seq))
      case ShardPlace.AtSequence(seq, Some(k)) => Some(ShardPosition.After(seq, k - 1))
      case ShardPlace.AfterSequence(seq, None) => Some(ShardPosition.After(seq, ShardPosition.WholeRecord))
      case ShardPlace.AfterSequence(seq, Some(k)) => Some(ShardPosition.After(seq, k))
    }

  /**
   * Checks the shards a per-shard document names that Kinesis does not list. Kinesis numbers shards in order of
   * creation, so one numbered above every listed shard never existed: an error. One numbered below may have expired
   * with its records since the document was written: an error per `kinesis.failOnDataLoss`, else a warning.
   * `optionKey` names the option that holds the document, for the message.
   */
  def checkListed(
      streamName: String,
      listing: Seq[ShardDescription],
      unlisted: Seq[String],
      failOnDataLoss: Boolean,
      warn: String => Unit,
      optionKey: String
  ): Unit = if (unlisted.nonEmpty) {
    val newest = listing.flatMap(s => number(s.shardId)).foldLeft(-1L)(math.max)
    val (unknown, expired) = unlisted.partition(id => number(id).forall(_ > newest))
    if (unknown.nonEmpty)
      throw KinesisErrors.unknownShards(optionKey, streamName, unknown, listing.map(_.shardId))
    val error = KinesisErrors.expiredShardsInOptions(optionKey, streamName, expired)
    if (failOnDataLoss) throw error
    warn(s"Ignoring these shards, as kinesis.failOnDataLoss is false: ${error.getMessage}")
  }

  private val shardNumber = "shardId-([0-9]{1,18})".r

  private def number(shardId: String): Option[Long] = shardNumber.unapplySeq(shardId).map(_.head.toLong)

  /** Every ancestor (parent, grandparent, ...) of `shards` that the listing holds. */
  private def ancestorsOf(shards: Set[String], byId: Map[String, ShardDescription]): Set[String] = {
    def parents(ids: Set[String]) =
      ids.flatMap(id => byId.get(id).toSeq.flatMap(_.parents)).filter(byId.contains)
    @scala.annotation.tailrec
    def walk(frontier: Set[String], found: Set[String]): Set[String] =
      if (frontier.isEmpty) found else walk(parents(frontier) -- found -- frontier, found ++ frontier)
    walk(parents(shards), Set.empty)
  }
}
