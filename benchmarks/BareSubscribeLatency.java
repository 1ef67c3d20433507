// Baseline for the latency benchmark: the AWS SDK for Java v2 (the copy relocated inside our shaded jar) subscribed
// with SubscribeToShard to every shard of a stream, requesting events 4 ahead (as the connector does), while this
// program puts RATE records per second for SECONDS seconds (RATE/10 records every 100 ms, 500 per PutRecords), each
// record's payload holding its put time. No Spark. Prints one JSON line with the put -> event-received latencies
// (p50, p99, max, in ms).
//
//   java -Daws.cborEnabled=false -cp <shaded jar>:<slf4j jar> BareSubscribeLatency.java ENDPOINT STREAM SECONDS RATE
import io.sparkkinesis.shaded.org.reactivestreams.Subscriber;
import io.sparkkinesis.shaded.org.reactivestreams.Subscription;
import io.sparkkinesis.shaded.software.amazon.awssdk.core.SdkBytes;
import io.sparkkinesis.shaded.software.amazon.awssdk.regions.Region;
import io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.KinesisAsyncClient;
import io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.*;
import java.net.URI;
import java.util.*;
import java.util.concurrent.*;

public class BareSubscribeLatency {
  public static void main(String[] args) throws Exception {
    String endpoint = args[0], stream = args[1];
    int seconds = Integer.parseInt(args[2]), perPut = Math.max(1, Integer.parseInt(args[3]) / 10);
    int samples = seconds * 10 * perPut;
    try (KinesisAsyncClient client = KinesisAsyncClient.builder().region(Region.US_EAST_1)
        .endpointOverride(URI.create(endpoint)).build()) {
      String streamArn = client.describeStreamSummary(b -> b.streamName(stream)).get()
          .streamDescriptionSummary().streamARN();
      Consumer consumer = client.registerStreamConsumer(b -> b.streamARN(streamArn).consumerName("bare-" + System.nanoTime()))
          .get().consumer();
      while (client.describeStreamConsumer(b -> b.consumerARN(consumer.consumerARN())).get()
          .consumerDescription().consumerStatus() != ConsumerStatus.ACTIVE) Thread.sleep(100);
      List<Double> latencies = Collections.synchronizedList(new ArrayList<>());
      for (Shard shard : client.listShards(b -> b.streamName(stream)).get().shards()) {
        SubscribeToShardResponseHandler handler = SubscribeToShardResponseHandler.builder()
            .onEventStream(publisher -> publisher.subscribe(new Subscriber<SubscribeToShardEventStream>() {
              Subscription subscription;
              public void onSubscribe(Subscription s) { subscription = s; s.request(4); }
              public void onNext(SubscribeToShardEventStream event) {
                double now = System.currentTimeMillis();
                if (event instanceof SubscribeToShardEvent e) {
                  for (io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.Record r : e.records()) {
                    String text = r.data().asUtf8String();
                    if (text.startsWith("t=")) latencies.add(now - Double.parseDouble(text.substring(2)));
                  }
                }
                subscription.request(1);
              }
              public void onError(Throwable t) {}
              public void onComplete() {}
            })).build();
        client.subscribeToShard(b -> b.consumerARN(consumer.consumerARN()).shardId(shard.shardId())
            .startingPosition(p -> p.type(ShardIteratorType.LATEST)), handler);
      }
      Thread.sleep(2000);
      long next = System.currentTimeMillis();
      for (int i = 0; i < seconds * 10; i++) {
        List<PutRecordsRequestEntry> entries = new ArrayList<>();
        String data = "t=" + System.currentTimeMillis();
        for (int k = 0; k < perPut; k++) {
          entries.add(PutRecordsRequestEntry.builder().partitionKey("k" + i + "-" + k)
              .data(SdkBytes.fromUtf8String(data)).build());
        }
        // PutRecords takes at most 500 records.
        for (int from = 0; from < entries.size(); from += 500) {
          List<PutRecordsRequestEntry> chunk = entries.subList(from, Math.min(entries.size(), from + 500));
          client.putRecords(b -> b.streamName(stream).records(chunk)).get();
        }
        next += 100;
        Thread.sleep(Math.max(0, next - System.currentTimeMillis()));
      }
      long deadline = System.currentTimeMillis() + 15000;
      while (latencies.size() < samples && System.currentTimeMillis() < deadline) Thread.sleep(50);
      List<Double> sorted = new ArrayList<>(latencies);
      Collections.sort(sorted);
      client.deregisterStreamConsumer(b -> b.consumerARN(consumer.consumerARN())).get();
      int n = sorted.size();
      System.out.printf(Locale.ROOT, "{\"samples\": %d, \"expected\": %d, \"p50\": %.1f, \"p99\": %.1f, \"max\": %.1f}%n",
          n, samples, n == 0 ? Double.NaN : sorted.get(n / 2),
          n == 0 ? Double.NaN : sorted.get(Math.min(n - 1, (int) (n * 0.99))), n == 0 ? Double.NaN : sorted.get(n - 1));
      System.exit(0);
    }
  }
}
