package io.sparkkinesis.sink

import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.ReentrantLock

import io.sparkkinesis.errors.KinesisRuntimeException

/**
 * The acknowledgements of ONE task's records. The producer is shared by every task of the executor, so its
 * outstanding count says nothing about a given task; each task counts its own records instead, and its commit
 * waits for exactly those. Callbacks arrive on producer threads.
 */
private[sparkkinesis] final class TaskAcks {
  private val lock = new ReentrantLock()
  private val changed = lock.newCondition()
  private var sent = 0L
  private var acknowledged = 0L
  private var firstFailure: Option[KinesisRuntimeException] = None

  def recordSent(): Unit = locked(sent += 1)

  def recordSucceeded(): Unit = locked { acknowledged += 1; changed.signalAll() }

  /** Keeps the first failure (KINESIS_SINK_RECORD_FAILED): it is the one the task fails with. */
  def recordFailed(error: KinesisRuntimeException): Unit = locked {
    acknowledged += 1
    if (firstFailure.isEmpty) firstFailure = Some(error)
    changed.signalAll()
  }

  def pending: Long = locked(sent - acknowledged)
  def sentCount: Long = locked(sent)
  def failure: Option[KinesisRuntimeException] = locked(firstFailure)

  /** Waits until every record sent so far is settled, a record failed, or `timeoutMs` passed. */
  def awaitSettled(timeoutMs: Long): Unit = locked {
    var remaining = TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    while (sent > acknowledged && firstFailure.isEmpty && remaining > 0)
      remaining = changed.awaitNanos(remaining)
  }

  private def locked[T](body: => T): T = {
    lock.lock()
    try body
    finally lock.unlock()
  }
}
