package io.sparkkinesis.sink

import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentHashMap, TimeUnit}

import scala.jdk.CollectionConverters._

import com.google.common.util.concurrent.{FutureCallback, Futures, MoreExecutors}
import io.sparkkinesis.config.{AwsClientConfig, ProducerSettings}
import io.sparkkinesis.credentials.{AwsCredentials, CredentialsConfig}
import org.slf4j.LoggerFactory
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider
import software.amazon.kinesis.producer.{
  DaemonException,
  KinesisProducer,
  KinesisProducerConfiguration,
  UserRecordFailedException,
  UserRecordResult
}

/** A [[RecordProducer]] over one Kinesis Producer Library instance (and its native child process). */
final class KplProducer(kpl: KinesisProducer) extends RecordProducer {
  @volatile private var dead = false

  /** Whether the native process is gone (it exits on a fatal error); the pool then starts a new producer. */
  def isDead: Boolean = dead

  override def add(streamName: String, record: SinkRecord, onOutcome: RecordOutcome => Unit): Unit = {
    val future = noticingDeath(
      kpl.addUserRecord(streamName, record.partitionKey, record.explicitHashKey, ByteBuffer.wrap(record.data))
    )
    Futures.addCallback(
      future,
      new FutureCallback[UserRecordResult] {
        override def onSuccess(result: UserRecordResult): Unit =
          if (result.isSuccessful) onOutcome(RecordOutcome.Acknowledged)
          else onOutcome(RecordOutcome.Failed(KplProducer.describe(result)))
        override def onFailure(error: Throwable): Unit =
          onOutcome(RecordOutcome.Failed(KplProducer.describe(error)))
      },
      MoreExecutors.directExecutor()
    )
  }

  override def outstandingRecords: Long = kpl.getOutstandingRecordsCount.toLong
  override def flush(): Unit = noticingDeath(kpl.flush())

  private def noticingDeath[T](call: => T): T =
    try call
    catch {
      case e: DaemonException =>
        dead = true
        throw e
    }

  /** Sends what is buffered, waits at most `timeoutMs` for it, then stops the native process. */
  def close(timeoutMs: Long): Unit =
    try {
      kpl.flush()
      val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
      while (kpl.getOutstandingRecordsCount > 0 && System.nanoTime() < deadline) Thread.sleep(50)
    } finally kpl.destroy()
}

object KplProducer {
  private val log = LoggerFactory.getLogger(classOf[KplProducer])

  /** Why a record failed: the KPL's error code and message of every attempt. */
  def describe(result: UserRecordResult): String = {
    val attempts = result.getAttempts.asScala
    val tried = attempts.zipWithIndex
      .map { case (a, i) =>
        val code = Option(a.getErrorCode).filter(_.nonEmpty).map(_ + ": ").getOrElse("")
        s"attempt ${i + 1}: $code${a.getErrorMessage} (${a.getDuration} ms)"
      }
    s"the Kinesis Producer Library gave up on it after ${attempts.size} attempt(s)" +
      (if (tried.isEmpty) "" else tried.mkString(" [", "; ", "]"))
  }

  def describe(error: Throwable): String = error match {
    case failed: UserRecordFailedException => describe(failed.getResult)
    case other =>
      s"the Kinesis Producer Library failed it: ${other.getClass.getSimpleName}: ${other.getMessage}"
  }

  /**
   * The KPL configuration for these settings. Pure apart from the credentials provider handed in.
   *
   * Records are placed by their partition key or explicit hash key until the KPL learns the stream's record
   * distribution strategy (DescribeStreamSummary). KPL 1.1.1's default (unset) drops the explicit hash key of the
   * rows it sends unaggregated before then, so they land on the partition key's shard instead.
   */
  def configuration(
      settings: ProducerSettings,
      credentials: AwsCredentialsProvider
  ): KinesisProducerConfiguration = {
    val config = new KinesisProducerConfiguration()
      .setRegion(settings.region)
      .setKinesisEndpoint(settings.endpointHost)
      .setKinesisPort(settings.endpointPort)
      .setVerifyCertificate(settings.verifyCertificate)
      .setRecordMaxBufferedTime(settings.recordMaxBufferedTimeMs)
      .setMaxConnections(settings.maxConnections)
      .setAggregationEnabled(settings.aggregationEnabled)
      .setAggregationMaxCount(settings.aggregationMaxCount)
      .setAggregationMaxSize(settings.aggregationMaxSize)
      .setRecordTtl(settings.recordTtlMs)
      .setRequestTimeout(settings.requestTimeoutMs)
      .setRateLimit(settings.rateLimit)
      .setMetricsLevel(settings.metricsLevel)
      .setThreadingModel(settings.threadingModel)
      .setLogLevel("warning")
      .setRecordDistributionStrategyDefault(
        KinesisProducerConfiguration.RecordDistributionStrategyDefault.USER_PARTITION_KEY
      )
      .setCredentialsProvider(credentials)
    settings.stsEndpoint.foreach { case (host, port) => config.setStsEndpoint(host).setStsPort(port) }
    config
  }

