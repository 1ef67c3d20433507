// Baseline for the EFO read benchmark: the AWS SDK for Java v2 (the copy relocated inside our shaded jar) reading
// every shard of a stream from TRIM_HORIZON with SubscribeToShard, one subscription per shard (renewed from the
// continuation sequence number when the service ends one), requesting events 4 ahead like the connector, no Spark,
// every Kinesis record de-aggregated into its user records with the KPL's own protobuf classes, as a KCL consumer
// would (KplDeaggregator.java; a plain record is one user record), until EXPECTED Kinesis records arrived. Registers a consumer of its own and deregisters
// it. Reads the stream twice (the first pass warms the JVM up, as the connector's Spark JVM is warm when measured) and
// prints one JSON line for the second: Kinesis records, user records, their bytes, seconds and the process' CPU
// seconds from the first subscription to the last record.
//
//   java -Daws.cborEnabled=false -cp <shaded jar>:<slf4j jar>:<KplDeaggregator class dir> BareSubscribeLoop.java \
//       ENDPOINT STREAM EXPECTED
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
  static AtomicLong records, userRecords, bytes, subscriptions;
  static CountDownLatch done;
  static long expected;
  /** Subscriptions of an earlier pass stay open at the tip; their events are not counted. */
  static volatile int pass;

  static void subscribe(Shard shard, StartingPosition position) {
    String shardId = shard.shardId();
    int ownPass = pass;
    subscriptions.incrementAndGet();
    String[] continuation = {null};
    SubscribeToShardResponseHandler handler = SubscribeToShardResponseHandler.builder()
        .onEventStream(publisher -> publisher.subscribe(new Subscriber<SubscribeToShardEventStream>() {
          Subscription subscription;
          // Events of one subscription arrive one at a time, in order.
          final KplDeaggregator deaggregator =
              new KplDeaggregator(shard.hashKeyRange().startingHashKey(), shard.hashKeyRange().endingHashKey());
          final long[] totals = new long[2];
          public void onSubscribe(Subscription s) { subscription = s; s.request(4); }
          public void onNext(SubscribeToShardEventStream event) {
            if (event instanceof SubscribeToShardEvent e && ownPass == pass) {
              for (io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.Record r : e.records()) {
                totals[0] = 0;
                totals[1] = 0;
                deaggregator.count(r.data().asByteArrayUnsafe(), totals);
                userRecords.addAndGet(totals[0]);
                bytes.addAndGet(totals[1]);
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
          if (done.getCount() == 0 || ownPass != pass) return;
          StartingPosition next = continuation[0] == null ? position
              : StartingPosition.builder().type(ShardIteratorType.AFTER_SEQUENCE_NUMBER)
                  .sequenceNumber(continuation[0]).build();
          // The service refuses a new subscription of the same consumer and shard within 5 s of the last one.
          CompletableFuture.delayedExecutor(5, TimeUnit.SECONDS).execute(() -> subscribe(shard, next));
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
    StartingPosition trimHorizon = StartingPosition.builder().type(ShardIteratorType.TRIM_HORIZON).build();
    List<Shard> shards = client.listShards(b -> b.streamName(stream)).get().shards();
    boolean complete = false;
    double seconds = 0, cpuSeconds = 0;
    for (pass = 0; pass < 2; pass++) {
      if (pass > 0) Thread.sleep(5500); // a new subscription of a consumer and shard: 5 s after the last one
      records = new AtomicLong();
      userRecords = new AtomicLong();
      bytes = new AtomicLong();
      subscriptions = new AtomicLong();
      done = new CountDownLatch(1);
      long cpuStarted = os.getProcessCpuTime();
      long started = System.nanoTime();
      for (Shard shard : shards) subscribe(shard, trimHorizon);
      complete = done.await(600, TimeUnit.SECONDS);
      seconds = (System.nanoTime() - started) / 1e9;
      cpuSeconds = (os.getProcessCpuTime() - cpuStarted) / 1e9;
      if (!complete) break;
    }
    client.deregisterStreamConsumer(b -> b.consumerARN(consumerArn)).get();
    if (!complete) {
      System.err.printf("only %d of %d records within 600 s%n", records.get(), expected);
      System.exit(1);
    }
    System.out.printf(Locale.ROOT,
        "{\"records\": %d, \"userRecords\": %d, \"bytes\": %d, \"seconds\": %.3f, \"cpuSeconds\": %.3f, "
            + "\"subscriptions\": %d}%n",
        records.get(), userRecords.get(), bytes.get(), seconds, cpuSeconds, subscriptions.get());
    System.exit(0);
  }
}
