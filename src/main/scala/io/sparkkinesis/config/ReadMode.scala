package io.sparkkinesis.config

/**
 * How a query reads its shards: `kinesis.consumerType`, parsed, with the settings of that way of reading. The driver
 * asks the mode what it supports instead of testing which mode it is: `supportsBatchRead`, a batch read (which needs
 * reads that end, unlike a subscription); `spacesFoundBatches`, a batch that found records at the tips followed only
 * `getRecords.fetchIntervalMs` later ([[io.sparkkinesis.source.BatchPacing]]): polling calls GetRecords on the shards
 * again, which Kinesis allows 5 times per second per shard, while a subscription pushes events without a call.
 */
private[sparkkinesis] sealed abstract class ReadMode(
    val consumerType: ConsumerType,
    val supportsBatchRead: Boolean,
    val spacesFoundBatches: Boolean
) extends Serializable {

  /** Shown in plans: the consumer type, and for fan-out the consumer's name. */
  def describe: String = this match {
    case _: ReadMode.Polling => consumerType.name
    case ReadMode.FanOut(efo) =>
      efo.consumerName.fold(s"$consumerType, consumerArn=${efo.consumerArns.values.mkString(",")}")(name =>
        s"$consumerType, consumerName=$name"
      )
  }
}

private[sparkkinesis] object ReadMode {

  /** GetRecords polling, on the throughput the shard shares with its other consumers. */
  final case class Polling(maxFetchRateMBps: Option[Double])
      extends ReadMode(ConsumerType.GetRecords, supportsBatchRead = true, spacesFoundBatches = true) {

    /** `kinesis.maxFetchRate` in bytes per second. */
    def maxBytesPerSecond: Option[Double] = maxFetchRateMBps.map(_ * 1000000.0)
  }

  /** Enhanced fan-out: SubscribeToShard as the registered stream consumer `consumer.consumerName`. */
  final case class FanOut(consumer: EfoConfig)
      extends ReadMode(ConsumerType.SubscribeToShard, supportsBatchRead = false, spacesFoundBatches = false)
}

/** `kinesis.consumerType`: how a query reads its shards. */
private[sparkkinesis] sealed abstract class ConsumerType(val name: String) extends Choice

private[sparkkinesis] object ConsumerType {
  case object GetRecords extends ConsumerType("GetRecords")
  case object SubscribeToShard extends ConsumerType("SubscribeToShard")

  /** In the order errors list them. */
  val all: Seq[ConsumerType] = Seq(GetRecords, SubscribeToShard)
}

/**
 * Enhanced fan-out settings (consumerType SubscribeToShard): the consumers are registered by `consumerName` (with
 * `tags`), or given by ARN (`consumerArns`: stream name -> consumer ARN, `kinesis.consumerArn`), never both.
 */
private[sparkkinesis] final case class EfoConfig(
    consumerName: Option[String],
    consumerArns: Map[String, String],
    tags: Map[String, String],
    deregisterOnStop: Boolean,
    subscribeTimeoutMs: Long,
    maxRetries: Int,
    httpProtocol: HttpProtocol
)

/** HTTP protocol of the SubscribeToShard client. */
private[sparkkinesis] sealed abstract class HttpProtocol(val name: String) extends Choice

private[sparkkinesis] object HttpProtocol {
  case object Http2 extends HttpProtocol("HTTP2")
  case object Http2Alpn extends HttpProtocol("HTTP2_ALPN")
  case object Http1 extends HttpProtocol("HTTP1_1")
  val all: Seq[HttpProtocol] = Seq(Http2, Http2Alpn, Http1)
}
