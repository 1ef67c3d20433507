package io.sparkkinesis.resources

import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, Executors, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable
import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/** Leases, the idle grace period, revival, dead resources, shutdown and concurrency, on a fake clock (no sleeps). */
class SharedResourcesSuite extends AnyFunSuite {

  /** Time moves only when told; delayed work runs when its time has come; shutdown hooks run when told. */
  private final class FakeEnvironment(graceMs: Long) extends SharedResources.Environment {
    private var now = 0L
    private val pending = mutable.ArrayBuffer.empty[(Long, () => Unit)]
    val shutdownHooks = mutable.ArrayBuffer.empty[() => Unit]

    def nanoTime(): Long = synchronized(now)
    def idleNanos(): Long = TimeUnit.MILLISECONDS.toNanos(graceMs)

    def schedule(delayNanos: Long, task: () => Unit): Unit = synchronized(
      pending += ((now + delayNanos, task))
    )
    def onShutdown(task: () => Unit): Unit = shutdownHooks += task
    def scheduled: Int = synchronized(pending.size)

    /** Moves the clock on, running every task due by then (including those scheduled by tasks run). */
    def advance(ms: Long): Unit = {
      val target = synchronized(now + TimeUnit.MILLISECONDS.toNanos(ms))
      var next = due(target)
      while (next.isDefined) {
        next.get()
        next = due(target)
      }
      synchronized { now = target }
    }

    private def due(target: Long): Option[() => Unit] = synchronized {
      val ready = pending.zipWithIndex.filter(_._1._1 <= target).sortBy(_._1._1).headOption
      ready.map { case ((at, task), i) =>
        pending.remove(i)
        now = math.max(now, at)
        task
      }
    }
  }

  /** Resources are numbered as opened; every open and close is recorded. */
  private final class Counting(graceMs: Long = 1000, dead: Int => Boolean = _ => false) {
    val env = new FakeEnvironment(graceMs)
    val opened = new AtomicInteger()
    private val closes = new ConcurrentHashMap[Int, AtomicInteger]()
    private val keyOf = new ConcurrentHashMap[Int, String]()

    val cache = new SharedResources[String, Int](
      "test resource",
      key => {
        val r = opened.incrementAndGet()
        keyOf.put(r, key)
        r
      },
      r => closes.computeIfAbsent(r, _ => new AtomicInteger()).incrementAndGet(),
      dead,
      env
    )
    def isClosed(r: Int): Boolean = closes.containsKey(r)

    /** The keys whose resource is open. */
    def openKeys: Set[String] = keyOf.asScala.collect { case (r, key) if !isClosed(r) => key }.toSet

    /** How many times resource `r` was closed. */
    def closedTimes(r: Int): Int = Option(closes.get(r)).map(_.get).getOrElse(0)
    def closedCount: Int = closes.size
    def closedOnceEach: Boolean = closes.values().toArray.forall(_.asInstanceOf[AtomicInteger].get == 1)
  }

  test("one resource per key, shared by every lease; different keys get different resources") {
    val c = new Counting
    val a1 = c.cache.acquire("a")
    val a2 = c.cache.acquire("a")
    val b = c.cache.acquire("b")
    assert(a1.value == a2.value && b.value != a1.value)
    assert(c.opened.get == 2 && c.cache.leases("a") == 2 && c.openKeys == Set("a", "b"))
  }

  test("a resource stays open while leased, and closes once unleased for the grace period") {
    val c = new Counting(graceMs = 1000)
    val first = c.cache.acquire("a")
    val second = c.cache.acquire("a")
    first.close()
    c.env.advance(5000)
    assert(!c.isClosed(first.value), "closed while still leased")
    second.close()
    c.env.advance(999)
    assert(!c.isClosed(first.value), "closed before the grace period passed")
    c.env.advance(1)
    assert(c.closedTimes(first.value) == 1 && c.openKeys.isEmpty)
    assert(c.env.scheduled == 0)
  }

  test("closing a lease twice hands it back once") {
    val c = new Counting
    val kept = c.cache.acquire("a")
    val twice = c.cache.acquire("a")
    twice.close()
    twice.close()
    assert(c.cache.leases("a") == 1)
    c.env.advance(10000)
    assert(!c.isClosed(kept.value))
  }

  test(
    "a lease taken within the grace period revives the resource; it closes a full grace period after its end"
  ) {
    val c = new Counting(graceMs = 1000)
    val batch1 = c.cache.acquire("a")
    batch1.close()
    c.env.advance(900)
    val batch2 = c.cache.acquire("a")
    assert(batch2.value == batch1.value && c.opened.get == 1)
    c.env.advance(500) // the first idle check comes and goes: leased again
    assert(!c.isClosed(batch1.value))
    batch2.close()
    c.env.advance(900)
    assert(!c.isClosed(batch1.value))
    c.env.advance(100)
    assert(c.isClosed(batch1.value))
  }

  test(
    "a resource released and leased again many times is checked by one pending task, not one per release"
  ) {
    val c = new Counting(graceMs = 1000)
    for (_ <- 1 to 100) c.cache.acquire("a").close()
    assert(c.env.scheduled == 1)
    c.env.advance(1000)
    assert(c.closedCount == 1 && c.opened.get == 1)
  }

  test("after the resource closed, the next lease opens a new one") {
    val c = new Counting(graceMs = 1000)
    val old = c.cache.acquire("a")
    old.close()
    c.env.advance(1000)
    val fresh = c.cache.acquire("a")
    assert(fresh.value != old.value && c.isClosed(old.value) && !c.isClosed(fresh.value))
    fresh.close()
    c.env.advance(1000)
    assert(c.isClosed(fresh.value))
  }

