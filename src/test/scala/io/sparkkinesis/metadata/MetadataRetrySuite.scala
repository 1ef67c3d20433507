package io.sparkkinesis.metadata

import java.io.{IOException, InterruptedIOException}
import java.net.SocketTimeoutException
import java.nio.channels.ClosedByInterruptException

import io.sparkkinesis.config.RetryPolicy
import org.scalatest.funsuite.AnyFunSuite

class MetadataRetrySuite extends AnyFunSuite {

  private val policy = RetryPolicy(3, 1, 1)

  /** Runs an operation that throws `errors` in turn, then answers "done"; returns the calls made and the outcome. */
  private def run(errors: Exception*): (Int, Either[Throwable, String]) = {
    var calls = 0
    val outcome =
      try
        Right(MetadataRetry(policy, "test write") {
          calls += 1
          if (calls <= errors.size) throw errors(calls - 1)
          "done"
        })
      catch { case e: Exception => Left(e) }
    (calls, outcome)
  }

  test("an I/O error caused by an interrupt, with the thread's flag cleared, is not retried") {
    // As Hadoop's Shell reports an interrupt while it waits for the chmod of a file being created.
    val shell = new InterruptedIOException("java.lang.InterruptedException")
    shell.initCause(new InterruptedException())
    val (calls, outcome) = run(new IOException("create failed", shell))
    assert(calls == 1 && outcome.left.exists(_.getCause eq shell), outcome)
    assert(!Thread.currentThread().isInterrupted)
  }

  test("an interrupted channel and an InterruptedException are not retried either") {
    assert(run(new ClosedByInterruptException())._1 == 1)
    assert(run(new InterruptedException())._1 == 1)
  }

  test("a timeout (an InterruptedIOException that no interrupt caused) and other I/O errors are retried") {
    val (calls, outcome) = run(new SocketTimeoutException("read timed out"), new IOException("disk busy"))
    assert(calls == 3 && outcome == Right("done"), outcome)
  }
}
