package io.sparkkinesis.reader

import java.util.concurrent.ConcurrentHashMap

/**
 * Where a shard's reads stand against `kinesis.maxFetchRate`: the time of the last read call (System.nanoTime) and
 * how long after it the next call must wait.
 */
private[sparkkinesis] final case class FetchPacing(lastCallNanos: Long, waitMs: Long)

/**
 * Shard iterators left by one batch's task for the next batch's task on the same executor. A task that consumed
 * every record of its last GetRecords response holds an iterator that points exactly at its end position; the task
 * that next reads the shard from that position takes it instead of calling GetShardIterator. Kinesis iterators
 * expire after 5 minutes, so entries older than 4 are not handed out. Each entry is taken once.
 */
private[sparkkinesis] object ShardIteratorCache {
  final case class Key(endpoint: String, streamName: String, shardId: String, position: ShardPosition)

  private final case class Entry(iterator: String, storedAtNanos: Long)

  private val MaxAgeNanos = 4L * 60 * 1000 * 1000 * 1000
  private val MaxEntries = 10000
  private val entries = new ConcurrentHashMap[Key, Entry]()

  def put(key: Key, iterator: String, nowNanos: Long = System.nanoTime()): Unit = {
    if (entries.size() >= MaxEntries) entries.clear()
    entries.put(key, Entry(iterator, nowNanos))
  }

  def take(key: Key, nowNanos: Long = System.nanoTime()): Option[String] =
    Option(entries.remove(key)).filter(e => nowNanos - e.storedAtNanos < MaxAgeNanos).map(_.iterator)

  /** A shard of a stream at an endpoint, whatever the position. */
  final case class ShardRef(endpoint: String, streamName: String, shardId: String)

  // The pacing a task left for the next task reading the same shard on this executor, wherever it ends.
  private val pacings = new ConcurrentHashMap[ShardRef, FetchPacing]()

  def putPacing(shard: ShardRef, pacing: FetchPacing): Unit = {
    if (pacings.size() >= MaxEntries) pacings.clear()
    pacings.put(shard, pacing)
  }

  def takePacing(shard: ShardRef): Option[FetchPacing] = Option(pacings.remove(shard))
}
