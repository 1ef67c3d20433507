package io.sparkkinesis.reader.efo

import java.util.concurrent.{ConcurrentHashMap, Executors, TimeUnit}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.reader.ShardPosition
import io.sparkkinesis.resources.DaemonThreads

/**
 * Live subscriptions left by one batch's task for the next batch's task on the same executor, so that a shard does
 * not wait for a SubscribeToShard handshake in every batch: a task that consumed everything its fetcher handed out
 * leaves it here under its end, for the task that next reads the shard from exactly there. A task for another
 * position closes the entry (Kinesis allows one subscription per consumer and shard). Unused entries are closed after
 * `MaxIdleMs`.
 */
private[sparkkinesis] object SubscriptionCache {
  final case class Key(endpoint: String, consumerArn: String, shardId: String)

  private final case class Entry(fetcher: EfoFetcher, position: ShardPosition, storedAtNanos: Long)

  val MaxIdleMs: Long = 60000L
  private val entries = new ConcurrentHashMap[Key, Entry]()

  private val sweeper =
    Executors.newSingleThreadScheduledExecutor(DaemonThreads("spark-kinesis-subscription-sweeper"))
  sweeper.scheduleWithFixedDelay(() => sweep(System.nanoTime()), 10, 10, TimeUnit.SECONDS)

  def put(key: Key, position: ShardPosition, fetcher: EfoFetcher, nowNanos: Long = System.nanoTime()): Unit =
    Option(entries.put(key, Entry(fetcher, position, nowNanos))).foreach(e =>
      if (e.fetcher ne fetcher) e.fetcher.close()
    )

  /** The fetcher left for `position`, if any; an entry for another position is closed. */
  def take(key: Key, position: ShardPosition, nowNanos: Long = System.nanoTime()): Option[EfoFetcher] =
    Option(entries.remove(key)).flatMap { e =>
      if (e.position == position && nowNanos - e.storedAtNanos < MaxIdleMs * 1000000L) Some(e.fetcher)
      else {
        e.fetcher.close()
        None
      }
    }

  /** Closes every entry of a consumer (the driver's query stops; only effective in the driver's JVM). */
  def closeConsumer(consumerArn: String): Unit =
    entries.keySet().asScala.filter(_.consumerArn == consumerArn).foreach { k =>
      Option(entries.remove(k)).foreach(_.fetcher.close())
    }

  def sweep(nowNanos: Long): Unit =
    entries.asScala.foreach { case (k, e) =>
      if (nowNanos - e.storedAtNanos >= MaxIdleMs * 1000000L && entries.remove(k, e)) e.fetcher.close()
    }

  def size: Int = entries.size()
}
