package io.sparkkinesis.sink

import java.util.concurrent.{Executors, TimeUnit}
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._

import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.errors.KinesisRuntimeException
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.concurrent.Eventually
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.{Millis, Seconds, Span}

/** The writer's at-least-once contract against a fake producer whose acknowledgements the test releases. */
class KinesisDataWriterSuite extends AnyFunSuite with Eventually {

  // Deadlines only: each wait ends as soon as its condition holds. Generous, as CI shares 2 cores with Spark.
  implicit override val patienceConfig: PatienceConfig = PatienceConfig(Span(60, Seconds), Span(5, Millis))
  private val Deadline = 60.seconds

  /** Holds every record's callback until the test settles it; shared by several writers like the real pool. */
  private final class FakeProducer(onFlush: () => Unit = () => ()) extends RecordProducer {
    val pending = mutable.LinkedHashMap.empty[String, RecordOutcome => Unit]
    var flushes = 0
    var roomChecks = 0 // calls of outstandingRecords: a writer waiting for room asks again and again

    override def add(streamName: String, record: SinkRecord, onOutcome: RecordOutcome => Unit): Unit =
      synchronized(pending(new String(record.data, "UTF-8")) = onOutcome)
    override def outstandingRecords: Long = synchronized { roomChecks += 1; pending.size.toLong }
    override def flush(): Unit = { synchronized(flushes += 1); onFlush() }

    def settle(data: String, outcome: RecordOutcome): Unit = {
      val callback = synchronized(pending.remove(data)).getOrElse(fail(s"no pending record $data"))
      callback(outcome)
    }
  }

  private val columns =
    SinkColumns(data = 0, dataIsString = true, partitionKey = Some(1), explicitHashKey = None)

  private def config(extra: (String, String)*) = SinkConfig.parse(
    Map(
      "kinesis.streamName" -> "s",
      "kinesis.region" -> "us-east-1",
      "kinesis.sink.flushWaitTimeMs" -> "5"
    ) ++ extra,
    () => None
  )

  private def row(data: String) = InternalRow(UTF8String.fromString(data), UTF8String.fromString("key"))

  private val pool = Executors.newCachedThreadPool()
  private implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)

  test("a task's commit waits for its own records only, not for other tasks' records") {
    val producer = new FakeProducer
    val a = new KinesisDataWriter(config(), columns, producer, partitionId = 0)
    val b = new KinesisDataWriter(config(), columns, producer, partitionId = 1)
    Seq("a1", "a2").foreach(d => a.write(row(d)))
    Seq("b1").foreach(d => b.write(row(d)))
    val commitA = Future(a.awaitAcknowledged())
    producer.settle("a1", RecordOutcome.Acknowledged)
    // The commit flushes once per look at its acknowledgements: two more flushes, and it has looked since a1.
    val flushed = producer.synchronized(producer.flushes)
    eventually(assert(producer.synchronized(producer.flushes) >= flushed + 2 || commitA.isCompleted))
    assert(!commitA.isCompleted, "committed before a2 was acknowledged")
    producer.settle("a2", RecordOutcome.Acknowledged)
    // b1 is still outstanding in the shared producer: a's commit does not wait for it.
    assert(Await.result(commitA, Deadline) == 2L)
    assert(producer.outstandingRecords == 1)
    assert(producer.synchronized(producer.flushes) > 0, "the commit flushes while it waits")
    producer.settle("b1", RecordOutcome.Acknowledged)
    assert(b.awaitAcknowledged() == 1L)
    assert(b.commit() == null, "a task sends no message of this jar's classes to the driver")
  }

  test("a failed record fails the commit with the producer's reason and the row") {
    val producer = new FakeProducer
    val writer = new KinesisDataWriter(config(), columns, producer, partitionId = 4)
    Seq("r0", "r1", "r2").foreach(d => writer.write(row(d)))
    producer.settle("r0", RecordOutcome.Acknowledged)
    producer.settle(
      "r1",
      RecordOutcome.Failed("attempt 1: ProvisionedThroughputExceededException: slow down")
    )
    // r2 is still pending: the failure ends the wait at once.
    val error = intercept[KinesisRuntimeException](writer.commit())
    assertCondition(error, "KINESIS_SINK_RECORD_FAILED")
    assert(
      error.getMessage == "Row 1 of partition 4 (partition key 'key') was not written to stream s: " +
        "attempt 1: ProvisionedThroughputExceededException: slow down"
    )
  }

  test("a failure seen while writing fails the next write") {
    val producer = new FakeProducer
    val writer = new KinesisDataWriter(config(), columns, producer, partitionId = 0)
    writer.write(row("r0"))
    producer.settle("r0", RecordOutcome.Failed("expired"))
    assert(intercept[KinesisRuntimeException](writer.write(row("r1"))).getMessage.endsWith("expired"))
  }

  test("a bad row fails with its index and problem before reaching the producer") {
    val producer = new FakeProducer
    val writer = new KinesisDataWriter(config(), columns, producer, partitionId = 2)
    writer.write(row("ok"))
    val error =
      intercept[IllegalArgumentException](writer.write(InternalRow(null, UTF8String.fromString("k"))))
    assert(error.getMessage.startsWith("Row 1 of partition 2 cannot be written to Kinesis: data is null"))
    assertCondition(error, "KINESIS_SINK_INVALID_ROW")
    assert(producer.outstandingRecords == 1)
  }

  test("writes wait while the shared producer holds maxOutstandingRecords") {
    val producer = new FakeProducer
    val writer =
      new KinesisDataWriter(config("kinesis.sink.maxOutstandingRecords" -> "2"), columns, producer, 0)
    writer.write(row("r0"))
    writer.write(row("r1"))
    val checked = producer.synchronized(producer.roomChecks)
    val third = Future(writer.write(row("r2")))
    // Two looks at a full producer by the third write, and it is waiting.
    eventually(assert(producer.synchronized(producer.roomChecks) >= checked + 2 || third.isCompleted))
    assert(!third.isCompleted && producer.outstandingRecords == 2)
    producer.settle("r0", RecordOutcome.Acknowledged)
    Await.result(third, Deadline)
    eventually(assert(producer.outstandingRecords == 2))
    Seq("r1", "r2").foreach(producer.settle(_, RecordOutcome.Acknowledged))
    assert(writer.awaitAcknowledged() == 3L)
  }

  test("a commit gives up when the producer never answers, once its timeout has passed on its clock") {
    // The writer's clock advances one second at each flush, so the 10.3 s timeout passes in a few milliseconds.
    val clock = new AtomicLong(0L)
    val stepMs = 1000L
    val c = config("kinesis.sink.recordTtl" -> "100", "kinesis.sink.requestTimeoutMs" -> "100")
    assert(c.commitTimeoutMs == 10300L)
    val producer = new FakeProducer(onFlush = () => clock.addAndGet(TimeUnit.MILLISECONDS.toNanos(stepMs)))
    val writer = new KinesisDataWriter(c, columns, producer, 0, nanoTime = () => clock.get())
    writer.write(row("r0"))
    val error = intercept[KinesisRuntimeException](writer.commit())
    assertCondition(error, "KINESIS_SINK_ACK_TIMEOUT")
    assert(error.getMessage.startsWith("1 of 1 rows of partition 0 were still unacknowledged 10300 ms after"))
    // It waited until the clock passed the timeout, not longer: the 11th flush took it from 10 s to 11 s.
    assert(producer.flushes == 11 && TimeUnit.NANOSECONDS.toMillis(clock.get()) == 11 * stepMs)
  }
}
