package io.sparkkinesis.client

import java.util.concurrent.ThreadLocalRandom

/**
 * The connector's one back-off between attempts of a Kinesis call: exponential with a cap, jittered. The wait before
 * attempt `n + 1` (after the `n`-th failure in a row, `n >= 1`) is drawn uniformly from `[c / 2, c]`, where
 * `c = min(maxMs, baseMs * 2^(n-1))`; the jitter spreads the retries of tasks throttled together.
 */
private[sparkkinesis] final case class Backoff(baseMs: Long, maxMs: Long) {

  /** The longest wait after the `failures`-th failure in a row. */
  def ceilingMs(failures: Int): Long = math.min(maxMs, baseMs << math.min(math.max(failures, 1) - 1, 16))

  /** A wait after the `failures`-th failure in a row. */
  def delayMs(failures: Int): Long = {
    val ceiling = ceilingMs(failures)
    ThreadLocalRandom.current().nextLong(ceiling / 2, ceiling + 1)
  }
}
