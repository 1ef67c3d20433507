package io.sparkkinesis.reader

import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest
import java.util.Arrays

import scala.util.Random

import io.sparkkinesis.reader.KplAggregates.Entry
import org.scalatest.funsuite.AnyFunSuite

/** The sink's KPL aggregate encoder: what the reader decodes, byte for byte what the KPL writes. */
class KplAggregateBuilderSuite extends AnyFunSuite {

  private def build(entries: Seq[Entry]): (KplAggregateBuilder, Array[Byte]) = {
    val builder = new KplAggregateBuilder
    entries.foreach(e => builder.add(e.partitionKey, e.explicitHashKey.orNull, e.data))
    (builder, builder.result())
  }

  private val rng = new Random(3)

  private def entries(n: Int, keys: Int = 7): Seq[Entry] = (0 until n).map { i =>
    val data = Array.fill(rng.nextInt(300))(rng.nextInt(256).toByte)
    val ehk = if (i % 3 == 0) Some(BigInt(128, rng).toString) else None
    Entry(s"key-${i % keys}-é", ehk, data)
  }

  test("an aggregate decodes to its records, keys and data, in order") {
    val written = entries(200) :+ Entry("empty", None, Array.emptyByteArray)
    val (_, bytes) = build(written)
    val read = KplAggregation.deaggregate(bytes, "outer", reason => fail(s"malformed: $reason"))
    assert(read.size == written.size)
    read.zip(written).zipWithIndex.foreach { case ((r, w), i) =>
      assert(r.partitionKey == w.partitionKey)
      assert(r.explicitHashKey == w.explicitHashKey)
      assert(Arrays.equals(r.data, w.data))
      assert(r.subIndex == i && r.subCount == written.size)
      assert(
        r.hashKey == w.explicitHashKey
          .map(BigInt(_))
          .getOrElse(KplAggregation.partitionKeyHash(w.partitionKey))
      )
    }
  }

  test(
    "the bytes are the KPL's: key tables in order of first use, then the records (an independent encoder)"
  ) {
    val written = entries(50, keys = 5)
    assert(Arrays.equals(build(written)._2, KplAggregates.aggregate(written)))
  }

  test("the magic bytes lead and the MD5 of the protobuf trails") {
    val (_, bytes) = build(entries(10))
    assert(Arrays.equals(bytes.take(4), KplAggregation.Magic))
    val protobuf = bytes.slice(4, bytes.length - 16)
    assert(Arrays.equals(bytes.takeRight(16), MessageDigest.getInstance("MD5").digest(protobuf)))
    // A flipped byte of the protobuf no longer matches the digest: the reader passes it through as one record.
    bytes(10) = (bytes(10) ^ 1).toByte
    assert(KplAggregation.deaggregate(bytes, "pk").map(_.subIndex) == Seq(-1))
  }

  test("size and sizeIncrease predict the encoded size exactly, before encoding") {
    val builder = new KplAggregateBuilder
    assert(builder.size == 20)
    val long = "k" * 200 // a 2-byte length varint
    val cases = entries(40) ++ Seq(
      Entry(long, None, Array.fill(200)(1)),
      Entry(long, Some("1" * 39), Array.fill(20000)(2)), // a 3-byte data length
      Entry("x", None, Array.emptyByteArray)
    )
    cases.foreach { e =>
      val expected = builder.size + builder.sizeIncrease(e.partitionKey, e.explicitHashKey.orNull, e.data)
      builder.add(e.partitionKey, e.explicitHashKey.orNull, e.data)
      assert(builder.size == expected)
      assert(builder.result().length == expected)
    }
    assert(builder.count == cases.size)
  }

  test("an aggregate near the 1 MiB record limit stays within it when grown by its predicted size") {
    val limit = 1024L * 1024
    val builder = new KplAggregateBuilder
    var n = 0
    val data = Array.fill(999)(7.toByte)
    while (
      builder.size + builder.sizeIncrease(s"pk-$n", null, data) + "pk-0".getBytes(UTF_8).length <= limit
    ) {
      builder.add(s"pk-$n", null, data)
      n += 1
    }
    val bytes = builder.result()
    assert(bytes.length + 4 <= limit && bytes.length + 4 + 1050 > limit)
    assert(KplAggregation.deaggregate(bytes, "pk-0").size == n)
  }
}
