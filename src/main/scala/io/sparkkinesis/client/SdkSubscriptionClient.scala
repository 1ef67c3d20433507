package io.sparkkinesis.client

import java.net.URI
import java.time.Duration

import io.sparkkinesis.config.{AwsClientConfig, HttpProtocol}
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.resources.{Lease, SharedResources}
import org.reactivestreams.{Subscriber, Subscription}
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.http.{Protocol, ProtocolNegotiation}
import software.amazon.awssdk.http.nio.netty.{Http2Configuration, NettyNioAsyncHttpClient}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.kinesis.KinesisAsyncClient
import software.amazon.awssdk.services.kinesis.model.{
  StartingPosition,
  SubscribeToShardEvent,
  SubscribeToShardEventStream,
  SubscribeToShardRequest,
  SubscribeToShardResponse,
  SubscribeToShardResponseHandler
}

/**
 * SubscribeToShard through the AWS SDK's Netty async client. The SDK does not retry subscriptions
 * ([[io.sparkkinesis.reader.efo.ShardSubscription]] renews them); the HTTP protocol is per
 * `kinesis.subscribeToShard.httpProtocol` (HTTP/2 for AWS). Holds a lease on its credentials provider until it is
 * closed.
 */
final class SdkSubscriptionClient(config: AwsClientConfig, protocol: HttpProtocol)
    extends ShardSubscriptionClient {

  private val credentials = AwsCredentials.acquire(config.credentials)

  private val sdk: KinesisAsyncClient = {
    val http = NettyNioAsyncHttpClient
      .builder()
      .protocol(if (protocol == HttpProtocol.Http1) Protocol.HTTP1_1 else Protocol.HTTP2)
      .protocolNegotiation(
        if (protocol == HttpProtocol.Http2Alpn) ProtocolNegotiation.ALPN
        else ProtocolNegotiation.ASSUME_PROTOCOL
      )
      .maxConcurrency(Int.box(1000))
      .maxPendingConnectionAcquires(10000)
      // A subscription held between batches may carry no bytes for a while (its buffer is full): the connection's
      // HTTP/2 pings detect a dead peer, and the reader's own timeout detects a silent subscription.
      .readTimeout(Duration.ofMinutes(6))
      .http2Configuration(Http2Configuration.builder().healthCheckPingPeriod(Duration.ofSeconds(10)).build())
      .build()
    KinesisAsyncClient
      .builder()
      .region(Region.of(config.region))
      .endpointOverride(URI.create(config.endpointUrl))
      .credentialsProvider(credentials.value)
      .httpClient(http)
      .overrideConfiguration(
        ClientOverrideConfiguration.builder().retryStrategy(AwsRetryStrategy.doNotRetry()).build()
      )
      .build()
  }

  def subscribe(
      consumerArn: String,
      shardId: String,
      start: IteratorStart,
      listener: SubscriptionListener
  ): () => Unit = {
    val from = SdkModel.start(start)
    val position = StartingPosition.builder().`type`(from.kind)
    from.sequenceNumber.foreach(position.sequenceNumber)
    from.timestamp.foreach(position.timestamp)
    val request = SubscribeToShardRequest
      .builder()
      .consumerARN(consumerArn)
      .shardId(shardId)
      .startingPosition(position.build())
      .build()
    @volatile var subscription: Option[Subscription] = None
    @volatile var cancelled = false
    val handler = new SubscribeToShardResponseHandler {
      def responseReceived(response: SubscribeToShardResponse): Unit = ()
      def onEventStream(
          publisher: software.amazon.awssdk.core.async.SdkPublisher[SubscribeToShardEventStream]
      ): Unit =
        publisher.subscribe(new Subscriber[SubscribeToShardEventStream] {
          def onSubscribe(s: Subscription): Unit = {
            subscription = Some(s)
            if (cancelled) s.cancel()
            else
              listener.onStart(new SubscriptionHandle {
                def request(events: Long): Unit = s.request(events)
                def cancel(): Unit = s.cancel()
              })
          }
          def onNext(event: SubscribeToShardEventStream): Unit = event match {
            case e: SubscribeToShardEvent => listener.onEvent(SdkSubscriptionClient.toEvent(e))
            case _ => subscription.foreach(_.request(1)) // an event type this reader does not know: skip it
          }
          def onError(t: Throwable): Unit = listener.onError(t)
          def onComplete(): Unit = listener.onEnd()
        })
      def exceptionOccurred(t: Throwable): Unit = listener.onError(t)
      def complete(): Unit = ()
    }
    val future = sdk.subscribeToShard(request, handler)
    () => {
      cancelled = true
      subscription.foreach(_.cancel())
      future.cancel(true)
      ()
    }
  }

  def close(): Unit = try sdk.close()
  finally credentials.close()
}

object SdkSubscriptionClient {

  private val clients = new SharedResources[(AwsClientConfig, HttpProtocol), SdkSubscriptionClient](
    "Kinesis fan-out client",
    k => new SdkSubscriptionClient(k._1, k._2),
    _.close()
  )

  /**
   * A lease on the one client per configuration in this JVM, shared by the tasks (and the live subscriptions cached
   * between them) that hold one, and closed once none has for the idle grace period ([[SharedResources]]).
   */
  def acquire(config: AwsClientConfig, protocol: HttpProtocol): Lease[SdkSubscriptionClient] =
    clients.acquire((config, protocol))

  private[client] def toEvent(e: SubscribeToShardEvent): SubscriptionEvent = SubscriptionEvent(
    SdkModel.records(e.records()),
    Option(e.continuationSequenceNumber()),
    Option(e.millisBehindLatest()).map(_.longValue()),
    SdkModel.childShards(e.hasChildShards, e.childShards())
  )
}
