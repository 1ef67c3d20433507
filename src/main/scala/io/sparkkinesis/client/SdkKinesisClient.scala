package io.sparkkinesis.client

import java.net.URI

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config.{AwsClientConfig, HttpSettings, NetworkConfig}
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.resources.{Lease, SharedResources}
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.core.exception.{AbortedException, SdkException, SdkInterruptedException}
import software.amazon.awssdk.http.{SdkHttpClient, SdkHttpConfigurationOption}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration
import software.amazon.awssdk.core.SdkPlugin
import software.amazon.awssdk.retries.api._
import software.amazon.awssdk.services.kinesis.KinesisClient
import software.amazon.awssdk.services.kinesis.model.{StreamSummary => _, _}
import software.amazon.awssdk.utils.AttributeMap

/**
 * The AWS SDK behind both client traits. Shared by everything in a JVM that uses one configuration (see
 * [[KinesisClientCache]]); holds a lease on its credentials provider until it is closed. `trustAllCertificates`
 * accepts any TLS certificate: only for the sink's own check of its stream, which talks to the endpoint the KPL
 * does, as `kinesis.sink.verifyCertificate=false` allows it to.
 */
private[sparkkinesis] final class SdkKinesisClient(
    config: AwsClientConfig,
    trustAllCertificates: Boolean = false
) extends ShardRecordsClient
    with StreamMetadataClient
    with StreamConsumerClient {

  private val credentials = AwsCredentials.acquire(config.credentials)

  // The SDK retries failed requests (5xx, I/O errors, control-plane rate limits) up to `numRetries` times.
  private val retry: RetryStrategy = HttpSettings
    .standardRetries(config.numRetries, config.retryBaseDelayMs, config.retryMaxDelayMs)
    // Kinesis answers control-plane rate limits (ListShards, DescribeStreamSummary, ...) with
    // LimitExceededException, which the SDK's standard strategy does not retry on its own.
    .retryOnExceptionInstanceOf(classOf[LimitExceededException])
    .build()

  private val sdk: KinesisClient =
    KinesisClient
      .builder()
      .region(Region.of(config.region))
      .endpointOverride(URI.create(config.endpointUrl))
      .credentialsProvider(credentials.value)
      .httpClientBuilder(new SdkKinesisClient.ApacheHttp(config.network, trustAllCertificates))
      .overrideConfiguration(
        HttpSettings
          .apiCallAttemptTimeout(ClientOverrideConfiguration.builder().retryStrategy(retry), config.network)
          .build()
      )
      .build()

  /**
   * The same client for the shard readers, whose GetRecords and GetShardIterator requests the SDK does not retry
   * when Kinesis throttles them: the reader does (a fetcher waits, and [[io.sparkkinesis.reader.ShardReader]]
   * decides whether to fetch again or to end the batch), so a throttled read is retried at that one level. Their
   * other failures the SDK retries as usual.
   */
  val forReaders: ShardRecordsClient = new ShardRecordsClient {
    private val plugin = SdkKinesisClient.notRetried(retry, "the reader retries throttled reads")(
      _.isInstanceOf[ProvisionedThroughputExceededException]
    )
    def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String =
      shardIterator(streamName, shardId, start, Some(plugin))
    def getRecords(iterator: String, limit: Int): RecordsResponse = records(iterator, limit, Some(plugin))
    def close(): Unit = ()
  }

  def getShardIterator(streamName: String, shardId: String, start: IteratorStart): String =
    shardIterator(streamName, shardId, start, None)

  def getRecords(iterator: String, limit: Int): RecordsResponse = records(iterator, limit, None)

  private def shardIterator(
      streamName: String,
      shardId: String,
      start: IteratorStart,
      plugin: Option[SdkPlugin]
  ): String = {
    val named = GetShardIteratorRequest.builder().shardId(shardId)
    plugin.foreach(p =>
      named.overrideConfiguration((o: AwsRequestOverrideConfiguration.Builder) => o.addPlugin(p))
    )
    val base = if (isArn(streamName)) named.streamARN(streamName) else named.streamName(streamName)
    val from = SdkModel.start(start)
    val typed = base.shardIteratorType(from.kind)
    from.sequenceNumber.foreach(typed.startingSequenceNumber)
    from.timestamp.foreach(typed.timestamp)
    translate(s"GetShardIterator($streamName/$shardId)")(sdk.getShardIterator(typed.build()).shardIterator())
  }

  private def records(iterator: String, limit: Int, plugin: Option[SdkPlugin]): RecordsResponse = {
    val request = GetRecordsRequest.builder().shardIterator(iterator).limit(limit)
    plugin.foreach(p =>
      request.overrideConfiguration((o: AwsRequestOverrideConfiguration.Builder) => o.addPlugin(p))
    )
    val response = translate("GetRecords")(sdk.getRecords(request.build()))
    RecordsResponse(
      SdkModel.records(response.records()),
      Option(response.nextShardIterator()),
      Option(response.millisBehindLatest()).map(_.longValue()),
      SdkModel.childShards(response.hasChildShards, response.childShards())
    )
  }

  def describeStream(streamName: String): StreamSummary = {
    val response = translate(s"DescribeStreamSummary($streamName)") {
      val request = DescribeStreamSummaryRequest.builder()
      sdk.describeStreamSummary(
        (if (isArn(streamName)) request.streamARN(streamName) else request.streamName(streamName)).build()
      )
    }
    val d = response.streamDescriptionSummary()
    val served = response.sdkHttpResponse().firstMatchingHeader("Date")
    StreamSummary(
      d.streamName(),
      d.streamARN(),
      d.streamStatusAsString(),
      d.retentionPeriodHours(),
      if (served.isPresent) StreamSummary.httpDateMillis(served.get) else None,
      recordDistribution = Option(d.recordDistributionStrategyAsString()),
      createdAt = Option(d.streamCreationTimestamp()),
      maxRecordSizeKiB = Option(d.maxRecordSizeInKiB()).map(_.intValue())
    )
  }

  def listShardsPage(streamName: String, nextToken: Option[String]): ShardPage =
    shardPage(streamName, nextToken, None)

  override def listShardsPageAfter(streamName: String, shardId: String): ShardPage =
    shardPage(streamName, None, Some(shardId))

  private def shardPage(streamName: String, nextToken: Option[String], after: Option[String]): ShardPage = {
    val request = nextToken match {
      case Some(token) => ListShardsRequest.builder().nextToken(token).build()
      case None =>
        val first = ListShardsRequest.builder()
        after.foreach(id =>
          first.shardFilter(ShardFilter.builder().`type`(ShardFilterType.AFTER_SHARD_ID).shardId(id).build())
        )
        if (isArn(streamName)) first.streamARN(streamName).build() else first.streamName(streamName).build()
    }
    val page = translate(s"ListShards($streamName)")(sdk.listShards(request))
    ShardPage(page.shards().asScala.toVector.map(SdkModel.shard), Option(page.nextToken()))
  }

  /** Stream parameters may be a name or an ARN (`kinesis.streamArn`); requests then name the stream by ARN. */
  private def isArn(stream: String): Boolean = stream.startsWith("arn:")

  def describeConsumer(streamArn: String, consumerName: String): Option[StreamConsumer] =
    try {
      val d = consumerCall(s"DescribeStreamConsumer($consumerName)") {
        sdk.describeStreamConsumer(
          DescribeStreamConsumerRequest.builder().streamARN(streamArn).consumerName(consumerName).build()
        )
      }.consumerDescription()
      Some(StreamConsumer(d.consumerName(), d.consumerARN(), d.consumerStatusAsString()))
    } catch { case _: ResourceNotFoundException => None }

  // A refused registration (LimitExceeded: too many consumers CREATING in the account) takes tens of seconds to
  // clear, longer than the SDK's retries wait: the caller retries it (ConsumerLifecycle, until its deadline), so the
  // SDK does not. Its other failures the SDK retries as usual.
  private val registrationRefusalsNotRetried =
    SdkKinesisClient.notRetried(retry, "the caller retries a refused registration")(
      _.isInstanceOf[LimitExceededException]
    )

  def registerConsumer(streamArn: String, consumerName: String, tags: Map[String, String]): StreamConsumer = {
    val request = RegisterStreamConsumerRequest.builder().streamARN(streamArn).consumerName(consumerName)
    request.tags(if (tags.isEmpty) null else tags.asJava)
    request.overrideConfiguration((o: AwsRequestOverrideConfiguration.Builder) =>
      o.addPlugin(registrationRefusalsNotRetried)
    )
    val c = consumerCall(s"RegisterStreamConsumer($consumerName)")(
      sdk.registerStreamConsumer(request.build())
    ).consumer()
    StreamConsumer(c.consumerName(), c.consumerARN(), c.consumerStatusAsString())
  }

  def deregisterConsumer(streamArn: String, consumerName: String): Unit =
    try
      consumerCall(s"DeregisterStreamConsumer($consumerName)") {
        sdk.deregisterStreamConsumer(
          DeregisterStreamConsumerRequest.builder().streamARN(streamArn).consumerName(consumerName).build()
        )
      }
    catch { case _: ResourceNotFoundException => () }

  /** The tags of a consumer (ListTagsForResource; the `spark-kinesis consumers` command shows them). */
  def consumerTags(consumerArn: String): Map[String, String] =
    sdk
      .listTagsForResource(ListTagsForResourceRequest.builder().resourceARN(consumerArn).build())
      .tags()
      .asScala
      .map(t => t.key() -> Option(t.value()).getOrElse(""))
      .toMap

  def listConsumers(streamArn: String): Seq[StreamConsumer] = {
    val request = ListStreamConsumersRequest.builder().streamARN(streamArn).build()
    consumerCall("ListStreamConsumers") {
      sdk.listStreamConsumersPaginator(request).asScala.toList.flatMap(_.consumers().asScala)
    }.map(c => StreamConsumer(c.consumerName(), c.consumerARN(), c.consumerStatusAsString()))
  }

  private def consumerCall[T](what: String)(call: => T): T =
    try call
    catch {
      case e: LimitExceededException =>
        throw new ConsumerLimitExceeded(s"$what: ${e.awsErrorDetails().errorMessage()}", e)
      case e: ResourceInUseException =>
        throw new ConsumerAlreadyExists(s"$what: ${e.awsErrorDetails().errorMessage()}", e)
    }

  private def translate[T](what: String)(call: => T): T =
    try call
    catch {
      case e: ProvisionedThroughputExceededException =>
        throw new ThroughputExceeded(s"$what was throttled", e)
      case e: ExpiredIteratorException => throw new IteratorExpired(s"$what: the shard iterator expired", e)
      case e: ResourceNotFoundException =>
        throw new ShardNotFound(s"$what: ${e.awsErrorDetails().errorMessage()}", e)
      // The calling thread was interrupted (a query or task being stopped): report it as an interruption, which
      // Spark treats as a normal stop rather than a failure.
      case e @ (_: AbortedException | _: SdkInterruptedException) =>
        throw new InterruptedException(s"$what was interrupted").initCause(e)
      case e: SdkException if ProxyErrors.isRefusal(e, config.network) =>
        throw ProxyErrors.refused(config.network, e)
    }

  def close(): Unit = try sdk.close()
  finally credentials.close()
}

