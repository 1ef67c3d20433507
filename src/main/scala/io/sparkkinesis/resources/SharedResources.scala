package io.sparkkinesis.resources

import java.util.concurrent._
import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import io.sparkkinesis.compat.StringNumbers
import io.sparkkinesis.errors.KinesisErrors
import org.slf4j.LoggerFactory

/** Daemon threads, each named by `name` when made. */
private[sparkkinesis] object DaemonThreads {

  def apply(name: => String): ThreadFactory = { r =>
    val t = new Thread(r, name)
    t.setDaemon(true)
    t
  }

  /** A pool of up to `threads` such threads, each ending after `idleSeconds` without work; its queue is unbounded. */
  def pool(name: => String, threads: Int, idleSeconds: Long): ThreadPoolExecutor = {
    val queue = new LinkedBlockingQueue[Runnable]()
    val pool = new ThreadPoolExecutor(threads, threads, idleSeconds, TimeUnit.SECONDS, queue, apply(name))
    pool.allowCoreThreadTimeOut(true)
    pool
  }
}

/** One holder's use of a shared resource. `close` hands it back: the first call counts, later ones do nothing. */
private[sparkkinesis] final class Lease[+V] private[resources] (val value: V, release: () => Unit)
    extends AutoCloseable {
  private val released = new AtomicBoolean(false)
  override def close(): Unit = if (released.compareAndSet(false, true)) release()

  /** `build(value)`, for what takes this lease over (and closes it when it closes): if it fails, the lease is closed. */
  def closeIfFails[T](build: V => T): T =
    try build(value)
    catch { case e: Throwable => close(); throw e }

  /** A lease on a part of this resource: closing it closes this one. */
  def map[W](part: V => W): Lease[W] = new Lease(part(value), () => close())
}

private[sparkkinesis] object Lease {

  /** A lease on a resource of its own, not shared: closing it runs `release` (once). */
  def owning[V](value: V)(release: () => Unit): Lease[V] = new Lease(value, release)
}

/**
 * Resources (clients, producers, credentials providers) shared by everything in this JVM that asks for the same key.
 * `acquire(key)` leases the resource of that key, opening it when there is none. When its last lease is handed back,
 * it stays open for the idle grace period (JVM system property [[SharedResources.IdleProperty]], read at each
 * acquire), so the consecutive tasks and batches of an executor share one resource; then it is closed. At JVM
 * shutdown every resource is closed, leased or not. A resource found dead (`isDead`) by an acquire is closed at once
 * and replaced. Opening (only acquirers of the same key wait for it) and closing hold no lock of the cache.
 */
