package io.sparkkinesis.reader

import java.util.concurrent.{CompletableFuture, CompletionException, Executor}

import scala.util.Try

/**
 * Runs another fetcher's fetches on `executor`, so that one thread can read several shards at once: [[poll]] asks for
 * a fetch and returns; once it is done, `ready` is called (on the fetching thread) and the next [[poll]] with the
 * same limit returns the outcome. A fetcher's waits (pacing, back-off, a subscription's next event) then hold up only
 * its own shard. One fetch at a time, and only when asked: the wrapped fetcher never runs ahead of what its reader
 * took; it stays its factory's to release (after [[awaitIdle]]). The tip probe that confirms held pages under a
 * pending run bound ([[ShardReader]]) is made on the fetching thread too, right after the fetch the reader confirms
 * after ([[confirmAfterFetch]]); [[tipProbe]] hands its result over.
 */
private[sparkkinesis] final class AsyncFetcher(fetcher: RecordFetcher, executor: Executor, ready: () => Unit)
    extends RecordFetcher {
  @volatile private var outstanding: Option[CompletableFuture[FetchOutcome]] = None
  @volatile private var probeAfter: FetchOutcome => Option[String] = (_ => None)
  // The probe made after the last fetch: the iterator it polled and what it returned or threw.
  @volatile private var probed: Option[(String, Try[TipProbe.Result])] = None

  /**
   * The tip iterator to probe after a fetch with a given outcome, if any; asked on the fetching thread while the
   * reader waits for that fetch (so its state does not change meanwhile).
   */
  def confirmAfterFetch(iteratorToProbe: FetchOutcome => Option[String]): Unit = probeAfter = iteratorToProbe

  override def poll(limit: Int): Option[FetchOutcome] = outstanding match {
    case None =>
      probed = None
      val f = CompletableFuture.supplyAsync(() => fetchThenProbe(limit), executor)
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

  private def fetchThenProbe(limit: Int): FetchOutcome = {
    val outcome = fetcher.fetch(limit)
    for (probe <- fetcher.tipProbe; iterator <- probeAfter(outcome))
      probed = Some(iterator -> Try(probe.poll(iterator)))
    outcome
  }

  override def calls(api: String): Long = fetcher.calls(api)

  /** The wrapped fetcher's probe, answering a poll of the iterator just probed with that probe's result, once. */
  override val tipProbe: Option[TipProbe] = fetcher.tipProbe.map { underlying => (iterator: String) =>
    probed match {
      case Some((at, result)) if at == iterator =>
        probed = None
        result.get
      case _ => underlying.poll(iterator)
    }
  }
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
