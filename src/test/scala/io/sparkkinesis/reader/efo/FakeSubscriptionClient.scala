package io.sparkkinesis.reader.efo

import scala.collection.mutable

import io.sparkkinesis.client._

/**
 * A fake SubscribeToShard service for one shard of `recordCount` records with sequence numbers "1".."n". Each
 * subscribe call becomes a [[FakeSubscriptionClient.Call]]; `script` decides what the service does with it (accept
 * and serve, fail, stay silent, ...). Served events honour the subscriber's demand, like the reactive stream of the
 * SDK: an event goes out only when requested. The listener is called on the thread that subscribes, requests or
 * offers (the real client calls it on the SDK's threads); the calls and their state are kept under locks all the
 * same, so that a test may read them from any thread.
 */
final class FakeSubscriptionClient(
    recordCount: Int,
    eventSize: Int = 10,
    script: FakeSubscriptionClient.Call => Unit = _.serve()
) extends ShardSubscriptionClient {
  import FakeSubscriptionClient._

  private val made = mutable.ArrayBuffer.empty[Call]

  /** Every subscribe call so far, in order. */
  def calls: Seq[Call] = synchronized(made.toList)

  def subscribe(
      consumerArn: String,
      shardId: String,
      start: IteratorStart,
      listener: SubscriptionListener
  ): () => Unit = {
    val call = new Call(this, start, listener)
    synchronized(made += call)
    script(call)
    () => call.cancelled = true
  }

  /** The events the service has after `start`, with the tip marked by 0 ms behind. */
  def eventsAfter(start: IteratorStart): Seq[SubscriptionEvent] = {
    val first = start match {
      case IteratorStart.TrimHorizon => 1
      case IteratorStart.AfterSequence(s) => s.toInt + 1
      case IteratorStart.AtSequence(s) => s.toInt
      case other => throw new IllegalArgumentException(s"not in the fake: $other")
    }
    val seqs = (first to recordCount).grouped(eventSize).toSeq
    if (seqs.isEmpty) Seq(SubscriptionEvent(Nil, Some((first - 1).toString), Some(0L), Nil))
    else
      seqs.zipWithIndex.map { case (group, i) =>
        SubscriptionEvent(
          group.map(record),
          Some(group.last.toString),
          Some(if (i == seqs.size - 1) 0L else 1000L),
          Nil
        )
      }
  }
}

object FakeSubscriptionClient {
  def record(seq: Int): KinesisRecord = KinesisRecord(s"r$seq".getBytes("UTF-8"), s"pk$seq", seq.toString, 0L)

  final class Call(client: FakeSubscriptionClient, val start: IteratorStart, listener: SubscriptionListener) {
    @volatile var cancelled = false
    private var demand = 0L
    private val pending = mutable.Queue.empty[SubscriptionEvent]
    private var deliveredEvents = 0

    /** Events delivered to the listener so far. */
    def delivered: Int = synchronized(deliveredEvents)
    private var afterPending: Option[() => Unit] = None

    /** Accepts and serves every event after the start, as requested. */
    def serve(): Unit = {
      accept()
      offer(client.eventsAfter(start): _*)
    }

    /** Accepts and serves `events` events, then runs `then` (e.g. fail or end). */
    def serveThen(events: Int)(then: Call => Unit): Unit = {
      accept()
      synchronized { afterPending = Some(() => then(this)) }
      offer(client.eventsAfter(start).take(events): _*)
    }

    def accept(): Unit = listener.onStart(new SubscriptionHandle {
      def request(events: Long): Unit = { synchronized(demand += events); pump() }
      def cancel(): Unit = cancelled = true
    })

    def offer(events: SubscriptionEvent*): Unit = { synchronized(pending ++= events); pump() }

    def fail(error: Throwable): Unit = listener.onError(error)
    def end(): Unit = listener.onEnd()

    private def pump(): Unit = {
      var next: Option[SubscriptionEvent] = None
      do {
        next = synchronized {
          if (demand > 0 && pending.nonEmpty && !cancelled) {
            demand -= 1
            deliveredEvents += 1
            Some(pending.dequeue())
          } else None
        }
        next.foreach(listener.onEvent)
      } while (next.isDefined)
      val finish = synchronized {
        if (pending.isEmpty && afterPending.isDefined) { val f = afterPending; afterPending = None; f }
        else None
      }
      finish.foreach(_())
    }
  }
}
