package io.sparkkinesis.reader

import java.io.ByteArrayOutputStream
import java.math.BigInteger
import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest

import io.sparkkinesis.reader.KplAggregates.Entry
import org.scalatest.funsuite.AnyFunSuite

class KplAggregationSuite extends AnyFunSuite {
  private val Magic = Array(0xf3, 0x89, 0x9a, 0xc2).map(_.toByte)

  private def md5(bytes: Array[Byte]) = MessageDigest.getInstance("MD5").digest(bytes)
  private def bytes(s: String) = s.getBytes(UTF_8)

  /** Frames a protobuf body the way the KPL does: magic, body, MD5 of the body. */
  private def frame(body: Array[Byte]): Array[Byte] = Magic ++ body ++ md5(body)

  /** A minimal protobuf encoder, written here independently of the code under test. */
  private object Pb {

    def varint(v: Long): Array[Byte] = {
      val out = new ByteArrayOutputStream()
      var x = v
      while ((x & ~0x7fL) != 0) { out.write(((x & 0x7f) | 0x80).toInt); x >>>= 7 }
      out.write(x.toInt)
      out.toByteArray
    }
    def tag(field: Int, wireType: Int): Array[Byte] = varint((field.toLong << 3) | wireType)
    def int(field: Int, v: Long): Array[Byte] = tag(field, 0) ++ varint(v)

    def len(field: Int, payload: Array[Byte]): Array[Byte] =
      tag(field, 2) ++ varint(payload.length.toLong) ++ payload
  }

  /** Checks `data` passes through as one plain record; a record with the magic bytes must be reported malformed. */
  private def pass(data: Array[Byte], pk: String = "pk"): Unit = {
    val reasons = scala.collection.mutable.Buffer[String]()
    val out = KplAggregation.deaggregate(data, pk, reasons += _)
    val magic = data.length >= 4 && (data.take(4) sameElements Magic)
    assert(reasons.size == (if (magic) 1 else 0), s"reasons: $reasons")
    assert(out.size == 1)
    val r = out.head
    assert(r.data sameElements data)
    assert(
      r.partitionKey == pk && r.explicitHashKey.isEmpty && r.subIndex == -1 && r.subCount == 1 && !r.aggregated
    )
  }

  // ---------------------------------------------------------------- round trips

  test("aggregate then deaggregate gives back every record, its key and its explicit hash key, in order") {
    val entries = Seq(
      Entry("user-1", None, bytes("first")),
      Entry("user-2", Some("170141183460469231731687303715884105728"), bytes("second")),
      Entry("user-1", None, Array.emptyByteArray),
      Entry("user-3", Some("0"), bytes("fourth ✓"))
    )
    val out = KplAggregation.deaggregate(KplAggregates.aggregate(entries), "outer-key")
    assert(out.size == 4)
    out.zip(entries).zipWithIndex.foreach { case ((r, e), i) =>
      assert(r.data sameElements e.data, i)
      assert(r.partitionKey == e.partitionKey && r.explicitHashKey == e.explicitHashKey, i)
      assert(r.subIndex == i && r.subCount == 4 && r.aggregated, i)
    }
  }

  test("many records with shared and distinct keys round-trip") {
    val entries = (0 until 3000).map { i =>
      Entry(
        s"key-${i % 97}",
        if (i % 5 == 0) Some((BigInt(i) * 1000003).toString) else None,
        bytes(s"payload-$i" * (i % 7))
      )
    }
    val out = KplAggregation.deaggregate(KplAggregates.aggregate(entries), "outer")
    assert(
      out.map(r => (r.partitionKey, r.explicitHashKey, new String(r.data, UTF_8))) ==
        entries.map(e => (e.partitionKey, e.explicitHashKey, new String(e.data, UTF_8)))
    )
    assert(out.map(_.subIndex) == (0 until 3000) && out.forall(_.subCount == 3000))
  }