private[sparkkinesis] object SdkKinesisClient {

  /** A request plugin: the client's retry strategy, except for failures the caller retries (`retriedAbove`). */
  private def notRetried(retry: RetryStrategy, reason: String)(
      retriedAbove: Throwable => Boolean
  ): SdkPlugin = {
    val strategy = new RetryStrategy {
      def acquireInitialToken(request: AcquireInitialTokenRequest): AcquireInitialTokenResponse =
        retry.acquireInitialToken(request)
      def refreshRetryToken(request: RefreshRetryTokenRequest): RefreshRetryTokenResponse =
        if (retriedAbove(request.failure()))
          throw new TokenAcquisitionFailedException(reason, request.token(), request.failure())
        else retry.refreshRetryToken(request)
      def recordSuccess(request: RecordSuccessRequest): RecordSuccessResponse = retry.recordSuccess(request)
      def maxAttempts(): Int = retry.maxAttempts()
      // Complete as it is: the SDK adds its defaults only to a strategy that asks for them (useClientDefaults).
      def toBuilder(): RetryStrategy.Builder[_, _] = retry.toBuilder
      override def useClientDefaults(): Boolean = false
    }
    config =>
      config.overrideConfiguration(config.overrideConfiguration().toBuilder.retryStrategy(strategy).build())
  }

  /** Apache HTTP per the network options (timeouts, connections, proxy); `trustAll` accepts any certificate. */
  private final class ApacheHttp(network: NetworkConfig, trustAll: Boolean)
      extends SdkHttpClient.Builder[ApacheHttp] {

    override def buildWithDefaults(defaults: AttributeMap): SdkHttpClient = {
      val settings =
        if (trustAll)
          defaults.toBuilder
            .put(SdkHttpConfigurationOption.TRUST_ALL_CERTIFICATES, java.lang.Boolean.TRUE)
            .build()
        else defaults
      HttpSettings.apache(network).buildWithDefaults(settings)
    }
  }
}

/**
 * One client per configuration in a JVM, shared by the driver's streams and the executor's tasks that lease it, and
 * closed once no lease has been held for the idle grace period ([[SharedResources]]) or when the JVM exits.
 */
private[sparkkinesis] object KinesisClientCache {

  private val clients = new SharedResources[AwsClientConfig, SdkKinesisClient](
    "Kinesis client",
    new SdkKinesisClient(_),
    _.close()
  )

  def acquire(config: AwsClientConfig): Lease[SdkKinesisClient] = clients.acquire(config)
}
