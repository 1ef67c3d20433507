package io.sparkkinesis.client

/**
 * One event pushed by an enhanced fan-out subscription. `continuationSequenceNumber` is where a renewed
 * subscription continues (AFTER it); it is absent in the last event of a closed shard, which lists the children.
 */
private[sparkkinesis] final case class SubscriptionEvent(
    records: Seq[KinesisRecord],
    continuationSequenceNumber: Option[String],
    millisBehindLatest: Option[Long],
    childShards: Seq[ChildShard]
) {
  def endsShard: Boolean = continuationSequenceNumber.isEmpty || childShards.nonEmpty
}

/** Flow control of one live subscription: events arrive only as they are requested. */
private[sparkkinesis] trait SubscriptionHandle {
  def request(events: Long): Unit
  def cancel(): Unit
}

/**
 * Receives one subscription's callbacks, on client threads. After `onStart`, events arrive in shard order, each one
 * requested through the handle; then at most one of `onEnd` (the service ended it, after its 5 minutes) or `onError`.
 */
private[sparkkinesis] trait SubscriptionListener {
  def onStart(handle: SubscriptionHandle): Unit
  def onEvent(event: SubscriptionEvent): Unit
  def onEnd(): Unit
  def onError(error: Throwable): Unit
}

/** Executor-side enhanced fan-out reads (SubscribeToShard). No other call is made on this path. */
private[sparkkinesis] trait ShardSubscriptionClient {

  /** Starts a subscription; returns at once. The returned function cancels it, whether it has started or not. */
  def subscribe(
      consumerArn: String,
      shardId: String,
      start: IteratorStart,
      listener: SubscriptionListener
  ): () => Unit
}

/** A registered enhanced fan-out consumer of a stream. */
private[sparkkinesis] final case class StreamConsumer(name: String, arn: String, status: String)

/** The consumer life cycle calls the driver makes for enhanced fan-out. */
private[sparkkinesis] trait StreamConsumerClient {

  /** The consumer of that name on the stream, or None when there is none. */
  def describeConsumer(streamArn: String, consumerName: String): Option[StreamConsumer]

  /**
   * Registers a consumer (status CREATING) with `tags` (none when empty). Fails with [[ConsumerLimitExceeded]] when
   * Kinesis refuses for now, without retrying: the caller retries a refused registration.
   */
  def registerConsumer(streamArn: String, consumerName: String, tags: Map[String, String]): StreamConsumer

  /** Deregisters a consumer; a consumer that no longer exists is fine. */
  def deregisterConsumer(streamArn: String, consumerName: String): Unit

  /** Every consumer registered on the stream (all pages). */
  def listConsumers(streamArn: String): Seq[StreamConsumer]
}

/** Kinesis refused a consumer call for now: too many consumers CREATING, or the call rate was passed. */
private[sparkkinesis] final class ConsumerLimitExceeded(message: String, cause: Throwable)
    extends RuntimeException(message, cause)

/** A consumer of that name exists already (a register call lost a race). */
private[sparkkinesis] final class ConsumerAlreadyExists(message: String, cause: Throwable)
    extends RuntimeException(message, cause)