  /**
   * The credentials the producer signs with: the connector's one provider for these options (custom class, role,
   * static keys or the default chain), handed to the KPL as is. KPL 1.x sends them to its native process only over
   * its private pipe (before any other message, then every `CredentialsRefreshDelay`), never on its command line.
   */
  def credentialsFor(credentials: CredentialsConfig): AwsCredentialsProvider =
    AwsCredentials.provider(credentials)

  def credentialsFor(client: AwsClientConfig): AwsCredentialsProvider = credentialsFor(client.credentials)

  /** Starts a producer (and its native process). */
  def start(key: ProducerKey): KplProducer = {
    val settings = key.settings
    log.info(
      s"Starting a Kinesis producer for ${settings.endpointHost}:${settings.endpointPort} " +
        s"(region ${settings.region}, aggregation ${settings.aggregationEnabled}, ${key.credentials})"
    )
    new KplProducer(new KinesisProducer(configuration(settings, credentialsFor(key.credentials))))
  }
}

/**
 * What one pooled producer serves: its settings and where its credentials come from. Writes share a producer only
 * when both are equal, so a write never signs with another write's credentials. Equality compares every credential
 * option (secrets included); `toString` shows none of them ([[CredentialsConfig]] redacts).
 */
final case class ProducerKey(settings: ProducerSettings, credentials: CredentialsConfig)

object ProducerKey {

  def apply(settings: ProducerSettings, client: AwsClientConfig): ProducerKey =
    ProducerKey(settings, client.credentials)
}

/**
 * Live producers by key: hands out the one for a key, starting it on first use and again after its native process
 * died. Separate from [[ProducerPool]] so that its sharing rules can be tested without native processes.
 */
private[sink] final class ProducerCache[P](start: ProducerKey => P, isDead: P => Boolean, close: P => Unit) {
  private val log = LoggerFactory.getLogger(getClass)
  private val producers = new ConcurrentHashMap[ProducerKey, P]()

  def get(key: ProducerKey): P =
    producers.compute(
      key,
      (k, existing) =>
        if (existing != null && !isDead(existing)) existing
        else {
          if (existing != null) {
            log.warn("The Kinesis producer's native process has stopped; starting a new one")
            scala.util.Try(close(existing))
          }
          start(k)
        }
    )

  /** Removes every producer and hands each to `stop`. */
  def drain(stop: P => Unit): Unit =
    producers.keySet().asScala.toList.foreach(key => Option(producers.remove(key)).foreach(stop))
}

/**
 * One producer per executor JVM, [[ProducerSettings]] and credentials options, shared by all its tasks; every
 * producer is flushed and its native process stopped when the JVM shuts down.
 */
object ProducerPool {
  private val log = LoggerFactory.getLogger(getClass)
  private val producers = new ProducerCache[KplProducer](KplProducer.start, _.isDead, _.close(0))
  @volatile private var hookInstalled = false

  def get(settings: ProducerSettings, client: AwsClientConfig): KplProducer = {
    installShutdownHook()
    producers.get(ProducerKey(settings, client))
  }

  /** Flushes and stops every producer (at JVM shutdown; tests may call it too). */
  def closeAll(timeoutMs: Long = 10000L): Unit =
    producers.drain { producer =>
      try producer.close(timeoutMs)
      catch { case e: Exception => log.warn(s"Could not close a Kinesis producer cleanly: $e") }
    }

  private def installShutdownHook(): Unit = if (!hookInstalled) synchronized {
    if (!hookInstalled) {
      Runtime.getRuntime.addShutdownHook(new Thread(() => closeAll(), "spark-kinesis-producer-shutdown"))
      hookInstalled = true
    }
  }
}
