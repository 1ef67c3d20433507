package io.sparkkinesis.sink

import java.util.concurrent.TimeUnit

import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.errors.KinesisErrors
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.write._
import org.apache.spark.sql.connector.write.streaming.{StreamingDataWriterFactory, StreamingWrite}
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend
import org.slf4j.LoggerFactory

/**
 * `df.write` and `writeStream` to Kinesis: the input schema and the stream's existence are checked here, on the
 * driver, when the write starts. Streaming writes accept the append and the update output modes (the latter is what
 * real-time mode runs): either way each row becomes one Kinesis user record, as Spark's Kafka sink does.
 */
private[sparkkinesis] final class KinesisWriteBuilder(config: SinkConfig, info: LogicalWriteInfo)
    extends WriteBuilder
    with SupportsStreamingUpdateAsAppend {

  override def build(): Write = {
    // The partition key column is checked once the stream's record distribution is known (KinesisWrite.factory).
    val columns = SinkSchema.validate(info.schema(), keyOptional = true).fold(e => throw e, identity)
    val target =
      try TargetStreamCheck.verify(config)
      catch {
        // A missing stream cannot be one that takes rows without a key: an input without the column is reported
        // as lacking it first, as for any stream that needs a key.
        case missing: IllegalArgumentException if columns.partitionKey.isEmpty =>
          columns.forStream(serviceManaged = false, config.streamName).fold(e => throw e, _ => throw missing)
      }
    KinesisWrite.factory(config, columns, target) // fails now when the input lacks a key the stream needs
    new KinesisWrite(config, columns, target)
  }
}

/**
 * `target`: how the stream placed records, and its record size limit, when the write started. A batch write keeps it;
 * a streaming write asks again when each later micro-batch starts, so a stream switched while the query runs is
 * written the right way from the next batch on (one DescribeStreamSummary per batch).
 */
private[sparkkinesis] final class KinesisWrite(config: SinkConfig, columns: SinkColumns, target: TargetStream)
    extends Write {

  /** Shown in plans and the UI: the config holds no credentials. */
  override def description(): String =
    s"KinesisWrite[stream=${config.streamName}, region=${config.client.region}, " +
      s"endpoint=${config.client.endpointUrl}, producer=${config.producer.producer}, " +
      s"aggregation=${config.producer.aggregationEnabled}]"

  override def toBatch: BatchWrite = new KinesisBatchWrite(KinesisWrite.factory(config, columns, target))

  override def toStreaming: StreamingWrite = new KinesisStreamingWrite(config, columns, target)
}

private[sparkkinesis] object KinesisWrite {

  /** The writers' factory for a stream that places and limits records as `target` says; fails when it cannot be. */
  def factory(config: SinkConfig, columns: SinkColumns, target: TargetStream): KinesisWriterFactory = {
    val serviceManaged = target.distribution == RecordDistribution.ServiceManaged
    val checked = columns.forStream(serviceManaged, config.streamName).fold(e => throw e, identity)
    val applied = TargetStreamCheck.applyTo(config, target.distribution)
    new KinesisWriterFactory(TargetStreamCheck.withRecordLimit(applied, target.maxRecordBytes), checked)
  }
}

/** Nothing to do on the driver: every task has had each of its rows acknowledged before it committed. */
private[sparkkinesis] final class KinesisBatchWrite(factory: KinesisWriterFactory) extends BatchWrite {
  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory = factory
  override def commit(messages: Array[WriterCommitMessage]): Unit = ()
  override def abort(messages: Array[WriterCommitMessage]): Unit = ()
}

private[sparkkinesis] final class KinesisStreamingWrite(
    config: SinkConfig,
    columns: SinkColumns,
    atStart: TargetStream
) extends StreamingWrite {
  // The first batch uses what the write's start learnt; each later one asks again.
  private var started = false

  override def createStreamingWriterFactory(info: PhysicalWriteInfo): StreamingDataWriterFactory =
    synchronized {
      val target = if (started) TargetStreamCheck.verify(config) else atStart
      started = true
      KinesisWrite.factory(config, columns, target)
    }
  override def commit(epochId: Long, messages: Array[WriterCommitMessage]): Unit = ()
  override def abort(epochId: Long, messages: Array[WriterCommitMessage]): Unit = ()
}

