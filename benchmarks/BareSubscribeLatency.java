// Baseline for the latency benchmark: the AWS SDK for Java v2 (the copy relocated inside our shaded jar) subscribed
// with SubscribeToShard to every shard of a stream, requesting events 4 ahead (as the connector does), while this
// program puts one record every INTERVAL_MS whose payload is its put time. No Spark. Prints one JSON line with the
// put -> event-received latencies (median, p90, max, in ms).
//
//   java -Daws.cborEnabled=false -cp <shaded jar>:<slf4j jar> BareSubscribeLatency.java ENDPOINT STREAM SAMPLES INTERVAL_MS
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
    int samples = Integer.parseInt(args[2]);
    long intervalMs = Long.parseLong(args[3]);
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
      for (int i = 0; i < samples; i++) {
        String data = "t=" + System.currentTimeMillis();
        int k = i;
        client.putRecord(b -> b.streamName(stream).partitionKey("k" + k).data(SdkBytes.fromUtf8String(data))).get();
        Thread.sleep(intervalMs);
      }
      long deadline = System.currentTimeMillis() + 15000;
      while (latencies.size() < samples && System.currentTimeMillis() < deadline) Thread.sleep(50);
      List<Double> sorted = new ArrayList<>(latencies);
      Collections.sort(sorted);
      client.deregisterStreamConsumer(b -> b.consumerARN(consumer.consumerARN())).get();
      int n = sorted.size();
      System.out.printf(Locale.ROOT, "{\"samples\": %d, \"median\": %.1f, \"p90\": %.1f, \"max\": %.1f}%n", n,
          n == 0 ? Double.NaN : sorted.get(n / 2), n == 0 ? Double.NaN : sorted.get(Math.min(n - 1, (int) (n * 0.9))),
          n == 0 ? Double.NaN : sorted.get(n - 1));
      System.exit(0);
    }
  }
}