  test("a single-record aggregate is still an aggregate (sub-record 0 of 1)") {
    val out = KplAggregation.deaggregate(KplAggregates.aggregate(Seq(Entry("k", None, bytes("x")))), "outer")
    assert(out.map(r => (r.subIndex, r.subCount, r.partitionKey)) == Seq((0, 1, "k")))
  }

  test("aggregate writes the KPL framing: magic, protobuf, MD5 of the protobuf") {
    val data = KplAggregates.aggregate(Seq(Entry("k", None, bytes("v"))))
    assert(data.take(4) sameElements Magic)
    val body = data.slice(4, data.length - 16)
    assert(data.takeRight(16) sameElements md5(body))
    // partition_key_table = ["k"], records = [{partition_key_index: 0, data: "v"}]
    assert(body sameElements (Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.int(1, 0) ++ Pb.len(3, bytes("v")))))
  }

  test(
    "an aggregate encoded by hand per the KPL protobuf schema decodes; tags and unknown fields are skipped"
  ) {
    val tag = Pb.len(1, bytes("colour")) ++ Pb.len(2, bytes("blue"))
    val body =
      Pb.len(1, bytes("pk-a")) ++ Pb.len(1, bytes("pk-b")) ++ Pb.len(2, bytes("12345")) ++
        Pb.len(3, Pb.int(1, 1) ++ Pb.len(3, bytes("one")) ++ Pb.len(4, tag)) ++
        Pb.int(9, 77) ++ // an unknown varint field at the top level
        Pb.len(
          3,
          Pb.int(1, 0) ++ Pb.int(2, 0) ++ Pb.len(3, bytes("two")) ++ Pb.tag(15, 5) ++ Array[Byte](1, 2, 3, 4)
        ) ++
        Pb.len(3, Pb.tag(12, 1) ++ Array.fill[Byte](8)(7) ++ Pb.len(3, bytes("three")) ++ Pb.int(1, 1))
    val out = KplAggregation.deaggregate(frame(body), "outer")
    assert(
      out.map(r => (new String(r.data, UTF_8), r.partitionKey, r.explicitHashKey)) == Seq(
        ("one", "pk-b", None),
        ("two", "pk-a", Some("12345")),
        ("three", "pk-b", None)
      )
    )
  }

  // ---------------------------------------------------------------- hash keys

  private def independentMd5Hash(key: String): BigInt = {
    val hex = md5(bytes(key)).map(b => f"${b & 0xff}%02x").mkString
    BigInt(new BigInteger(hex, 16))
  }

  test("the partition key hash is the MD5 of its UTF-8 bytes as an unsigned 128-bit integer") {
    assert(KplAggregation.partitionKeyHash("a") == BigInt("0cc175b9c0f1b6a831c399e269772661", 16))
    assert(KplAggregation.partitionKeyHash("") == BigInt("d41d8cd98f00b204e9800998ecf8427e", 16))
    for (key <- Seq("user-1", "ключ", "🔑", "x" * 300) ++ (0 until 200).map(i => s"k$i"))
      assert(KplAggregation.partitionKeyHash(key) == independentMd5Hash(key), key)
  }

  test("a hash with the top bit set stays positive, above 2^127 and below 2^128") {
    val keys = (0 until 200).map(i => s"k$i").filter(k => (md5(bytes(k))(0) & 0x80) != 0)
    assert(keys.nonEmpty)
    keys.foreach { k =>
      val h = KplAggregation.partitionKeyHash(k)
      assert(h >= BigInt(2).pow(127) && h < BigInt(2).pow(128), k)
    }
  }

  test("a record's hash key is its explicit hash key when it has one, else the partition key hash") {
    // Sub-records share their aggregate's key tables: each slot (partition key or explicit hash key) is its own.
    val entries = Seq(
      Entry("k1", Some("42"), bytes("a")),
      Entry("k2", None, bytes("b")),
      Entry("k1", None, bytes("c")),
      Entry("k2", Some("7"), bytes("d")),
      Entry("k2", None, bytes("e"))
    )
    val out = KplAggregation.deaggregate(KplAggregates.aggregate(entries), "outer")
    assert(
      out.map(_.hashKey) ==
        Seq(
          BigInt(42),
          independentMd5Hash("k2"),
          independentMd5Hash("k1"),
          BigInt(7),
          independentMd5Hash("k2")
        )
    )
    assert(UserRecord(bytes("x"), "plain", None, -1, 1)().hashKey == independentMd5Hash("plain"))
  }

  // ---------------------------------------------------------------- malformed input passes through

  private val goodBody = Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.int(1, 0) ++ Pb.len(3, bytes("value")))

  test("the hand-made framing used below is itself a valid aggregate") {
    assert(KplAggregation.deaggregate(frame(goodBody), "outer").map(_.partitionKey) == Seq("k"))
  }

  test("a record without the magic passes through as one plain record") {
    pass(bytes("just some json {\"a\": 1}"))
    pass(Array.emptyByteArray)
    pass(Array[Byte](0xf3.toByte, 0x89.toByte, 0x9a.toByte, 0xc3.toByte) ++ goodBody ++ md5(goodBody))
  }

  test("a record too short to hold magic and MD5 passes through") {
    pass(Magic)
    pass(Magic ++ Array.fill[Byte](15)(0))
  }

  test("an aggregate with a wrong MD5 passes through") {
    val data = frame(goodBody)
    data(data.length - 1) = (data(data.length - 1) ^ 1).toByte
    pass(data)
    val altered = frame(goodBody)
    altered(6) = (altered(6) ^ 0x20).toByte // the body changed after the digest was computed
    pass(altered)
  }

  test("a truncated or corrupt protobuf (with a matching MD5) passes through") {
    pass(frame(goodBody.dropRight(2))) // length runs past the end
    pass(frame(Pb.tag(1, 2) ++ Pb.varint(1000) ++ bytes("short"))) // length prefix larger than the message
    pass(frame(goodBody ++ Array[Byte](0x80.toByte))) // truncated varint
    pass(frame(goodBody ++ Pb.tag(3, 3))) // unsupported wire type (start group)
    pass(frame(Array.fill[Byte](11)(0xff.toByte))) // varint longer than 64 bits
  }

  test("a sub-record pointing outside the key tables passes through") {
    pass(frame(Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.int(1, 3) ++ Pb.len(3, bytes("v")))))
    pass(frame(Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.int(1, 0) ++ Pb.int(2, 0) ++ Pb.len(3, bytes("v")))))
    pass(frame(Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.int(1, Long.MaxValue) ++ Pb.len(3, bytes("v")))))
  }

  test("a sub-record missing its partition key index or its data passes through") {
    pass(frame(Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.len(3, bytes("v")))))
    pass(frame(Pb.len(1, bytes("k")) ++ Pb.len(3, Pb.int(1, 0))))
  }

  test("an aggregate with no records (empty record list, or empty body) passes through") {
    pass(frame(Pb.len(1, bytes("k")) ++ Pb.len(2, bytes("1"))))
    pass(frame(Array.emptyByteArray))
  }

  test("a malformed aggregate is reported with the reason; a well-formed one and a plain record are not") {
    def reasons(data: Array[Byte]) = {
      val r = scala.collection.mutable.Buffer[String]()
      KplAggregation.deaggregate(data, "pk", r += _)
      r.toSeq
    }
    assert(reasons(frame(goodBody)).isEmpty)
    assert(reasons(bytes("plain")).isEmpty)
    assert(
      reasons(Magic ++ Array[Byte](1, 2)) == Seq("6 bytes, too short for the magic bytes and an MD5 digest")
    )
    val wrongDigest = frame(goodBody)
    wrongDigest(wrongDigest.length - 1) = (wrongDigest(wrongDigest.length - 1) ^ 1).toByte
    assert(reasons(wrongDigest) == Seq("the MD5 digest at its end does not match its content"))
    assert(reasons(frame(goodBody.dropRight(2))).head.startsWith("its protobuf does not decode"))
    assert(reasons(frame(Array.emptyByteArray)) == Seq("it holds no user records"))
  }
}
