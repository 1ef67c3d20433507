package io.sparkkinesis.config

/**
 * How a query reads its shards: `kinesis.consumerType`, parsed, with the settings of that way of reading. The driver
 * asks the mode what it supports instead of testing which mode it is.
 */
private[sparkkinesis] sealed trait ReadMode {

  /** The value of `kinesis.consumerType` that chose this mode. */
  def consumerType: String

  /** Shown in plans: the consumer type, and for fan-out the consumer's name. */
  def describe: String = this match {
    case _: ReadMode.Polling => consumerType
    case ReadMode.FanOut(efo) => s"$consumerType, consumerName=${efo.consumerName}"
  }

  /** A batch read (spark.read): it needs reads that end; a subscription pushes records with no end. */
  def supportsBatchRead: Boolean

  /** A `Trigger.AvailableNow` run: it needs the tip probes of GetRecords. */
  def supportsAvailableNow: Boolean

  /**
   * Whether the driver spaces batches while the shards are idle (see [[io.sparkkinesis.source.BatchPacing]]): a
   * polling read waits so as not to spend GetRecords calls; a subscription makes no call while idle.
   */
  def pacesIdleBatches: Boolean
}

private[sparkkinesis] object ReadMode {

  /** GetRecords polling, on the throughput the shard shares with its other consumers. */
  final case class Polling(maxFetchRateMBps: Option[Double]) extends ReadMode {
    def consumerType: String = Polling.ConsumerType
    def supportsBatchRead: Boolean = true
    def supportsAvailableNow: Boolean = true
    def pacesIdleBatches: Boolean = true

    /** `kinesis.maxFetchRate` in bytes per second. */
    def maxBytesPerSecond: Option[Double] = maxFetchRateMBps.map(_ * 1000000.0)
  }

  object Polling {
    val ConsumerType = "GetRecords"
  }

  /** Enhanced fan-out: SubscribeToShard as the registered stream consumer `consumer.consumerName`. */
  final case class FanOut(consumer: EfoConfig) extends ReadMode {
    def consumerType: String = FanOut.ConsumerType
    def supportsBatchRead: Boolean = false
    def supportsAvailableNow: Boolean = false
    def pacesIdleBatches: Boolean = false
  }

  object FanOut {
    val ConsumerType = "SubscribeToShard"
  }

  /** The values of `kinesis.consumerType`, in the order its error message lists them. */
  val ConsumerTypes: Seq[String] = Seq(Polling.ConsumerType, FanOut.ConsumerType)
}

/** Enhanced fan-out settings (consumerType SubscribeToShard). */
private[sparkkinesis] final case class EfoConfig(
    consumerName: String,
    deregisterOnStop: Boolean,
    subscribeTimeoutMs: Long,
    maxRetries: Int,
    httpProtocol: HttpProtocol
)
