package io.sparkkinesis.source

import io.sparkkinesis.client.KinesisRecord
import io.sparkkinesis.reader._
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow
import org.apache.spark.unsafe.types.UTF8String

/** Rows of the read schema ([[KinesisScan.schema]]) for the user records of one shard, for every kind of reader. */
private[sparkkinesis] final class ShardRows(
    streamName: String,
    shardId: String,
    includeSubSequenceNumber: Boolean = false
) {
  private val stream = UTF8String.fromString(streamName)
  private val shard = UTF8String.fromString(shardId)
  // The sub-records of one aggregate share its sequence number (and often a partition key): encoded once.
  private var lastRecord: KinesisRecord = _
  private var sequenceNumber: UTF8String = _
  private var lastKey: String = _
  private var partitionKey: UTF8String = _

  def row(record: KinesisRecord, user: UserRecord): InternalRow = {
    if (record ne lastRecord) {
      lastRecord = record
      sequenceNumber = UTF8String.fromString(record.sequenceNumber)
    }
    if (user.partitionKey ne lastKey) {
      lastKey = user.partitionKey
      partitionKey = UTF8String.fromString(lastKey)
    }
    val arrivalMicros = record.approximateArrivalMillis * 1000L // Spark's timestamps are microseconds
    val values = Array[Any](user.data, stream, partitionKey, sequenceNumber, arrivalMicros, shard)
    new GenericInternalRow(
      // The index in its KPL aggregate; 0 for a plain record (whose subIndex is -1).
      if (includeSubSequenceNumber) values :+ math.max(user.subIndex, 0).toLong else values
    )
  }
}
