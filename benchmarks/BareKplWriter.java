// Baseline for the write benchmark: the Kinesis Producer Library (the copy relocated inside our shaded
// jar) writing the same rows as the sink benchmark, from one thread, with the sink's default producer
// settings and the same back-pressure (at most 10,000 outstanding records), no Spark. Prints one JSON line, with
// the CPU clock ticks (user + system, from /proc) of this JVM and of its children (the KPL's native process) over
// the timed part: both are still running when they are read.
//
//   java -cp <shaded jar>:<slf4j jar> BareKplWriter.java HOST PORT STS_HOST STS_PORT STREAM ROWS SIZE AGGREGATE
import io.sparkkinesis.shaded.com.google.common.util.concurrent.*;
import io.sparkkinesis.shaded.software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import io.sparkkinesis.shaded.software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import io.sparkkinesis.shaded.software.amazon.kinesis.producer.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

public class BareKplWriter {
  public static void main(String[] args) throws Exception {
    String host = args[0], stsHost = args[2], stream = args[4];
    long port = Long.parseLong(args[1]), stsPort = Long.parseLong(args[3]);
    int rows = Integer.parseInt(args[5]), size = Integer.parseInt(args[6]);
    boolean aggregate = Boolean.parseBoolean(args[7]);
    KinesisProducerConfiguration config = new KinesisProducerConfiguration()
        .setRegion("us-east-1").setKinesisEndpoint(host).setKinesisPort(port)
        .setStsEndpoint(stsHost).setStsPort(stsPort).setVerifyCertificate(false)
        .setRecordMaxBufferedTime(1000).setMaxConnections(1).setAggregationEnabled(aggregate)
        .setRecordTtl(30000).setRequestTimeout(6000).setMetricsLevel("none").setLogLevel("warning")
        .setRecordDistributionStrategyDefault(KinesisProducerConfiguration.RecordDistributionStrategyDefault.USER_PARTITION_KEY)
        .setCredentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test-access-key", "test-secret-key")));
    KinesisProducer producer = new KinesisProducer(config);
    AtomicLong failed = new AtomicLong();
    FutureCallback<UserRecordResult> callback = new FutureCallback<>() {
      public void onSuccess(UserRecordResult result) {}
      public void onFailure(Throwable t) { failed.incrementAndGet(); }
    };
    // Warm-up: the producer learns the stream's shards (until then it cannot aggregate).
    for (int i = 0; i < 100; i++) {
      Futures.addCallback(producer.addUserRecord(stream, "warm-" + i, ByteBuffer.wrap(new byte[size])), callback,
          MoreExecutors.directExecutor());
    }
    producer.flushSync();
    Thread.sleep(2000);
    long jvmTicks = ticks(ProcessHandle.current().pid()), nativeTicks = childTicks();
    long started = System.nanoTime();
    for (int i = 0; i < rows; i++) {
      while (producer.getOutstandingRecordsCount() >= 10000) Thread.sleep(1);
      Futures.addCallback(producer.addUserRecord(stream, "key-" + (i % 1000), ByteBuffer.wrap(row(i, size))),
          callback, MoreExecutors.directExecutor());
    }
    producer.flushSync();
    double seconds = (System.nanoTime() - started) / 1e9;
    jvmTicks = ticks(ProcessHandle.current().pid()) - jvmTicks;
    nativeTicks = childTicks() - nativeTicks;
    producer.destroy();
    System.out.printf("{\"rows\": %d, \"seconds\": %.3f, \"failed\": %d, \"jvmTicks\": %d, \"nativeTicks\": %d}%n",
        rows, seconds, failed.get(), jvmTicks, nativeTicks);
  }

  /** User + system clock ticks of a process so far (utime and stime of /proc/PID/stat). */
  static long ticks(long pid) throws java.io.IOException {
    String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
    String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
    return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
  }

  /** The ticks of this JVM's running children: the KPL's native process. */
  static long childTicks() throws java.io.IOException {
    long sum = 0;
    for (ProcessHandle child : ProcessHandle.current().children().toList()) sum += ticks(child.pid());
    return sum;
  }

  /** The same bytes as the sink benchmark's rows: the row number padded with 'x' to SIZE bytes. */
  static byte[] row(int i, int size) {
    StringBuilder text = new StringBuilder(Integer.toString(i));
    while (text.length() < size) text.append('x');
    return text.toString().getBytes(StandardCharsets.US_ASCII);
  }
}
