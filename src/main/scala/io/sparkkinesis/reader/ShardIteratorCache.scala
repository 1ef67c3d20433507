package io.sparkkinesis.reader

import java.util.concurrent.ConcurrentHashMap

/**
 * Shard iterators left by one batch's task for the next batch's task on the same executor. A task that consumed
 * every record of its last GetRecords response holds an iterator that points exactly at its end position; the task
 * that next reads the shard from that position takes it instead of calling GetShardIterator. Kinesis iterators
 * expire after 5 minutes, so entries older than 4 are not handed out. Each entry is taken once.
 */
object ShardIteratorCache {
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
}
