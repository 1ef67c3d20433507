package io.sparkkinesis.sink

import java.math.BigInteger
import java.nio.charset.StandardCharsets

import org.apache.spark.sql.catalyst.InternalRow

/** One row as the producer takes it. `explicitHashKey` is null when the row has none. */
final case class SinkRecord(partitionKey: String, explicitHashKey: String, data: Array[Byte])

/** Turns rows into records, refusing rows that Kinesis cannot take, with the reason. */
object UserRecords {

  /** A Kinesis record holds at most this many bytes of data and partition key together. */
  val MaxRecordBytes: Int = 1024 * 1024
  val MaxPartitionKeyChars: Int = 256
  private val MaxHashKey = BigInteger.ONE.shiftLeft(128).subtract(BigInteger.ONE)

  def fromRow(row: InternalRow, columns: SinkColumns): Either[String, SinkRecord] = {
    val data =
      if (row.isNullAt(columns.data)) null
      else if (columns.dataIsString) row.getUTF8String(columns.data).getBytes
      else row.getBinary(columns.data)
    val key =
      if (row.isNullAt(columns.partitionKey)) null else row.getUTF8String(columns.partitionKey).toString
    val hash = columns.explicitHashKey.filterNot(row.isNullAt).map(i => row.getUTF8String(i).toString).orNull
    check(key, hash, data)
  }

  /** The record, or what is wrong with it (never echoing the data, which may be sensitive). */
  def check(partitionKey: String, explicitHashKey: String, data: Array[Byte]): Either[String, SinkRecord] =
    if (partitionKey == null) Left(s"${SinkSchema.PartitionKey} is null; every row needs a partition key")
    else if (data == null)
      Left(s"${SinkSchema.Data} is null; every row needs data (an empty value is allowed)")
    else if (partitionKey.isEmpty || partitionKey.length > MaxPartitionKeyChars)
      Left(
        s"${SinkSchema.PartitionKey} has ${partitionKey.length} characters; " +
          s"Kinesis allows 1 to $MaxPartitionKeyChars"
      )
    else {
      val keyBytes = partitionKey.getBytes(StandardCharsets.UTF_8).length
      if (data.length.toLong + keyBytes > MaxRecordBytes)
        Left(
          s"${SinkSchema.Data} is ${data.length} bytes, which with the $keyBytes-byte partition key exceeds the " +
            s"$MaxRecordBytes bytes a Kinesis record can hold"
        )
      else
        hashKeyProblem(explicitHashKey)
          .map(Left(_))
          .getOrElse(Right(SinkRecord(partitionKey, explicitHashKey, data)))
    }

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
