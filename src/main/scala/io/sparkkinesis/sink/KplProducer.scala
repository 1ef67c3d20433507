package io.sparkkinesis.sink

import java.nio.ByteBuffer
import java.util.concurrent.TimeUnit

import scala.jdk.CollectionConverters._

import scala.util.control.NonFatal

import com.google.common.util.concurrent.{FutureCallback, Futures, MoreExecutors}
import io.sparkkinesis.config._
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.errors.{KinesisErrors, KinesisRuntimeException}
import io.sparkkinesis.resources.{Lease, SharedResources}
import org.slf4j.LoggerFactory
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider
import software.amazon.kinesis.producer._

/**
 * A [[RecordProducer]] over one Kinesis Producer Library instance (and its native child process), holding a lease on
 * the credentials it signs with until it is closed.
 */
private[sparkkinesis] final class KplProducer(kpl: KinesisProducer, credentials: AutoCloseable)
    extends RecordProducer {
  @volatile private var dead = false
  // Whether the native process has answered for a record: a process that dies before it ever did could not start.
  @volatile private var answered = false

  /** Whether the native process is gone (it exits on a fatal error); the pool then starts a new producer. */
  def isDead: Boolean = dead

  override def add(streamName: String, record: SinkRecord, onOutcome: RecordOutcome => Unit): Unit = {
    val data = ByteBuffer.wrap(record.data)
    val future =
      try noticingDeath(kpl.addUserRecord(streamName, record.partitionKey, record.explicitHashKey, data))
      catch {
        // A row without a partition key, for a stream that the KPL found placing records by partition key since the
        // write started (it was switched away from service-managed distribution).
        case e: IllegalArgumentException if record.partitionKey == null =>
          onOutcome(
            RecordOutcome.Failed(
              s"it has no partition key, and the Kinesis Producer Library found that stream $streamName now places " +
                s"records by partition key (${e.getMessage}); give every row a partition key"
            )
          )
          return
      }
    Futures.addCallback(
      future,
      new FutureCallback[UserRecordResult] {
        override def onSuccess(result: UserRecordResult): Unit = {
          answered = true
          if (result.isSuccessful) onOutcome(RecordOutcome.Acknowledged)
          else onOutcome(RecordOutcome.Failed(KplProducer.describe(result)))
        }
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
    catch { case e: DaemonException => dead = true; throw (if (answered) e else KplProducer.startFailed(e)) }

  /** Sends what is buffered, waits at most `timeoutMs` for it, then stops the native process (at once if it died). */
  def close(timeoutMs: Long): Unit =
    try
      if (!dead) {
        kpl.flush()
        val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
        while (kpl.getOutstandingRecordsCount > 0 && System.nanoTime() < deadline) Thread.sleep(50)
      }
    finally
      try kpl.destroy()
      finally credentials.close()
}

private[sparkkinesis] object KplProducer {
  private val log = LoggerFactory.getLogger(classOf[KplProducer])

  /** This JVM's platform, as the KPL's binaries are told apart: OS, architecture, and a musl libc on Linux. */
  def platform: String = {
    val os = sys.props.getOrElse("os.name", "unknown OS")
    val arch = sys.props.getOrElse("os.arch", "")
    val musl = os.toLowerCase(java.util.Locale.ROOT).contains("linux") &&
      Option(new java.io.File("/lib").list()).exists(_.exists(_.startsWith("ld-musl")))
    s"$os $arch".trim + (if (musl) " with musl libc" else "")
  }

  /** KINESIS_SINK_PRODUCER_START_FAILED for why the native process could not start (`cause`, kept as the cause). */
  def startFailed(cause: Throwable): KinesisRuntimeException = {
    val error = KinesisErrors.sinkProducerStartFailed(
      platform,
      sys.props.getOrElse("java.io.tmpdir", "(java.io.tmpdir unset)"),
      s"${cause.getClass.getSimpleName}: ${cause.getMessage}"
    )
    error.initCause(cause)
    error
  }

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
   * The KPL configuration for these settings; pure apart from the credentials provider handed in. The KPL starts from
   * the record distribution strategy the driver read ([[TargetStreamCheck]]): left unset, KPL 1.1.1 would drop the
   * explicit hash key of the rows it sends unaggregated until it has detected the strategy itself, which it can only
   * do when it may call DescribeStreamSummary.
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
      // The stream's record size limit (MaxRecordSizeInKiB): rows up to it are taken, and no aggregate exceeds it.
      .setMaxUserRecordSize(settings.maxRecordBytes)
      .setAggregationMaxSize(math.min(settings.aggregationMaxSize, settings.maxRecordBytes))
      .setRecordTtl(settings.recordTtlMs)
      .setRequestTimeout(settings.requestTimeoutMs)
      .setRateLimit(settings.rateLimit)
      .setMetricsLevel(settings.metricsLevel.name)
      .setThreadingModel(settings.threadingModel.name)
      .setLogLevel("warning")
      .setRecordDistributionStrategyDefault(
        if (settings.serviceManagedDistribution)
          KinesisProducerConfiguration.RecordDistributionStrategyDefault.AUTO
        else KinesisProducerConfiguration.RecordDistributionStrategyDefault.USER_PARTITION_KEY
      )
      .setCredentialsProvider(credentials)
    settings.stsEndpoint.foreach { case (host, port) => config.setStsEndpoint(host).setStsPort(port) }
    settings.proxy.foreach { p =>
      // Never the password: the KPL puts its configuration on the native process's command line (see ProxyRelay).
      config.setProxyHost(p.host).setProxyPort(p.port.toLong)
      if (p.password.isEmpty) p.username.foreach(config.setProxyUserName)
    }
    config
  }

  /**
   * The settings the KPL is given: with a proxy password, the proxy is a loopback [[ProxyRelay]] (started here, to
   * be closed with the producer) that adds the credentials, so that they never reach the native process.
   */
  private[sink] def withRelay(settings: ProducerSettings): (ProducerSettings, Option[ProxyRelay]) =
    settings.proxy.filter(_.password.isDefined) match {
      case None => (settings, None)
      case Some(upstream) =>
        val targets = Set(s"${settings.endpointHost}:${settings.endpointPort}") ++
          settings.stsEndpoint.map { case (h, p) => s"$h:$p" } ++
          (if (settings.metricsLevel == MetricsLevel.NoMetrics) Nil
           else Seq("com", "com.cn").map(tld => s"monitoring.${settings.region}.amazonaws.$tld:443"))
        val relay = new ProxyRelay(upstream, targets)
        log.info(
          s"The producer's proxy is ${upstream.host}:${upstream.port}, reached through a loopback relay on port " +
            s"${relay.port} that adds the proxy credentials (they never reach the KPL's native process)"
        )
        (settings.copy(proxy = Some(ProxyConfig("127.0.0.1", relay.port, None, None))), Some(relay))
    }

  /** Starts a producer (and its native process). */
  def start(key: ProducerKey): KplProducer = {
    val settings = key.settings
    log.info(
      s"Starting a Kinesis producer for ${settings.endpointHost}:${settings.endpointPort} " +
        s"(region ${settings.region}, aggregation ${settings.aggregationEnabled}, record distribution " +
        s"${if (settings.serviceManagedDistribution) "AUTO" else "USER_PARTITION_KEY"}, ${key.credentials})"
    )
    // A lease on the connector's one provider for these options, handed to the KPL as is: KPL 1.x sends credentials
    // to its native process only over its private pipe, never on its command line.
    val credentials = AwsCredentials.acquire(key.credentials)
    credentials.closeIfFails { c =>
      val (given, relay) = withRelay(settings)
      // The producer closes both: its credentials lease, then the relay its native process talks through.
      val resources: AutoCloseable = () =>
        try credentials.close()
        finally relay.foreach(_.close())
      // Options were checked on the driver: the KinesisProducer constructor fails when its process cannot start.
      try new KplProducer(new KinesisProducer(configuration(given, c)), resources)
      catch {
        case NonFatal(e) => relay.foreach(_.close()); throw startFailed(e)
        case e: Throwable => relay.foreach(_.close()); throw e
      }
    }
  }
}

/**
 * What one pooled producer serves: its settings and where its credentials come from. Writes share a producer only
 * when both are equal, so a write never signs with another write's credentials. Equality compares every credential
 * option (secrets included); `toString` shows none of them ([[CredentialsConfig]] redacts).
 */
private[sparkkinesis] final case class ProducerKey(settings: ProducerSettings, credentials: CredentialsConfig)

/**
 * One producer per executor JVM and key, shared by the tasks that lease it; flushed and stopped once no lease has
 * been held for the idle grace period ([[SharedResources]]), and when the JVM shuts down. A producer that died (the
 * KPL's native process, the in-JVM producer's sender thread) is replaced by the next lease. `kinesis.sink.producer`
 * picks the kind: the KPL's are keyed by [[ProducerKey]], the in-JVM producer's by settings and every client option
 * (its SDK client is built from them, as the source's clients are).
 */
private[sparkkinesis] object ProducerPool {

  /** How long closing a producer waits for its buffered records to be sent. */
  val CloseTimeoutMs = 10000L

  private val producers =
    new SharedResources[ProducerKey, KplProducer](
      "Kinesis producer",
      KplProducer.start,
      _.close(CloseTimeoutMs),
      _.isDead
    )

  private val jvmProducers =
    new SharedResources[(ProducerSettings, AwsClientConfig), JvmProducer](
      "in-JVM Kinesis producer",
      { case (settings, client) => JvmProducer.start(settings, client) },
      _.close(CloseTimeoutMs),
      _.isDead
    )

  def acquire(settings: ProducerSettings, client: AwsClientConfig): Lease[RecordProducer] =
    settings.producer match {
      case ProducerKind.Kpl => producers.acquire(ProducerKey(settings, client.credentials))
      case ProducerKind.Java => jvmProducers.acquire((settings, client))
    }

  /** Flushes and stops every producer, leased or not (what the JVM's shutdown does; tests may call it too). */
  def closeAll(): Unit =
    try producers.closeAll()
    finally jvmProducers.closeAll()
}
