package io.sparkkinesis.client

import java.net.URI
import java.time.Duration
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}

import io.sparkkinesis.config.{AwsClientConfig, HttpProtocol, HttpSettings}
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.resources.{Lease, SharedResources}
import org.reactivestreams.{Subscriber, Subscription}
import org.slf4j.LoggerFactory
import software.amazon.awssdk.awscore.retry.AwsRetryStrategy
import software.amazon.awssdk.core.async.SdkPublisher
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.http.{Protocol, ProtocolNegotiation}
import software.amazon.awssdk.http.nio.netty.{Http2Configuration, NettyNioAsyncHttpClient}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.kinesis.KinesisAsyncClient
import software.amazon.awssdk.services.kinesis.model.{StreamSummary => _, _}

/**
 * SubscribeToShard through the AWS SDK's Netty async client, in `kinesis.subscribeToShard.httpProtocol` (HTTP/2 for
 * AWS). The SDK does not retry subscriptions ([[io.sparkkinesis.reader.efo.ShardSubscription]] renews them). Holds a
 * lease on its credentials provider until it is closed.
 */
private[sparkkinesis] final class SdkSubscriptionClient(config: AwsClientConfig, protocol: HttpProtocol)
    extends ShardSubscriptionClient {

  private val credentials = AwsCredentials.acquire(config.credentials)

  private val sdk: KinesisAsyncClient = {
    val http = HttpSettings
      .netty(NettyNioAsyncHttpClient.builder(), config.network)
      .protocol(if (protocol == HttpProtocol.Http1) Protocol.HTTP1_1 else Protocol.HTTP2)
      .protocolNegotiation(
        if (protocol == HttpProtocol.Http2Alpn) ProtocolNegotiation.ALPN
        else ProtocolNegotiation.ASSUME_PROTOCOL
      )
      // A subscription holds its HTTP/2 stream (an HTTP/1.1 connection) while it lives, a cached one beyond its
      // batch: a cap below the shards an executor reads would stall the rest until a subscription ended.
      .maxConcurrency(Int.box(SdkSubscriptionClient.MaxSubscriptions))
      .maxPendingConnectionAcquires(SdkSubscriptionClient.MaxSubscriptions)
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
    val request = SubscribeToShardRequest.builder().consumerARN(consumerArn).shardId(shardId)
    @volatile var subscription: Option[Subscription] = None
    @volatile var cancelled = false
    val handler = new SubscribeToShardResponseHandler {
      def responseReceived(response: SubscribeToShardResponse): Unit = ()
      def onEventStream(publisher: SdkPublisher[SubscribeToShardEventStream]): Unit =
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
    SdkSubscriptionClient.opened()
    val future = sdk.subscribeToShard(request.startingPosition(position.build()).build(), handler)
    future.whenComplete((_, _) => SdkSubscriptionClient.ended())
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

private[sparkkinesis] object SdkSubscriptionClient {
  private val log = LoggerFactory.getLogger(classOf[SdkSubscriptionClient])

  /** The SDK's cap on live subscriptions per client: far above the shards any executor reads, so never the limit. */
  val MaxSubscriptions: Int = 100000

  /**
   * Heap budgeted per live subscription. The SDK's event-stream decoder grows its buffer to the largest event
   * received and keeps it while the subscription lives: a few KiB at the tip, several MiB (humongous objects under
   * G1) once it has caught up on a backlog. The budget is for the latter.
   */
  val HeapPerSubscription: Long = 4L << 20

  private val live = new AtomicInteger()
  private val warned = new AtomicBoolean()

  private def opened(): Unit = {
    val open = live.incrementAndGet()
    heapWarning(open, Runtime.getRuntime.maxMemory).foreach { message =>
      if (warned.compareAndSet(false, true)) log.warn(message)
    }
  }

  private def ended(): Unit = { live.decrementAndGet(); () }

  /** A warning when `open` subscriptions' buffers would fill more than half of a `maxHeap`-byte heap. */
  def heapWarning(open: Int, maxHeap: Long): Option[String] =
    if (open.toLong * HeapPerSubscription <= maxHeap / 2) None
    else
      Some(
        s"$open enhanced fan-out subscriptions are open in this JVM. The AWS SDK's event-stream buffer of each grows " +
          s"to the largest event it received, up to about ${HeapPerSubscription >> 20} MiB of heap under G1 while " +
          s"catching up on a backlog: ${(open * HeapPerSubscription) >> 20} MiB, over half of the " +
          s"${maxHeap >> 20} MiB heap. A task holds one subscription per shard it reads; " +
          "give executors more memory (spark.executor.memory; in local mode spark.driver.memory) or spread the " +
          "shards over more executors, or the JVM may run out of memory."
      )

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