private[sparkkinesis] final class SharedResources[K, V](
    what: String,
    open: K => V,
    close: V => Unit,
    isDead: V => Boolean = (_: V) => false,
    env: SharedResources.Environment = SharedResources.SystemEnvironment
) {
  private val log = LoggerFactory.getLogger(classOf[SharedResources[_, _]])
  private val lock = new Object
  private val entries = scala.collection.mutable.HashMap.empty[K, Entry]

  private final class Entry(val key: K) {
    // Guarded by `lock`.
    var leases = 0
    var idleSince = 0L
    var graceNanos = 0L
    var checkPending = false
    var retired = false // out of `entries`: closed, or about to be

    // Guarded by the entry itself; volatile so that `isDead` can look without waiting for an open in progress.
    @volatile private var resource: Option[V] = None
    private var closed = false

    def current: Option[V] = resource

    def value: V = synchronized {
      if (closed) throw new IllegalStateException(s"The $what was closed (the JVM is shutting down)")
      resource.getOrElse {
        val opened = open(key)
        resource = Some(opened)
        opened
      }
    }

    def closeResource(): Unit = synchronized {
      closed = true
      resource.foreach { r =>
        try close(r)
        catch { case NonFatal(e) => log.warn(s"Could not close a $what cleanly: $e") }
      }
      resource = None
    }
  }

  /** Registers the shutdown close before the first resource can exist. */
  env.onShutdown(() => closeAll())

  /** A lease on the resource of `key`; the caller must close it when done (at the end of its task, or stop). */
  def acquire(key: K): Lease[V] = {
    val grace = env.idleNanos()
    val (entry, dead) = lock.synchronized {
      val dead = entries.get(key).filter(_.current.exists(isDead))
      dead.foreach { d =>
        entries.remove(key)
        d.retired = true
      }
      val entry = entries.getOrElseUpdate(key, new Entry(key))
      entry.leases += 1
      entry.graceNanos = grace
      (entry, dead)
    }
    dead.foreach { d =>
      log.warn(s"A $what has stopped working; opening a new one")
      d.closeResource()
    }
    val value =
      try entry.value
      catch { case e: Throwable => release(entry); throw e }
    new Lease(value, () => release(entry))
  }

  private def release(entry: Entry): Unit = {
    val check = lock.synchronized {
      entry.leases -= 1
      if (entry.leases == 0 && !entry.retired) {
        entry.idleSince = env.nanoTime()
        if (entry.checkPending) None
        else {
          entry.checkPending = true
          Some(entry.graceNanos)
        }
      } else None
    }
    check.foreach(delay => env.schedule(delay, () => closeIfIdle(entry)))
  }

  /** Closes the entry if it is unleased and its grace period has passed; checks again later if it was revived. */
  private def closeIfIdle(entry: Entry): Unit = {
    val now = env.nanoTime()
    val (expired, again) = lock.synchronized {
      entry.checkPending = false
      if (entry.retired || entry.leases > 0) (false, None)
      else if (now - entry.idleSince >= entry.graceNanos) {
        entries.remove(entry.key)
        entry.retired = true
        (true, None)
      } else {
        entry.checkPending = true
        (false, Some(entry.idleSince + entry.graceNanos - now))
      }
    }
    if (expired) entry.closeResource()
    again.foreach(delay => env.schedule(delay, () => closeIfIdle(entry)))
  }

  /** Closes every resource, leased or not (JVM shutdown). A later acquire opens a new one. */
  def closeAll(): Unit = {
    val all = lock.synchronized {
      val list = entries.values.toList
      entries.clear()
      list.foreach(_.retired = true)
      list
    }
    all.foreach(_.closeResource())
  }

  /** The leases held on the resource of `key` (0 when it is idle or absent). */
  def leases(key: K): Int = lock.synchronized(entries.get(key).map(_.leases).getOrElse(0))
}

private[sparkkinesis] object SharedResources {

  /** JVM system property: how long an unleased resource stays open for reuse, in milliseconds. */
  val IdleProperty = "io.sparkkinesis.resourceIdleMs"
  // Longer than most processing-time triggers: a batch every few minutes still reuses its producer and clients.
  val DefaultIdleMs = 600000L

  /** The grace period per [[IdleProperty]]; a value that is not a whole number of milliseconds >= 0 is refused. */
  def idleMillis(): Long = sys.props.get(IdleProperty).fold(DefaultIdleMs) { raw =>
    StringNumbers.toLongOption(raw.trim).filter(_ >= 0).getOrElse {
      throw KinesisErrors.badSystemProperty(
        IdleProperty,
        raw,
        s"a whole number of milliseconds >= 0 (default $DefaultIdleMs)"
      )
    }
  }

  /** Time, the grace period, delayed work and the JVM's shutdown, as a cache sees them (tests give their own). */
  trait Environment {
    def nanoTime(): Long
    def idleNanos(): Long
    def schedule(delayNanos: Long, task: () => Unit): Unit
    def onShutdown(task: () => Unit): Unit
  }

  object SystemEnvironment extends Environment {

    // One daemon thread for every cache's idle checks and closes; it exits once none is pending.
    private lazy val closer = {
      val executor = new ScheduledThreadPoolExecutor(1, DaemonThreads("spark-kinesis-resource-closer"))
      executor.setKeepAliveTime(1, TimeUnit.SECONDS)
      executor.allowCoreThreadTimeOut(true)
      executor
    }

    def nanoTime(): Long = System.nanoTime()
    def idleNanos(): Long = TimeUnit.MILLISECONDS.toNanos(idleMillis())

    def schedule(delayNanos: Long, task: () => Unit): Unit =
      closer.schedule(new Runnable { def run(): Unit = task() }, delayNanos, TimeUnit.NANOSECONDS)

    def onShutdown(task: () => Unit): Unit =
      try Runtime.getRuntime.addShutdownHook(new Thread(() => task(), "spark-kinesis-resources-shutdown"))
      catch { case _: IllegalStateException => () } // the JVM is already shutting down
  }
}
