package io.sparkkinesis.source

import io.sparkkinesis.client.{ShardDescription, StreamMetadataClient}
import io.sparkkinesis.reader.ShardEnd

/**
 * The driver's view of each stream's shards, kept current with few ListShards calls whose answers do not grow with
 * the stream's history. A full listing (every shard in retention) is taken at the start (a restart, a stream newly
 * read) and then once an hour: only it shows that a finished shard expired, and retention is at least 24 hours.
 * Between them a listing asks only for the shards created after the newest one known (`ShardFilter` `AFTER_SHARD_ID`:
 * Kinesis numbers shards in creation order), merged with the known shards; a known shard that a new one names as
 * parent is closed ([[ShardDescription.childListed]]). Few listings suffice: a reader that reaches a closed shard's
 * end learns its children (`ChildShards`), which [[ShardPlanner]] plans from. A listing is due at once (no sooner
 * than `describeShardInterval` after the last) when a read shard finished without announcing a child; otherwise one
 * every [[ShardListing.SafetyIntervalMs]] catches what was not announced (an emulator's fan-out never ends a closed
 * shard). A child found late is read from TRIM_HORIZON after its parents.
 */
private[sparkkinesis] final class ShardListing(
    client: StreamMetadataClient,
    streams: Seq[String],
    streamId: String => String,
    minIntervalMs: Long,
    nowMillis: () => Long
) {
  import ShardListing._

  private var known = Map.empty[String, Known]
  // Each stream's last batch whose unannounced end was answered with a listing of that stream.
  private var answered = Map.empty[String, Long]

  /** Every stream's shards as known now: lists a stream again when [[ShardListing.due]] says so. */
  def shards(): Map[String, Seq[ShardDescription]] = shardsAfter(Long.MinValue, Map.empty)

  /** As [[shards]], for the batch after `batchId`: a shard of `ends` finished without a child lists its stream. */
  def shardsAfter(batchId: Long, ends: Map[ShardKey, ShardEnd]): Map[String, Seq[ShardDescription]] = {
    val now = nowMillis()
    val unannounced = ends.collect {
      case (key, e) if e.finished && e.childShards.isEmpty => key.streamName
    }.toSet
    streams.foreach { s =>
      val suspect = unannounced(s) && batchId > answered.getOrElse(s, Long.MinValue)
      due(known.get(s), now, minIntervalMs, suspect).foreach { request =>
        known += s -> merged(known.get(s), request, client.listShards(streamId(s), request), now)
        if (suspect) answered += s -> batchId
      }
    }
    known.map { case (s, k) => s -> k.shards }
  }

  /** Every shard of every stream, listed in full now (the pinned start of a `Trigger.AvailableNow` run). */
  def listAllNow(): Map[String, Seq[ShardDescription]] = {
    known = Map.empty
    shards()
  }

  def closed: Set[ShardKey] =
    known.toSeq.flatMap { case (s, k) => k.shards.filter(_.isClosed).map(d => ShardKey(s, d.shardId)) }.toSet
}

private[sparkkinesis] object ShardListing {

  /** Longest time between two listings of a stream when nothing suggests a change: 4 ListShards a minute. */
  val SafetyIntervalMs = 15000L

  /** Longest time between two full listings of a stream (the only ones that show a shard expired). */
  val FullIntervalMs = 3600000L

  /** What is known of a stream's shards; the next listing asks for those after `newest`, the newest id listed. */
  final case class Known(shards: Seq[ShardDescription], newest: Option[String], listedAt: Long, fullAt: Long)

  /** Shard ids compared by creation order (`shardId-000000000012` after `shardId-000000000009`). */
  val creationOrder: Ordering[String] = Ordering.by((id: String) => (id.length, id))

  /**
   * The listing due now: `Some(None)` a full one, `Some(Some(id))` one of the shards after `id`, None none.
   * `suspect`: a read shard finished without announcing a child since the last listing.
   */
  def due(known: Option[Known], now: Long, minIntervalMs: Long, suspect: Boolean): Option[Option[String]] =
    known match {
      case None => Some(None)
      case Some(k) if now - k.listedAt < minIntervalMs => None
      case Some(k) if now - k.fullAt >= math.max(FullIntervalMs, minIntervalMs) || k.newest.isEmpty =>
        Some(None)
      case Some(k) if suspect || now - k.listedAt >= math.max(SafetyIntervalMs, minIntervalMs) =>
        Some(k.newest)
      case _ => None
    }

  /**
   * What is known after `listed` answered `asked`: a full listing replaces the known shards; one of newer shards (or
   * a server that ignored the filter) updates those it names, adds the others, and closes the parents of all of them.
   */
  def merged(known: Option[Known], asked: Option[String], listed: Seq[ShardDescription], now: Long): Known = {
    val newest =
      (known.flatMap(_.newest).toSeq ++ listed.map(_.shardId)).reduceOption(creationOrder.max(_, _))
    asked match {
      case None => Known(listed, newest, now, now)
      case Some(_) =>
        val k = known.get
        val byId = listed.map(s => s.shardId -> s).toMap
        val parents = listed.flatMap(_.parents).toSet
        val knownIds = k.shards.map(_.shardId).toSet
        val shards =
          (k.shards.map(s => byId.getOrElse(s.shardId, s)) ++ listed.filterNot(s => knownIds(s.shardId)))
            .map(s => if (parents(s.shardId) && !s.isClosed) s.copy(childListed = true) else s)
        Known(shards, newest, now, k.fullAt)
    }
  }
}
