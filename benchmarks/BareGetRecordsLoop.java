// Baseline for the read benchmark: the AWS SDK for Java v2 (the copy relocated inside our shaded jar)
// reading every shard of a stream from TRIM_HORIZON to its tip with a plain GetRecords loop, one
// thread per shard, no pacing, no Spark, every Kinesis record de-aggregated into its user records with the KPL's own
// protobuf classes, as a KCL consumer would (KplDeaggregator.java; a plain record is one user record). Prints one JSON
// line: Kinesis records, user records, their bytes, and the process' CPU seconds spent while reading. It reads the
// stream twice and reports the second, warm pass.
//
//   java -Daws.cborEnabled=false -cp <shaded jar>:<slf4j jar>:<KplDeaggregator class dir> BareGetRecordsLoop.java \
//       ENDPOINT STREAM
import io.sparkkinesis.shaded.software.amazon.awssdk.regions.Region;
import io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.KinesisClient;
import io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.*;
import io.sparkkinesis.shaded.software.amazon.awssdk.http.apache.ApacheHttpClient;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.AtomicLong;

public class BareGetRecordsLoop {
  public static void main(String[] args) throws Exception {
    String endpoint = args[0], stream = args[1];
    try (KinesisClient client = KinesisClient.builder()
        .region(Region.US_EAST_1)
        .endpointOverride(URI.create(endpoint))
        .httpClientBuilder(ApacheHttpClient.builder().maxConnections(16))
        .build()) {
      List<Shard> shards = client.listShards(ListShardsRequest.builder().streamName(stream).build()).shards();
      ExecutorService pool = Executors.newFixedThreadPool(shards.size());
      com.sun.management.OperatingSystemMXBean os =
          (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
      // The first pass warms the JVM up (class loading, JIT, connections), as the connector's Spark JVM is warm
      // when it is measured; the second pass is the one reported.
      for (int pass = 0; pass < 2; pass++) {
        AtomicLong records = new AtomicLong(), userRecords = new AtomicLong(), bytes = new AtomicLong(),
            calls = new AtomicLong();
        long cpuStarted = os.getProcessCpuTime();
        long started = System.nanoTime();
        List<Future<?>> done = new ArrayList<>();
        for (Shard shard : shards) done.add(pool.submit(() -> readShard(client, stream, shard, records, userRecords, bytes, calls)));
        for (Future<?> f : done) f.get();
        double seconds = (System.nanoTime() - started) / 1e9;
        double cpuSeconds = (os.getProcessCpuTime() - cpuStarted) / 1e9;
        if (pass == 1) {
          System.out.printf(Locale.ROOT,
              "{\"records\": %d, \"userRecords\": %d, \"bytes\": %d, \"seconds\": %.3f, \"cpuSeconds\": %.3f, "
                  + "\"getRecordsCalls\": %d}%n",
              records.get(), userRecords.get(), bytes.get(), seconds, cpuSeconds, calls.get());
        }
      }
      pool.shutdown();
    }
  }

  static Void readShard(KinesisClient client, String stream, Shard shard, AtomicLong records,
      AtomicLong userRecords, AtomicLong bytes, AtomicLong calls) {
    KplDeaggregator deaggregator =
        new KplDeaggregator(shard.hashKeyRange().startingHashKey(), shard.hashKeyRange().endingHashKey());
    long[] totals = new long[2];
    String iterator = client.getShardIterator(GetShardIteratorRequest.builder().streamName(stream)
        .shardId(shard.shardId()).shardIteratorType(ShardIteratorType.TRIM_HORIZON).build()).shardIterator();
    while (iterator != null) {
      GetRecordsResponse response =
          client.getRecords(GetRecordsRequest.builder().shardIterator(iterator).limit(10000).build());
      calls.incrementAndGet();
      for (io.sparkkinesis.shaded.software.amazon.awssdk.services.kinesis.model.Record r : response.records()) {
        records.incrementAndGet();
        deaggregator.count(r.data().asByteArrayUnsafe(), totals);
      }
      if (response.records().isEmpty() && Long.valueOf(0L).equals(response.millisBehindLatest())) break;
      iterator = response.nextShardIterator();
    }
    userRecords.addAndGet(totals[0]);
    bytes.addAndGet(totals[1]);
    return null;
  }
}
