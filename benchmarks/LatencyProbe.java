// The sink of the latency benchmark: a JVM ForeachWriter that notes, for each row as Spark hands it over, how long
// ago its record was put (the payload is "t=<put time in epoch seconds>"). It runs in the executors' task threads;
// in local mode they share the driver's JVM, so the benchmark reads the samples over py4j with drain(). A JVM
// writer, not a Python one: Python foreach writers receive rows in chunks, which would add their own delay.
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

public class LatencyProbe extends ForeachWriter<Row> {
  private static final ConcurrentLinkedQueue<Double> SAMPLES = new ConcurrentLinkedQueue<>();

  public boolean open(long partitionId, long epochId) { return true; }

  public void process(Row row) {
    double now = System.currentTimeMillis();
    String text = new String((byte[]) row.get(0), java.nio.charset.StandardCharsets.UTF_8);
    if (text.startsWith("t=")) SAMPLES.add(now - Double.parseDouble(text.substring(2)) * 1000.0);
  }

  public void close(Throwable error) {}

  /** Every sample noted since the last call, in milliseconds. */
  public static double[] drain() {
    List<Double> out = new ArrayList<>();
    for (Double d; (d = SAMPLES.poll()) != null; ) out.add(d);
    double[] result = new double[out.size()];
    for (int i = 0; i < result.length; i++) result[i] = out.get(i);
    return result;
  }
}
