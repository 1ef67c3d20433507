// Baseline for the EFO read benchmark: the AWS SDK for Java v2 (the copy relocated inside our shaded jar) reading
// every shard of a stream from TRIM_HORIZON with SubscribeToShard, one subscription per shard (renewed from the
// continuation sequence number when the service ends one), requesting events 4 ahead like the connector, no
// de-aggregation, no Spark, until EXPECTED Kinesis records arrived. Registers a consumer of its own and deregisters
// it. Prints one JSON line: records, bytes, seconds and the process' CPU seconds from the first subscription to the
// last record.
//
//   java -Daws.cborEnabled=false -cp <shaded jar>:<slf4j jar> BareSubscribeLoop.java ENDPOINT STREAM EXPECTED
import io.sparkkinesis.shaded.org.reactivestreams.Subscriber;
import io.sparkkinesis.shaded.org.reactivestreams.Subscription;
import io.sparkkinesis.shaded.software.amazon.awssdk.regions.Region;
import io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.KinesisAsyncClient;
import io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.*;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicLong;

public class BareSubscribeLoop {
  static KinesisAsyncClient client;
  static String consumerArn;
  static final AtomicLong records = new AtomicLong(), bytes = new AtomicLong(), subscriptions = new AtomicLong();
  static final CountDownLatch done = new CountDownLatch(1);
  static long expected;

  static void subscribe(String shardId, StartingPosition position) {
    subscriptions.incrementAndGet();
    String[] continuation = {null};
    SubscribeToShardResponseHandler handler = SubscribeToShardResponseHandler.builder()
        .onEventStream(publisher -> publisher.subscribe(new Subscriber<SubscribeToShardEventStream>() {
          Subscription subscription;
          public void onSubscribe(Subscription s) { subscription = s; s.request(4); }
          public void onNext(SubscribeToShardEventStream event) {
            if (event instanceof SubscribeToShardEvent e) {
              for (io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.Record r : e.records()) {
                bytes.addAndGet(r.data().asByteArrayUnsafe().length);
                if (records.incrementAndGet() >= expected) done.countDown();
              }
              continuation[0] = e.continuationSequenceNumber();
            }
            subscription.request(1);
          }
          public void onError(Throwable t) {}
          public void onComplete() {}
        }))
        .onError(t -> {})
        .build();
    client.subscribeToShard(b -> b.consumerARN(consumerArn).shardId(shardId).startingPosition(position), handler)
        .whenComplete((ignored, error) -> {
          if (done.getCount() == 0) return;
          StartingPosition next = continuation[0] == null ? position
              : StartingPosition.builder().type(ShardIteratorType.AFTER_SEQUENCE_NUMBER)
                  .sequenceNumber(continuation[0]).build();
          // The service refuses a new subscription of the same consumer and shard within 5 s of the last one.
          CompletableFuture.delayedExecutor(5, TimeUnit.SECONDS).execute(() -> subscribe(shardId, next));
        });
  }

  public static void main(String[] args) throws Exception {
    String endpoint = args[0], stream = args[1];
    expected = Long.parseLong(args[2]);
    client = KinesisAsyncClient.builder().region(Region.US_EAST_1).endpointOverride(URI.create(endpoint)).build();
    String streamArn = client.describeStreamSummary(b -> b.streamName(stream)).get()
        .streamDescriptionSummary().streamARN();
    consumerArn = client.registerStreamConsumer(b -> b.streamARN(streamArn).consumerName("bare-" + System.nanoTime()))
        .get().consumer().consumerARN();
    while (client.describeStreamConsumer(b -> b.consumerARN(consumerArn)).get()
        .consumerDescription().consumerStatus() != ConsumerStatus.ACTIVE) Thread.sleep(100);
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    long cpuStarted = os.getProcessCpuTime();
    long started = System.nanoTime();
    StartingPosition trimHorizon = StartingPosition.builder().type(ShardIteratorType.TRIM_HORIZON).build();
    for (Shard shard : client.listShards(b -> b.streamName(stream)).get().shards()) subscribe(shard.shardId(), trimHorizon);
    boolean complete = done.await(600, TimeUnit.SECONDS);
    double seconds = (System.nanoTime() - started) / 1e9;
    double cpuSeconds = (os.getProcessCpuTime() - cpuStarted) / 1e9;
    client.deregisterStreamConsumer(b -> b.consumerARN(consumerArn)).get();
    if (!complete) {
      System.err.printf("only %d of %d records within 600 s%n", records.get(), expected);
      System.exit(1);
    }
    System.out.printf(Locale.ROOT,
        "{\"records\": %d, \"bytes\": %d, \"seconds\": %.3f, \"cpuSeconds\": %.3f, \"subscriptions\": %d}%n",
        records.get(), bytes.get(), seconds, cpuSeconds, subscriptions.get());
    System.exit(0);
  }
}
