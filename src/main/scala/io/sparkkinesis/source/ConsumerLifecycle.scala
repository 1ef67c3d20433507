package io.sparkkinesis.source

import io.sparkkinesis.client.{
  Backoff,
  ConsumerAlreadyExists,
  ConsumerLimitExceeded,
  StreamConsumer,
  StreamConsumerClient
}
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory

/**
 * The enhanced fan-out consumer of one query, on the driver: looked up, registered when absent, reused when present,
 * awaited until ACTIVE; deregistered when the query stops unless it is to be kept.
 *
 * Kinesis allows 5 consumers CREATING per account at once and a few control-plane calls per second per stream, so
 * every wait backs off from `baseDelayMs` to `maxDelayMs` with jitter; a refused registration (LimitExceeded) is
 * retried the same way until `timeoutMs` (here only: the client does not retry it). Other failures of the calls are
 * the client's to retry, and end `activate`.
 */
private[sparkkinesis] final class ConsumerLifecycle(
    client: StreamConsumerClient,
    streamArn: String,
    consumerName: String,
    deregisterOnStop: Boolean,
    timeoutMs: Long = 5 * 60 * 1000L,
    baseDelayMs: Long = 250L,
    maxDelayMs: Long = 5000L,
    sleep: Long => Unit = Thread.sleep,
    nowMillis: () => Long = () => System.currentTimeMillis()
) {
  private val log = LoggerFactory.getLogger(classOf[ConsumerLifecycle])
  private val backoff = Backoff(baseDelayMs, maxDelayMs)

  /** Set once `activate` registered the consumer itself (rather than reusing one). */
  var registered = false

  /** The ARN of the ACTIVE consumer. */
  def activate(): String = {
    val deadline = nowMillis() + timeoutMs
    var attempt = 0
    var last = "not looked up yet"
    while (nowMillis() < deadline) {
      val state = client.describeConsumer(streamArn, consumerName)
      state match {
        case Some(StreamConsumer(_, arn, "ACTIVE")) =>
          if (!registered) log.info(s"Reusing the enhanced fan-out consumer $consumerName ($arn)")
          return arn
        case Some(StreamConsumer(_, _, status)) =>
          last = s"the consumer is $status"
        case None =>
          try {
            val c = client.registerConsumer(streamArn, consumerName)
            registered = true
            log.info(s"Registered the enhanced fan-out consumer $consumerName (${c.arn}) on $streamArn")
            last = s"the consumer is ${c.status}"
          } catch {
            case e: ConsumerLimitExceeded => last = s"registration refused for now: ${e.getMessage}"
            case _: ConsumerAlreadyExists => last = "another client registered it at the same time"
          }
      }
      attempt += 1
      sleep(backoff.delayMs(attempt))
    }
    throw KinesisErrors.consumerNotActive(consumerName, streamArn, timeoutMs / 1000, last)
  }

  /** On the query's stop: deregisters the consumer unless it is to be kept. Never throws. */
  def release(): Unit =
    if (deregisterOnStop) {
      try {
        client.deregisterConsumer(streamArn, consumerName)
        log.info(s"Deregistered the enhanced fan-out consumer $consumerName of $streamArn")
      } catch {
        case e: Exception =>
          log.warn(s"Could not deregister the enhanced fan-out consumer $consumerName of $streamArn: $e")
      }
    }
}
