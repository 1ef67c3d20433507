package io.sparkkinesis.sink

import java.math.BigInteger
import java.nio.charset.StandardCharsets

import io.sparkkinesis.client.StreamSummary.DefaultMaxRecordBytes
import org.apache.spark.sql.catalyst.InternalRow

/**
 * One row as the producer takes it. `explicitHashKey` is null when the row has none; so is `partitionKey`, for a
 * stream with service-managed record distribution only.
 */
private[sink] final case class SinkRecord(partitionKey: String, explicitHashKey: String, data: Array[Byte])

/** Turns rows into records, refusing rows that Kinesis cannot take, with the reason. */
private[sparkkinesis] object UserRecords {

  val MaxPartitionKeyChars: Int = 256
  private val MaxHashKey = BigInteger.ONE.shiftLeft(128).subtract(BigInteger.ONE)

  /** `maxRecordBytes`: the stream's limit; `limitNote` follows the message of a row over it. */
  def fromRow(
      row: InternalRow,
      columns: SinkColumns,
      maxRecordBytes: Long = DefaultMaxRecordBytes,
      limitNote: String = ""
  ): Either[String, SinkRecord] = {
    val data =
      if (row.isNullAt(columns.data)) null
      else if (columns.dataIsString) row.getUTF8String(columns.data).getBytes
      else row.getBinary(columns.data)
    val key = columns.partitionKey.filterNot(row.isNullAt).map(i => row.getUTF8String(i).toString).orNull
    val hash = columns.explicitHashKey.filterNot(row.isNullAt).map(i => row.getUTF8String(i).toString).orNull
    check(key, hash, data, columns.keyOptional, maxRecordBytes, limitNote)
  }

  /**
   * The record, or what is wrong with it (never echoing the data, which may be sensitive). `keyOptional`: the stream
   * has service-managed record distribution, where a record may have no partition key (null; never an empty one).
   * A record counts as Kinesis counts it: its data and its partition key's UTF-8 bytes, against `maxRecordBytes`.
   */
  def check(
      partitionKey: String,
      explicitHashKey: String,
      data: Array[Byte],
      keyOptional: Boolean = false,
      maxRecordBytes: Long = DefaultMaxRecordBytes,
      limitNote: String = ""
  ): Either[String, SinkRecord] =
    if (partitionKey == null && !keyOptional)
      Left(
        s"${SinkSchema.PartitionKey} is null; every row needs a partition key, as the stream places records by " +
          "partition key (RecordDistributionStrategy USER_PARTITION_KEY). Fill the column, for example with " +
          s"coalesce(${SinkSchema.PartitionKey}, uuid()); only a stream with service-managed record distribution " +
          "(AUTO) takes rows without one"
      )
    else if (data == null)
      Left(s"${SinkSchema.Data} is null; every row needs data (an empty value is allowed)")
    else if (partitionKey != null && (partitionKey.isEmpty || partitionKey.length > MaxPartitionKeyChars))
      Left(
        s"${SinkSchema.PartitionKey} has ${partitionKey.length} characters; " +
          s"Kinesis allows 1 to $MaxPartitionKeyChars"
      )
    else {
      val keyBytes = if (partitionKey == null) 0 else partitionKey.getBytes(StandardCharsets.UTF_8).length
      val size = data.length.toLong + keyBytes
      if (size > maxRecordBytes)
        Left(
          s"the record is $size bytes (${data.length} bytes of ${SinkSchema.Data} and a $keyBytes-byte partition key), " +
            s"over the stream's limit of $maxRecordBytes bytes (MaxRecordSizeInKiB ${maxRecordBytes / 1024}); " +
            s"${describeKey(partitionKey)}$limitNote"
        )
      else hashKeyProblem(explicitHashKey).toLeft(SinkRecord(partitionKey, explicitHashKey, data))
    }

  /** How messages name a row's partition key: its first 40 characters. */
  def describeKey(partitionKey: String): String =
    if (partitionKey == null) "no partition key"
    else s"partition key '${if (partitionKey.length > 40) partitionKey.take(40) + "..." else partitionKey}'"

  private def hashKeyProblem(hashKey: String): Option[String] =
    if (hashKey == null) None
    else {
      val allowed = s"a decimal integer from 0 to $MaxHashKey (2^128 - 1)"
      val shown = if (hashKey.length > 60) hashKey.take(60) + "..." else hashKey
      if (hashKey.isEmpty || !hashKey.forall(c => c >= '0' && c <= '9'))
        Some(s"${SinkSchema.ExplicitHashKey} '$shown' is not $allowed")
      else if (new BigInteger(hashKey).compareTo(MaxHashKey) > 0)
        Some(s"${SinkSchema.ExplicitHashKey} '$shown' is out of range: expected $allowed")
      else None
    }
}
