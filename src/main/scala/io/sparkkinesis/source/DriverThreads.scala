package io.sparkkinesis.source

import java.util.concurrent.{Callable, ExecutionException, Executors}

import io.sparkkinesis.resources.DaemonThreads

/**
 * Kinesis calls the driver makes for many shards or streams at once (pinning a batch read's ends, idle probes,
 * activating fan-out consumers), each on a thread of its own for the call's duration.
 */
private[source] object DriverThreads {

  /** Calls made at once, at most. */
  val Max = 16

  /** `f` of every element, in order, with up to [[Max]] running at once; the first failure is thrown. */
  def inParallel[A, B](items: Seq[A])(f: A => B): Seq[B] =
    if (items.size <= 1) items.map(f)
    else {
      val pool =
        Executors.newFixedThreadPool(math.min(Max, items.size), DaemonThreads("spark-kinesis-driver-call"))
      try {
        val futures = items.map(item => pool.submit(new Callable[B] { def call(): B = f(item) }))
        futures.map { future =>
          try future.get()
          catch { case e: ExecutionException if e.getCause != null => throw e.getCause }
        }
      } finally pool.shutdownNow()
    }
}
