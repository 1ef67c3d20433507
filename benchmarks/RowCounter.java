// The sink of the read benchmark's real-time rows (real-time mode takes no noop sink): a JVM ForeachWriter that
// counts the rows Spark hands it and notes when the first and the last came, in System.nanoTime(). It runs in the
// executors' task threads; in local mode they share the driver's JVM, where the benchmark reads the figures over
// py4j.
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.apache.spark.sql.ForeachWriter;
import org.apache.spark.sql.Row;

public class RowCounter extends ForeachWriter<Row> {
  private static final LongAdder ROWS = new LongAdder();
  private static final AtomicLong FIRST = new AtomicLong();
  private static final AtomicLong LAST = new AtomicLong();

  public boolean open(long partitionId, long epochId) { return true; }

  public void process(Row row) {
    long now = System.nanoTime();
    FIRST.compareAndSet(0L, now);
    LAST.accumulateAndGet(now, Math::max);
    ROWS.increment();
  }

  public void close(Throwable error) {}

  public static long rows() { return ROWS.sum(); }

  /** Nanoseconds from the first row to the last since the last reset. */
  public static long spanNanos() { return LAST.get() - FIRST.get(); }

  public static void reset() {
    ROWS.reset();
    FIRST.set(0L);
    LAST.set(0L);
  }
}
