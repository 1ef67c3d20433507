package io.sparkkinesis.reader

import java.util.concurrent.{CompletableFuture, CompletionException, Executor}

/**
 * Runs another fetcher's fetches on `executor`, so that one thread can read several shards at once: [[poll]] asks
 * for a fetch and returns; once it is done, `ready` is called (on the fetching thread) and the next [[poll]] with the
 * same limit returns the outcome. A fetcher's waits (its pacing, its back-off when throttled, a subscription's next
 * event) then hold up only its own shard.
 *
 * One fetch at a time, and only when asked: the wrapped fetcher never runs ahead of what its reader took. The
 * wrapped fetcher stays its factory's to release (after [[awaitIdle]]).
 */
final class AsyncFetcher(fetcher: RecordFetcher, executor: Executor, ready: () => Unit)
    extends RecordFetcher {
  @volatile private var outstanding: Option[CompletableFuture[FetchOutcome]] = None

  override def poll(limit: Int): Option[FetchOutcome] = outstanding match {
    case None =>
      val f = CompletableFuture.supplyAsync(() => fetcher.fetch(limit), executor)
      outstanding = Some(f)
      f.whenComplete((_, _) => ready())
      None
    case Some(f) if f.isDone =>
      outstanding = None
      Some(outcomeOf(f))
    case Some(_) => None
  }

  override def fetch(limit: Int): FetchOutcome = outstanding match {
    case Some(f) =>
      outstanding = None
      outcomeOf(f)
    case None => fetcher.fetch(limit)
  }

  override def calls(api: String): Long = fetcher.calls(api)
  override def tipProbe: Option[TipProbe] = fetcher.tipProbe
  override def waitUntil(deadlineNanos: Long): Unit = fetcher.waitUntil(deadlineNanos)

  /** The fetcher's failure as it was thrown, not wrapped. */
  private def outcomeOf(f: CompletableFuture[FetchOutcome]): FetchOutcome =
    try f.join()
    catch { case e: CompletionException if e.getCause != null => throw e.getCause }

  /** Waits for a fetch still running; its outcome is dropped (the reader stopped before taking it). */
  def awaitIdle(): Unit = {
    outstanding.foreach(f =>
      try f.join()
      catch { case _: Throwable => }
    )
    outstanding = None
  }

  override def close(): Unit =
    try awaitIdle()
    finally fetcher.close()
}
