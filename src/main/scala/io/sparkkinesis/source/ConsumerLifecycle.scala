package io.sparkkinesis.source

import io.sparkkinesis.client._
import io.sparkkinesis.config.{EfoConfig, KinesisOptions, SourceConfig}
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory

/**
 * The enhanced fan-out consumer of one query and stream, on the driver: looked up, registered (with `tags`) when
 * absent, reused when present, awaited until ACTIVE; deregistered when the query stops unless it is to be kept.
 * Kinesis allows 5 consumers CREATING per account and few control-plane calls per second, so every wait backs off
 * from `baseDelayMs` to `maxDelayMs` with jitter, and a refused registration (LimitExceeded) is retried the same way
 * until `timeoutMs`. Other failures are the client's to retry, and end `activate`.
 */
private[sparkkinesis] final class ConsumerLifecycle(
    client: StreamConsumerClient,
    streamArn: String,
    consumerName: String,
    deregisterOnStop: Boolean,
    tags: Map[String, String] = Map.empty,
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
      client.describeConsumer(streamArn, consumerName) match {
        case Some(StreamConsumer(_, arn, "ACTIVE")) =>
          if (!registered) log.info(s"Reusing the enhanced fan-out consumer $consumerName ($arn)")
          return arn
        case Some(StreamConsumer(_, _, status)) => last = s"the consumer is $status"
        case None =>
          try {
            val c = client.registerConsumer(streamArn, consumerName, tags)
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
    if (deregisterOnStop)
      try {
        client.deregisterConsumer(streamArn, consumerName)
        log.info(s"Deregistered the enhanced fan-out consumer $consumerName of $streamArn")
      } catch {
        case e: Exception =>
          log.warn(s"Could not deregister the enhanced fan-out consumer $consumerName of $streamArn: $e")
      }
}

/**
 * The enhanced fan-out consumers of one query, one per stream read (stream as requests name it -> consumer ARN):
 * registered by name on every stream ([[ConsumerLifecycle]], all at once), or given by ARN (`kinesis.consumerArn`),
 * in which case no consumer call is made at all, neither now nor on `release`.
 */
private[sparkkinesis] final class StreamConsumers(
    lifecycles: Map[String, ConsumerLifecycle],
    given: Map[String, String]
) {

  /** Every stream's ACTIVE consumer ARN; registrations (minutes each on AWS) wait in parallel, on their own threads. */
  def activate(): Map[String, String] =
    given ++ DriverThreads.inParallel(lifecycles.toSeq) { case (stream, l) => stream -> l.activate() }

  def release(): Unit = lifecycles.values.foreach(_.release())
}

private[sparkkinesis] object StreamConsumers {

  /**
   * The consumers of `config`'s streams, whose ARNs Kinesis answered in `arns` (stream name -> ARN). A consumer
   * given by ARN must belong to the stream read, account and region included.
   */
  def of(config: SourceConfig, efo: EfoConfig, client: StreamConsumerClient, arns: Map[String, String]) =
    new StreamConsumers(
      efo.consumerName.toSeq.flatMap { name =>
        config.streamNames.map { s =>
          val lifecycle = new ConsumerLifecycle(client, arns(s), name, efo.deregisterOnStop, efo.tags)
          config.streamId(s) -> lifecycle
        }
      }.toMap,
      efo.consumerArns.map { case (s, arn) =>
        val ofConsumer = SourceConfig.streamArnOf(arn)
        if (ofConsumer != arns(s))
          throw KinesisErrors.badValue(
            KinesisOptions.ConsumerArn.fullKey,
            arn,
            s"it is a consumer of $ofConsumer, but the stream '$s' read is ${arns(s)}; give a " +
              s"consumer of that stream (or name the stream by ${KinesisOptions.StreamArn.fullKey})"
          )
        config.streamId(s) -> arn
      }
    )
}
