package io.sparkkinesis.source;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead;

/**
 * Spark's real-time reader with every form of {@code nextWithTimeout}: Spark 4.1 calls {@code (timeoutMs)}, 4.2
 * {@code (startTimeMs, timeoutMs)}, and 4.3 has both. Both are declared here without {@code @Override}, so this one
 * class compiles against each line (a Scala class cannot declare a method that overrides nothing on one line and
 * something on another). Both mean: wait for the next record until the engine's deadline, which the two-argument form
 * measures from {@code startTimeMs} (wall-clock milliseconds) rather than from the call.
 */
abstract class RealTimeReaderAdapter implements SupportsRealTimeRead<InternalRow> {

  /** The next record within {@code timeoutMs}; no record ends the task. */
  protected abstract RecordStatus nextRecord(long timeoutMs);

  public RecordStatus nextWithTimeout(Long timeoutMs) {
    return nextRecord(timeoutMs);
  }

  public RecordStatus nextWithTimeout(Long startTimeMs, Long timeoutMs) {
    return nextRecord(Math.max(0L, startTimeMs + timeoutMs - System.currentTimeMillis()));
  }
}
