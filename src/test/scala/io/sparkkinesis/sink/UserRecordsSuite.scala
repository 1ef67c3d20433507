package io.sparkkinesis.sink

import java.math.BigInteger

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

class UserRecordsSuite extends AnyFunSuite {
  private val maxHashKey = BigInteger.ONE.shiftLeft(128).subtract(BigInteger.ONE).toString

  private def problem(key: String, hash: String, data: Array[Byte]) =
    UserRecords.check(key, hash, data).swap.toOption.get

  test("a row becomes a record with its bytes unchanged") {
    val columns =
      SinkColumns(data = 0, dataIsString = true, partitionKey = Some(1), explicitHashKey = Some(2))
    val row = InternalRow(UTF8String.fromString("é€"), UTF8String.fromString("k"), null)
    val record = UserRecords.fromRow(row, columns).toOption.get
    assert(record.data.sameElements("é€".getBytes("UTF-8")))
    assert(record.partitionKey == "k" && record.explicitHashKey == null)
    val binary = SinkColumns(data = 0, dataIsString = false, partitionKey = Some(1), explicitHashKey = None)
    val bytes = Array[Byte](0, -1, 7)
    assert(
      UserRecords
        .fromRow(InternalRow(bytes, UTF8String.fromString("k")), binary)
        .toOption
        .get
        .data sameElements bytes
    )
  }

  test("null partition key or data is refused with which one it was") {
    assert(problem(null, null, Array[Byte](1)).startsWith("partitionKey is null"))
    assert(problem("k", null, null).startsWith("data is null"))
    assert(UserRecords.check("k", null, Array.emptyByteArray).isRight)
  }

  test("partition keys of 1 to 256 characters only") {
    assert(problem("", null, Array[Byte](1)) == "partitionKey has 0 characters; Kinesis allows 1 to 256")
    assert(UserRecords.check("k" * 256, null, Array[Byte](1)).isRight)
    assert(problem("k" * 257, null, Array[Byte](1)).contains("257 characters"))
  }

  test("data and partition key together fit in one Kinesis record") {
    assert(UserRecords.check("k", null, new Array[Byte](1024 * 1024 - 1)).isRight)
    assert(
      problem("k", null, new Array[Byte](1024 * 1024)) ==
        "the record is 1048577 bytes (1048576 bytes of data and a 1-byte partition key), over the stream's limit " +
        "of 1048576 bytes (MaxRecordSizeInKiB 1024); partition key 'k'"
    )
    assert(problem("€", null, new Array[Byte](1024 * 1024 - 2)).contains("3-byte partition key"))
  }

  test("a stream's own limit (MaxRecordSizeInKiB up to 10 MiB) applies, counting data and partition key") {
    val limit = 10L * 1024 * 1024
    val key = "key-1"
    assert(
      UserRecords.check(key, null, new Array[Byte](limit.toInt - key.length), maxRecordBytes = limit).isRight
    )
    val over =
      UserRecords.check(key, null, new Array[Byte](limit.toInt - key.length + 1), maxRecordBytes = limit)
    assert(
      over.left.toOption.get ==
        s"the record is ${limit + 1} bytes (${limit - key.length + 1} bytes of data and a 5-byte partition key), " +
        s"over the stream's limit of $limit bytes (MaxRecordSizeInKiB 10240); partition key 'key-1'"
    )
    val noted = UserRecords.check("k", null, new Array[Byte](2 * 1024 * 1024), limitNote = ". grant it")
    assert(noted.left.toOption.get.endsWith("partition key 'k'. grant it"))
  }

  test("explicit hash keys are decimal integers from 0 to 2^128 - 1") {
    assert(UserRecords.check("k", "0", Array[Byte](1)).isRight)
    assert(UserRecords.check("k", maxHashKey, Array[Byte](1)).isRight)
    assert(problem("k", "-1", Array[Byte](1)).startsWith("explicitHashKey '-1' is not a decimal integer"))
    assert(problem("k", "", Array[Byte](1)).startsWith("explicitHashKey '' is not"))
    val tooBig = new BigInteger(maxHashKey).add(BigInteger.ONE).toString
    assert(problem("k", tooBig, Array[Byte](1)).startsWith(s"explicitHashKey '$tooBig' is out of range"))
  }
}