  test("a grace period of zero closes the resource as soon as it is handed back") {
    val c = new Counting(graceMs = 0)
    val lease = c.cache.acquire("a")
    lease.close()
    c.env.advance(0)
    assert(c.isClosed(lease.value))
  }

  test("the JVM's shutdown closes every resource, leased or idle, once") {
    val c = new Counting
    val leased = c.cache.acquire("a")
    val idle = c.cache.acquire("b")
    idle.close()
    assert(c.env.shutdownHooks.size == 1)
    c.env.shutdownHooks.foreach(_())
    assert(c.closedTimes(leased.value) == 1 && c.closedTimes(idle.value) == 1)
    leased.close()
    c.env.advance(10000)
    assert(c.closedTimes(leased.value) == 1 && c.closedTimes(idle.value) == 1)
  }

  test("a dead resource is closed at once and replaced; leases on it are handed back without harm") {
    val dead = ConcurrentHashMap.newKeySet[Int]()
    val c = new Counting(dead = r => dead.contains(r))
    val old = c.cache.acquire("a")
    dead.add(old.value)
    val fresh = c.cache.acquire("a")
    assert(fresh.value != old.value && c.closedTimes(old.value) == 1)
    old.close()
    assert(c.cache.leases("a") == 1)
    fresh.close()
    c.env.advance(1000)
    assert(c.closedTimes(old.value) == 1 && c.isClosed(fresh.value))
  }

  test("an open that fails hands the lease back and leaves nothing open; the next acquire tries again") {
    val env = new FakeEnvironment(1000)
    val attempts = new AtomicInteger()
    val cache = new SharedResources[String, Int](
      "flaky resource",
      _ => if (attempts.incrementAndGet() == 1) throw new IllegalStateException("boom") else attempts.get,
      _ => (),
      env = env
    )
    assert(intercept[IllegalStateException](cache.acquire("a")).getMessage == "boom")
    // Nothing was left open: the next acquire opens the resource anew.
    assert(cache.leases("a") == 0)
    assert(cache.acquire("a").value == 2)
  }

  test("a failing close is logged, not thrown, and the entry is gone") {
    val env = new FakeEnvironment(0)
    val opens = new AtomicInteger()
    val cache = new SharedResources[String, Int](
      "bad closer",
      _ => opens.incrementAndGet(),
      _ => throw new RuntimeException("x"),
      env = env
    )
    cache.acquire("a").close()
    env.advance(0)
    // The entry is gone: the next acquire opens a resource anew, although the close failed.
    assert(cache.acquire("a").value == 2)
  }

  test("a bad grace period is refused, naming the property") {
    val previous = sys.props.get(SharedResources.IdleProperty)
    try {
      sys.props(SharedResources.IdleProperty) = "soon"
      val e = intercept[IllegalArgumentException](SharedResources.idleMillis())
      assert(e.getMessage.contains(SharedResources.IdleProperty) && e.getMessage.contains("'soon'"))
      sys.props(SharedResources.IdleProperty) = "-1"
      intercept[IllegalArgumentException](SharedResources.idleMillis())
      sys.props(SharedResources.IdleProperty) = "2500"
      assert(SharedResources.idleMillis() == 2500)
      sys.props -= SharedResources.IdleProperty
      assert(SharedResources.idleMillis() == SharedResources.DefaultIdleMs)
    } finally previous.foreach(sys.props(SharedResources.IdleProperty) = _)
  }

  test("concurrent leases, releases and idle closes: a leased resource is never closed, each closes once") {
    val c = new Counting(graceMs = 1000)
    val threads = 6
    val pool = Executors.newFixedThreadPool(threads + 1)
    val start = new CountDownLatch(1)
    // "a" stays leased throughout (like a driver's stream), so it is opened once; "b" and "c" come and go.
    val holder = c.cache.acquire("a")
    val violations = new AtomicInteger()
    @volatile var working = true
    try {
      val work = (0 until threads).map { t =>
        pool.submit(new Runnable {
          def run(): Unit = {
            start.await()
            for (i <- 0 until 3000) {
              val lease = c.cache.acquire(Seq("a", "b", "c")((t + i) % 3))
              if (c.isClosed(lease.value)) violations.incrementAndGet()
              lease.close()
            }
          }
        })
      }
      // Idle checks run meanwhile, on their own thread, as on the real closer thread.
      val closer = pool.submit(new Runnable {
        def run(): Unit = {
          start.await()
          while (working) c.env.advance(1000)
        }
      })
      start.countDown()
      work.foreach(_.get(60, TimeUnit.SECONDS))
      working = false
      closer.get(60, TimeUnit.SECONDS)
    } finally pool.shutdownNow()
    assert(violations.get == 0, "a resource was handed out closed")
    assert(!c.isClosed(holder.value) && c.cache.leases("a") == 1)
    holder.close()
    c.env.advance(1000)
    assert(c.openKeys.isEmpty && c.env.scheduled == 0)
    assert(c.closedCount == c.opened.get, s"opened ${c.opened.get}, closed ${c.closedCount}")
    assert(c.closedOnceEach, "a resource was closed twice")
  }

  test("a lease's part: closing the part's lease hands back the whole") {
    val c = new Counting
    val part = c.cache.acquire("a").map(_.toString)
    assert(part.value == "1" && c.cache.leases("a") == 1)
    part.close()
    assert(c.cache.leases("a") == 0)
  }
}
