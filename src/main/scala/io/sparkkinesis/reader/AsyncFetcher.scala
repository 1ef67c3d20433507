package io.sparkkinesis.reader

import java.util.concurrent.{CompletableFuture, CompletionException, Executor}

import scala.util.Try

/**
 * Runs another fetcher's fetches on `executor`, so that one thread can read several shards at once: [[poll]] asks
 * for a fetch and returns; once it is done, `ready` is called (on the fetching thread) and the next [[poll]] with the
 * same limit returns the outcome. A fetcher's waits (its pacing, its back-off when throttled, a subscription's next
 * event) then hold up only its own shard.
 *
 * One fetch at a time, and only when asked: the wrapped fetcher never runs ahead of what its reader took. The
 * wrapped fetcher stays its factory's to release (after [[awaitIdle]]).
 *
 * In a `Trigger.AvailableNow` run a page is confirmed against the shard's pending bound by a tip probe made after
 * the fetch ([[ShardReader]]). Given the bound ([[confirmAfterFetch]]), that probe runs on the fetching thread too,
 * right after a fetch that returned records, and [[tipProbe]] hands its result to the reader: so the probes of a
 * task's shards do not queue on the task's thread either.
 */
final class AsyncFetcher(fetcher: RecordFetcher, executor: Executor, ready: () => Unit)
    extends RecordFetcher {
  @volatile private var outstanding: Option[CompletableFuture[FetchOutcome]] = None
  @volatile private var pendingBound: () => Option[String] = () => None
  // The probe made after the last fetch: the iterator it polled and what it returned or threw.
  @volatile private var probed: Option[(String, Try[TipProbe.Result])] = None

  /** Where the reader's pending run bound stands (its tip iterator), asked for when a fetch is scheduled. */
  def confirmAfterFetch(bound: () => Option[String]): Unit = pendingBound = bound

  override def poll(limit: Int): Option[FetchOutcome] = outstanding match {
    case None =>
      probed = None
      // Read on the reader's thread: the bound does not change while the fetch is outstanding.
      val probeAt = fetcher.tipProbe.flatMap(p => pendingBound().map(p -> _))
      val f = CompletableFuture.supplyAsync(() => fetchThenProbe(limit, probeAt), executor)
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

  private def fetchThenProbe(limit: Int, probeAt: Option[(TipProbe, String)]): FetchOutcome = {
    val outcome = fetcher.fetch(limit)
    outcome match {
      case FetchOutcome.Fetched(records, _, _, _) if records.nonEmpty =>
        probeAt.foreach { case (probe, iterator) => probed = Some(iterator -> Try(probe.poll(iterator))) }
      case _ =>
    }
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
