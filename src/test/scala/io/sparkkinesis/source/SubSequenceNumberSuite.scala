package io.sparkkinesis.source

import io.sparkkinesis.KinesisSourceProvider
import io.sparkkinesis.client.KinesisRecord
import io.sparkkinesis.reader.{KplAggregates, KplAggregation}
import io.sparkkinesis.reader.KplAggregates.Entry
import org.apache.spark.sql.types.LongType
import org.scalatest.funsuite.AnyFunSuite

/** `kinesis.includeSubSequenceNumber`: the column, its values, and that the option reaches every reader's rows. */
class SubSequenceNumberSuite extends AnyFunSuite {

  private val options = Map("kinesis.streamName" -> "orders", "kinesis.region" -> "us-east-1")

  test(
    "the schema is the awslabs one by default, and gains a non-null long subSequenceNumber with the option"
  ) {
    assert(KinesisSourceProvider.validate(options).schema == KinesisScan.Schema)
    val schema =
      KinesisSourceProvider.validate(options + ("kinesis.includeSubSequenceNumber" -> "true")).schema
    assert(schema.fieldNames.toSeq == KinesisScan.Schema.fieldNames.toSeq :+ "subSequenceNumber")
    assert(schema("subSequenceNumber").dataType == LongType && !schema("subSequenceNumber").nullable)
    val config =
      KinesisSourceProvider.parse(options + ("kinesis.INCLUDESUBSEQUENCENUMBER" -> "true"), () => None)
    assert(config.includeSubSequenceNumber)
    assert(new KinesisScan(config).readSchema() == schema)
    assert(!KinesisSourceProvider.parse(options, () => None).includeSubSequenceNumber)
  }

  test("a value that is not a boolean is refused naming the option") {
    val error = intercept[Exception](
      KinesisSourceProvider.parse(options + ("kinesis.includeSubSequenceNumber" -> "yes"), () => None)
    )
    assert(error.getMessage.contains("kinesis.includeSubSequenceNumber"), error.getMessage)
  }

  test(
    "rows carry each user record's index in its aggregate, 0 for a plain record, and one more column only"
  ) {
    val aggregate = KplAggregates.aggregate((0 until 3).map(i => Entry(s"k$i", None, Array(i.toByte))))
    val record = KinesisRecord(aggregate, "k0", "4955", 1000L)
    val users = KplAggregation.deaggregate(aggregate, "k0")
    val plainRecord = KinesisRecord(Array[Byte](7), "p", "4956", 2000L)
    val plain = KplAggregation.deaggregate(plainRecord.data, "p").head

    val withIt = new ShardRows("orders", "shardId-000000000000", includeSubSequenceNumber = true)
    assert(users.map(u => withIt.row(record, u).getLong(6)) == Seq(0L, 1L, 2L))
    assert(users.map(u => withIt.row(record, u).getUTF8String(3).toString).distinct == Seq("4955"))
    assert(withIt.row(plainRecord, plain).getLong(6) == 0L)
    assert(withIt.row(plainRecord, plain).numFields == 7)
    // Each row names its own record and key, whichever record the previous row came from.
    val keysAndSequences = (users.map(u => (record, u)) :+ (plainRecord -> plain) :+ (record -> users(1)))
      .map { case (r, u) => withIt.row(r, u) }
      .map(row => (row.getUTF8String(2).toString, row.getUTF8String(3).toString))
    assert(keysAndSequences == Seq("k0", "k1", "k2").map(_ -> "4955") ++ Seq("p" -> "4956", "k1" -> "4955"))

    val without = new ShardRows("orders", "shardId-000000000000")
    assert(without.row(record, users(2)).numFields == 6)
  }
}
