package io.sparkkinesis.reader

/**
 * How a reader obtains records: the polling and fan-out readers differ only here. [[ShardReader]] does everything
 * else (de-aggregation, positions, stop rules), whichever fetcher it reads with.
 */
private[sparkkinesis] trait RecordFetcher extends AutoCloseable {

  /** Fetches the next records after those returned so far, at most `limit` Kinesis records. */
  def fetch(limit: Int): FetchOutcome

  /**
   * Like `fetch`, without waiting: the outcome when it is at hand, or None when it is not yet (the caller asks again,
   * with the same limit, until it gets it). This default fetches at once; [[AsyncFetcher]] fetches in the background.
   */
  def poll(limit: Int): Option[FetchOutcome] = Some(fetch(limit))

  /**
   * Kinesis requests this fetcher made for the current read, of one operation (a [[io.sparkkinesis.client.KinesisApi]]
   * name), tip probes included; a request that failed or was throttled counts too.
   */
  def calls(api: String): Long

  /** Resolves a pending run bound (`Trigger.AvailableNow`); None outside a run's tasks (enhanced fan-out). */
  def tipProbe: Option[TipProbe] = None

  /**
   * Moves the deadline up to which a fetch waits for records at the tip, for a read that follows the tip (real-time
   * mode). A fetcher that does not wait at the tip ignores it.
   */
  def waitUntil(deadlineNanos: Long): Unit = ()
}

/**
 * One read of one shard that a fetcher is opened for. `replaying`: it replays a recorded batch (and stops exactly at
 * the recorded end). `shardClosed`: Kinesis listed the shard closed when the batch was planned. `followTip`: a
 * real-time read, whose fetch at the tip waits for records until the deadline of [[RecordFetcher.waitUntil]].
 */
private[sparkkinesis] final case class ShardRead(
    spec: ShardReadSpec,
    replaying: Boolean,
    shardClosed: Boolean = false,
    followTip: Boolean = false
)

/**
 * Opens the fetcher of each shard read and takes it back when the read ends: the one seam between the readers and
 * the two ways of reading Kinesis. A factory serves any number of reads, one after another or at the same time (each
 * with its own fetcher), and may keep a fetcher between reads on this executor: a read that starts exactly where an
 * earlier one ended takes over its fetcher (a shard iterator, a live subscription) instead of opening a new one.
 */
private[sparkkinesis] trait FetcherFactory {

  type Fetcher <: RecordFetcher

  def open(read: ShardRead): Fetcher

  /**
   * Takes a fetcher back when its read ends. `end`: where the read ended, when every record the fetcher handed out
   * was consumed (the fetcher stands exactly there and may be kept for the next read from `end`); None closes it.
   */
  def release(fetcher: Fetcher, end: Option[ShardPosition]): Unit
}