private[sparkkinesis] final class KinesisWriterFactory(config: SinkConfig, columns: SinkColumns)
    extends DataWriterFactory
    with StreamingDataWriterFactory {

  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] = {
    val producer = ProducerPool.acquire(config.producer, config.client)
    new KinesisDataWriter(config, columns, producer.value, partitionId, release = () => producer.close())
  }

  override def createWriter(partitionId: Int, taskId: Long, epochId: Long): DataWriter[InternalRow] =
    createWriter(partitionId, taskId)
}

/**
 * Writes one task's rows through the executor's shared producer. At-least-once: `commit` returns only once every
 * row of this task is acknowledged by Kinesis, and the task fails with the producer's reason if any row failed.
 * `close` hands the producer back (`release`). `nanoTime` is the clock of the commit's timeout.
 */
private[sparkkinesis] final class KinesisDataWriter(
    config: SinkConfig,
    columns: SinkColumns,
    producer: RecordProducer,
    partitionId: Int,
    release: () => Unit = () => (),
    nanoTime: () => Long = () => System.nanoTime()
) extends DataWriter[InternalRow] {
  private val log = LoggerFactory.getLogger(classOf[KinesisDataWriter])
  private val acks = new TaskAcks
  private var rowIndex = 0L

  override def write(row: InternalRow): Unit = {
    failIfARecordFailed()
    val record = UserRecords
      .fromRow(row, columns, config.producer.maxRecordBytes, limitNote)
      .fold(problem => throw KinesisErrors.sinkInvalidRow(rowIndex, partitionId, problem), identity)
    awaitRoomInProducer()
    val index = rowIndex
    acks.recordSent()
    producer.add(
      config.streamName,
      record,
      {
        case RecordOutcome.Acknowledged => acks.recordSucceeded()
        case RecordOutcome.Failed(why) =>
          val key = UserRecords.describeKey(record.partitionKey)
          acks.recordFailed(KinesisErrors.sinkRecordFailed(index, partitionId, key, config.streamName, why))
      }
    )
    rowIndex += 1
  }

  /**
   * Returns once every row of this task is acknowledged, with no message (`null`, as Spark's own no-op writer does):
   * the driver needs nothing from a task. A message of a class of this jar would also fail every write when a Spark
   * Connect client added the jar to its session (`spark.addArtifacts`): the driver reads task results with Spark's
   * class loader, which does not see that jar ("ClassNotFound with classloader").
   */
  override def commit(): WriterCommitMessage = {
    awaitAcknowledged()
    null
  }

  /** Waits until every row this task wrote is acknowledged, or fails; returns how many rows it wrote. */
  private[sink] def awaitAcknowledged(): Long = {
    val deadline = nanoTime() + TimeUnit.MILLISECONDS.toNanos(config.commitTimeoutMs)
    while (acks.pending > 0 && acks.failure.isEmpty) {
      if (nanoTime() > deadline)
        throw KinesisErrors.sinkAckTimeout(acks.pending, acks.sentCount, partitionId, config.commitTimeoutMs)
      producer.flush()
      acks.awaitSettled(config.flushWaitTimeMs)
    }
    failIfARecordFailed()
    acks.sentCount
  }

  /** Rows already handed to the producer are still sent (at-least-once allows it); nothing is undone. */
  override def abort(): Unit =
    log.warn(
      s"Task for partition $partitionId aborted with ${acks.pending} of ${acks.sentCount} rows unacknowledged"
    )

  override def close(): Unit = release()

  private def failIfARecordFailed(): Unit = acks.failure.foreach(failed => throw failed)

  /** Back-pressure: the shared producer holds at most maxOutstandingRecords, so executor memory stays bounded. */
  private def awaitRoomInProducer(): Unit =
    while (producer.outstandingRecords >= config.maxOutstandingRecords) {
      failIfARecordFailed()
      Thread.sleep(1)
    }

  // Follows the message of a row over the limit: where the limit came from when it is not the stream's own.
  private val limitNote =
    if (config.recordLimitKnown) ""
    else
      s". The sink could not read the stream's own limit (DescribeStreamSummary was refused or failed when the write " +
        "started), so it applies Kinesis' default of 1 MiB; to write larger records to a stream created with a " +
        "higher MaxRecordSizeInKiB, grant kinesis:DescribeStreamSummary to the writer"
}
