package io.sparkkinesis.sink

/** How one record ended: acknowledged by Kinesis, or failed with the producer's reason. */
private[sparkkinesis] sealed trait RecordOutcome

private[sparkkinesis] object RecordOutcome {
  case object Acknowledged extends RecordOutcome
  final case class Failed(reason: String) extends RecordOutcome
}

/** The executor-side producer the data writers use; the KPL in production, a fake in unit tests. */
private[sparkkinesis] trait RecordProducer {

  /** Hands one record over; `onOutcome` runs exactly once, on a producer thread, when it is settled. */
  def add(streamName: String, record: SinkRecord, onOutcome: RecordOutcome => Unit): Unit

  /** Records handed over and not settled yet, over every task using this producer. */
  def outstandingRecords: Long

  /** Asks the producer to send what it buffers now instead of waiting for its buffering time. */
  def flush(): Unit
}
