package io.sparkkinesis.sink

import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentHashMap, TimeUnit}

import scala.jdk.CollectionConverters._

import com.amazonaws.auth.{
  AWSCredentials,
  AWSCredentialsProvider,
  BasicAWSCredentials,
  BasicSessionCredentials
}
import com.amazonaws.services.kinesis.producer.{
  DaemonException,
  KinesisProducer,
  KinesisProducerConfiguration,
  UserRecordFailedException,
  UserRecordResult
}
import com.google.common.util.concurrent.{FutureCallback, Futures, MoreExecutors}
import io.sparkkinesis.config.{AwsClientConfig, ProducerSettings}
import io.sparkkinesis.credentials.AwsCredentials
import org.slf4j.LoggerFactory
import software.amazon.awssdk.auth.credentials.{AwsCredentialsProvider, AwsSessionCredentials}

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

  /** The KPL configuration for these settings. Pure apart from the credentials provider handed in. */
  def configuration(
      settings: ProducerSettings,
      credentials: AWSCredentialsProvider
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
      .setCredentialsProvider(credentials)
    settings.stsEndpoint.foreach { case (host, port) => config.setStsEndpoint(host).setStsPort(port) }
    config
  }

  /**
   * The credentials the sink's producer signs with: the one place to change when the sink takes the connector's
   * shared credentials options. Wrapped so that they never reach the native process's command line.
   */
  /** The connector's one credentials provider for these options (custom class, role, keys or default chain). */
  def credentialsFor(client: AwsClientConfig): AWSCredentialsProvider =
    new CommandLineSafeCredentials(AwsCredentials.provider(client.credentials))

  /** Starts a producer (and its native process). */
  def start(settings: ProducerSettings, client: AwsClientConfig): KplProducer = {
    log.info(
      s"Starting a Kinesis producer for ${settings.endpointHost}:${settings.endpointPort} " +
        s"(region ${settings.region}, aggregation ${settings.aggregationEnabled})"
    )
    new KplProducer(new KinesisProducer(configuration(settings, credentialsFor(client))))
  }
}

/**
 * Bridges SDK v2 credentials to the KPL (0.15.x takes SDK v1 providers), keeping secrets off the command line.
 *
 * The KPL starts its native process with the credentials hex-encoded in its arguments (`-k`, `-w`, readable by any
 * local user in /proc/PID/cmdline and logged at DEBUG), then sends them again over its private pipe right away and
 * every `CredentialsRefreshDelay`. Calls made while the KPL builds that command line get a placeholder; every other
 * call gets the real credentials, so the native process signs requests with the real ones from its first refresh.
 */
final class CommandLineSafeCredentials(delegate: AwsCredentialsProvider) extends AWSCredentialsProvider {

  override def getCredentials: AWSCredentials =
    if (CommandLineSafeCredentials.calledToBuildCommandLine()) CommandLineSafeCredentials.Placeholder
    else
      delegate.resolveCredentials() match {
        case session: AwsSessionCredentials =>
          new BasicSessionCredentials(session.accessKeyId, session.secretAccessKey, session.sessionToken)
        case plain => new BasicAWSCredentials(plain.accessKeyId, plain.secretAccessKey)
      }

  override def refresh(): Unit = ()

  override def toString: String = "CommandLineSafeCredentials"
}

object CommandLineSafeCredentials {
  val Placeholder: AWSCredentials = new BasicAWSCredentials("NOT_A_KEY_SEE_PIPE", "not-a-secret-see-pipe")

  /** Whether the KPL's `Daemon.startChildProcess` (which puts them on the command line) is asking. */
  private[sink] def calledToBuildCommandLine(): Boolean =
    StackWalker.getInstance().walk { frames =>
      frames
        .anyMatch(f => f.getMethodName == "startChildProcess" && f.getClassName.endsWith("producer.Daemon"))
    }
}

/**
 * One producer per executor JVM and [[ProducerSettings]], shared by all its tasks; every producer is flushed and
 * its native process stopped when the JVM shuts down.
 */
object ProducerPool {
  private val log = LoggerFactory.getLogger(getClass)
  private val producers = new ConcurrentHashMap[ProducerSettings, KplProducer]()
  @volatile private var hookInstalled = false

  def get(settings: ProducerSettings, client: AwsClientConfig): KplProducer = {
    installShutdownHook()
    producers.compute(
      settings,
      (s, existing) =>
        if (existing != null && !existing.isDead) existing
        else {
          if (existing != null) {
            log.warn("The Kinesis producer's native process has stopped; starting a new one")
            scala.util.Try(existing.close(0))
          }
          KplProducer.start(s, client)
        }
    )
  }

  /** Flushes and stops every producer (at JVM shutdown; tests may call it too). */
  def closeAll(timeoutMs: Long = 10000L): Unit =
    producers.keySet().asScala.toList.foreach { key =>
      Option(producers.remove(key)).foreach { producer =>
        try producer.close(timeoutMs)
        catch { case e: Exception => log.warn(s"Could not close a Kinesis producer cleanly: $e") }
      }
    }

  private def installShutdownHook(): Unit = if (!hookInstalled) synchronized {
    if (!hookInstalled) {
      Runtime.getRuntime.addShutdownHook(new Thread(() => closeAll(), "spark-kinesis-producer-shutdown"))
      hookInstalled = true
    }
  }
}
