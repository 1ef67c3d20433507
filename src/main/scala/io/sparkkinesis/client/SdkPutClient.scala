package io.sparkkinesis.client

import java.net.URI
import java.time.Duration
import java.util.concurrent.{CompletableFuture, CompletionException, ExecutionException}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config.{AwsClientConfig, HttpSettings}
import io.sparkkinesis.credentials.AwsCredentials
import software.amazon.awssdk.awscore.exception.AwsServiceException
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy
import software.amazon.awssdk.core.SdkBytes
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.http.SdkHttpConfigurationOption
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.kinesis.KinesisAsyncClient
import software.amazon.awssdk.services.kinesis.model.{StreamSummary => _, _}
import software.amazon.awssdk.utils.AttributeMap

/** One record of a PutRecords request. `partitionKey` may be null (a stream with service-managed distribution). */
private[sparkkinesis] final case class PutEntry(
    partitionKey: String,
    explicitHashKey: String,
    data: Array[Byte]
)

/** How one entry of a PutRecords request ended: the shard it landed on, or an error code (null when it landed). */
private[sparkkinesis] final case class PutResult(shardId: String, errorCode: String, errorMessage: String)

/**
 * A whole request failed; `code` is Kinesis' error code, or the client-side exception's class name, and `detail`
 * what it said.
 */
private[sparkkinesis] final class PutRequestFailed(
    val code: String,
    val detail: String,
    cause: Throwable = null
) extends RuntimeException(s"$code: $detail", cause)

/**
 * The calls of the in-JVM producer ([[io.sparkkinesis.sink.JvmProducer]]): PutRecords, asynchronously, and the
 * stream's shards. A stream parameter may be a name or an ARN.
 */
private[sparkkinesis] trait PutRecordsClient extends AutoCloseable {

  /** The results in the order of `entries`; a failed request fails the future with [[PutRequestFailed]]. */
  def putRecords(stream: String, entries: IndexedSeq[PutEntry]): CompletableFuture[IndexedSeq[PutResult]]

  /** The stream's shards, every page: only the open ones (ListShards' `AT_LATEST` filter) when `openOnly`. */
  def listShards(stream: String, openOnly: Boolean): Seq[ShardDescription]
}

/**
 * [[PutRecordsClient]] over the AWS SDK's Netty async client, with the connector's credentials, endpoint, proxy and
 * connect timeout (as the source's clients have them), `maxConcurrency` connections, each call bounded by
 * `requestTimeoutMs`. The SDK does not retry: the producer retries each record, with the connector's back-off, until
 * its TTL. With `trustAllCertificates`, any TLS certificate is accepted (`kinesis.sink.verifyCertificate=false`).
 */
private[sparkkinesis] final class SdkPutClient(
    config: AwsClientConfig,
    maxConcurrency: Int,
    requestTimeoutMs: Long,
    trustAllCertificates: Boolean
) extends PutRecordsClient {

  private val credentials = AwsCredentials.acquire(config.credentials)

  private val sdk: KinesisAsyncClient = credentials.closeIfFails { provider =>
    val defaults =
      if (trustAllCertificates)
        AttributeMap
          .builder()
          .put(SdkHttpConfigurationOption.TRUST_ALL_CERTIFICATES, java.lang.Boolean.TRUE)
          .build()
      else AttributeMap.empty()
    val http = HttpSettings
      .netty(NettyNioAsyncHttpClient.builder(), config.network)
      .maxConcurrency(Int.box(maxConcurrency))
      // Netty's own 30 s read and write timeouts would cut a large request (10 MiB) that the request timeout allows.
      .readTimeout(Duration.ofMillis(requestTimeoutMs))
      .writeTimeout(Duration.ofMillis(requestTimeoutMs))
      .buildWithDefaults(defaults)
    KinesisAsyncClient
      .builder()
      .region(Region.of(config.region))
      .endpointOverride(URI.create(config.endpointUrl))
      .credentialsProvider(provider)
      .httpClient(http)
      .overrideConfiguration(
        ClientOverrideConfiguration
          .builder()
          .retryStrategy(AwsRetryStrategy.doNotRetry())
          .apiCallTimeout(Duration.ofMillis(requestTimeoutMs))
          .build()
      )
      .build()
  }

  private def isArn(stream: String) = stream.startsWith("arn:")

  def putRecords(stream: String, entries: IndexedSeq[PutEntry]): CompletableFuture[IndexedSeq[PutResult]] = {
    val records = entries.map { e =>
      PutRecordsRequestEntry
        .builder()
        .partitionKey(e.partitionKey)
        .explicitHashKey(e.explicitHashKey)
        .data(SdkBytes.fromByteArrayUnsafe(e.data))
        .build()
    }
    val request = PutRecordsRequest.builder().records(records.asJava)
    if (isArn(stream)) request.streamARN(stream) else request.streamName(stream)
    val answer = new CompletableFuture[IndexedSeq[PutResult]]()
    sdk
      .putRecords(request.build())
      .whenComplete { (response: PutRecordsResponse, error: Throwable) =>
        if (error != null) answer.completeExceptionally(SdkPutClient.failed(error, config))
        else
          answer.complete(response.records().asScala.toVector.map { r =>
            PutResult(r.shardId(), r.errorCode(), r.errorMessage())
          })
        ()
      }
    answer
  }

  def listShards(stream: String, openOnly: Boolean): Seq[ShardDescription] = {
    val shards = Vector.newBuilder[ShardDescription]
    var token: String = null
    do {
      val request = ListShardsRequest.builder()
      if (token != null) request.nextToken(token)
      else {
        if (openOnly) request.shardFilter(ShardFilter.builder().`type`(ShardFilterType.AT_LATEST).build())
        if (isArn(stream)) request.streamARN(stream) else request.streamName(stream)
      }
      val page =
        try sdk.listShards(request.build()).get()
        catch { case e: ExecutionException => throw SdkPutClient.failed(e, config) }
      shards ++= page.shards().asScala.map(SdkModel.shard)
      token = page.nextToken()
    } while (token != null)
    shards.result()
  }

  def close(): Unit =
    try sdk.close()
    finally credentials.close()
}

private[sparkkinesis] object SdkPutClient {

  /** A failed call as [[PutRequestFailed]]: Kinesis' error code, or the client-side exception's class. */
  def failed(error: Throwable, config: AwsClientConfig): Throwable = {
    val cause = error match {
      case e @ (_: CompletionException | _: ExecutionException) if e.getCause != null => e.getCause
      case e => e
    }
    cause match {
      case e if ProxyErrors.isRefusal(e, config.network) => ProxyErrors.refused(config.network, e)
      case e: AwsServiceException if e.awsErrorDetails() != null =>
        new PutRequestFailed(e.awsErrorDetails().errorCode(), e.awsErrorDetails().errorMessage(), e)
      case e => new PutRequestFailed(e.getClass.getSimpleName, String.valueOf(e.getMessage), e)
    }
  }
}
