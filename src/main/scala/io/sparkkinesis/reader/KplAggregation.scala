package io.sparkkinesis.reader

import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest
import java.util.Arrays

/**
 * One user record: a plain Kinesis record, or one sub-record of a KPL aggregate: its index `subIndex` in an aggregate
 * of `subCount` (-1 and 1 for a plain record).
 */
private[sparkkinesis] final case class UserRecord(
    data: Array[Byte],
    partitionKey: String,
    explicitHashKey: Option[String],
    subIndex: Int,
    subCount: Int
)(keys: AggregateKeys = null, keySlot: Int = -1) {
  def aggregated: Boolean = subIndex >= 0

  /** The 128-bit hash key Kinesis routes this record by: for a sub-record, its aggregate's, computed once per key. */
  def hashKey: BigInt =
    if (keys != null) keys.hashKey(keySlot)
    else explicitHashKey.map(BigInt(_)).getOrElse(KplAggregation.partitionKeyHash(partitionKey))
}

/**
 * The key tables of one aggregate, whose sub-records name their keys by index: slot `i` is partition key `i`, slot
 * `partitionKeys.size + j` explicit hash key `j`. Each slot's hash key is computed once, when first asked for (a
 * stream whose reader delivers every sub-record never asks), with one MD5 digest for the whole aggregate.
 */
private[reader] final class AggregateKeys(partitionKeys: IndexedSeq[String], hashKeys: IndexedSeq[String]) {
  private val computed = new Array[BigInt](partitionKeys.size + hashKeys.size)
  private lazy val md5 = MessageDigest.getInstance("MD5")

  def hashKey(slot: Int): BigInt = {
    if (computed(slot) == null) {
      computed(slot) =
        if (slot >= partitionKeys.size) BigInt(hashKeys(slot - partitionKeys.size))
        else BigInt(1, md5.digest(partitionKeys(slot).getBytes(UTF_8)))
    }
    computed(slot)
  }
}

/**
 * The KPL aggregation format: magic `F3 89 9A C2`, a protobuf `AggregatedRecord`, then the MD5 of the protobuf. The
 * protobuf is decoded by hand: the message has three fields and the decoder must never fail the read, so any
 * malformed aggregate is passed through as one plain record.
 */
private[sparkkinesis] object KplAggregation {
  val Magic: Array[Byte] = Array(0xf3, 0x89, 0x9a, 0xc2).map(_.toByte)
  private val DigestLength = 16

  def partitionKeyHash(partitionKey: String): BigInt =
    BigInt(1, MessageDigest.getInstance("MD5").digest(partitionKey.getBytes(UTF_8)))

  /**
   * Splits a Kinesis record into its user records (itself alone when it is not a well-formed aggregate). When the
   * record starts with the magic bytes but does not decode, `malformed` is told why before it is passed through.
   */
  def deaggregate(
      data: Array[Byte],
      partitionKey: String,
      malformed: String => Unit = _ => ()
  ): IndexedSeq[UserRecord] = {
    if (startsWithMagic(data)) decodeAggregate(data) match {
      case Right(records) => return records
      case Left(reason) => malformed(reason)
    }
    IndexedSeq(UserRecord(data, partitionKey, None, -1, 1)())
  }

  private def startsWithMagic(data: Array[Byte]): Boolean =
    data.length >= Magic.length && Arrays.equals(data, 0, Magic.length, Magic, 0, Magic.length)

  /** The user records of an aggregate (it starts with the magic bytes), or what is wrong with it. */
  private def decodeAggregate(data: Array[Byte]): Either[String, IndexedSeq[UserRecord]] = {
    if (data.length < Magic.length + DigestLength)
      return Left(s"${data.length} bytes, too short for the magic bytes and an MD5 digest")
    val bodyEnd = data.length - DigestLength
    val md5 = MessageDigest.getInstance("MD5")
    md5.update(data, Magic.length, bodyEnd - Magic.length)
    if (!Arrays.equals(md5.digest(), 0, DigestLength, data, bodyEnd, data.length))
      return Left("the MD5 digest at its end does not match its content")
    try {
      val reader = new ProtoReader(data, Magic.length, bodyEnd)
      val partitionKeys = Vector.newBuilder[String]
      val hashKeys = Vector.newBuilder[String]
      val records = Vector.newBuilder[SubRecord]
      while (reader.hasMore) {
        val tag = reader.varint()
        (tag >>> 3, tag & 7) match {
          case (1, 2) => partitionKeys += new String(reader.bytes(), UTF_8)
          case (2, 2) => hashKeys += new String(reader.bytes(), UTF_8)
          case (3, 2) => records += decodeRecord(reader.nested())
          case (_, wireType) => reader.skip(wireType.toInt)
        }
      }
      val (pks, ehks, raw) = (partitionKeys.result(), hashKeys.result(), records.result())
      if (raw.isEmpty) return Left("it holds no user records")
      val keys = new AggregateKeys(pks, ehks)
      Right(Vector.tabulate(raw.size) { i =>
        val sub = raw(i)
        val (explicitHashKey, slot) =
          if (sub.ehk < 0) (None, sub.pk) else (Some(ehks(sub.ehk)), pks.size + sub.ehk)
        UserRecord(sub.payload, pks(sub.pk), explicitHashKey, i, raw.size)(keys, slot)
      })
    } catch {
      case e @ (_: IndexOutOfBoundsException | _: IllegalArgumentException | _: ArithmeticException) =>
        Left(s"its protobuf does not decode ($e)")
    }
  }

  /** A sub-record as the protobuf holds it: key table indexes (`ehk` -1 when it has none) and its data. */
  private final class SubRecord(val pk: Int, val ehk: Int, val payload: Array[Byte])

  private def decodeRecord(reader: ProtoReader): SubRecord = {
    var pkIndex = -1L
    var ehkIndex = -1L
    var payload: Array[Byte] = null
    while (reader.hasMore) {
      val tag = reader.varint()
      (tag >>> 3, tag & 7) match {
        case (1, 0) => pkIndex = reader.varint()
        case (2, 0) => ehkIndex = reader.varint()
        case (3, 2) => payload = reader.bytes()
        case (_, wireType) => reader.skip(wireType.toInt)
      }
    }
    if (pkIndex < 0) throw new IllegalArgumentException("sub-record without partition_key_index")
    if (payload == null) throw new IllegalArgumentException("sub-record without data")
    new SubRecord(Math.toIntExact(pkIndex), if (ehkIndex < 0) -1 else Math.toIntExact(ehkIndex), payload)
  }

  private final class ProtoReader(buf: Array[Byte], start: Int, end: Int) {
    private var pos = start
    def hasMore: Boolean = pos < end

    def varint(): Long = {
      var result = 0L
      var shift = 0
      while (true) {
        if (pos >= end || shift > 63) throw new IllegalArgumentException("truncated varint")
        val b = buf(pos)
        pos += 1
        result |= (b & 0x7fL) << shift
        if ((b & 0x80) == 0) return result
        shift += 7
      }
      result
    }

    private def length(): Int = {
      val n = varint()
      if (n < 0 || n > end - pos) throw new IllegalArgumentException("length beyond the message")
      n.toInt
    }

    def bytes(): Array[Byte] = Arrays.copyOfRange(buf, delimited(), pos)
    def nested(): ProtoReader = new ProtoReader(buf, delimited(), pos)

    /** Moves past a length-delimited field; returns where its content starts. */
    private def delimited(): Int = {
      val n = length()
      pos += n
      pos - n
    }

    def skip(wireType: Int): Unit = wireType match {
      case 0 => varint()
      case 1 => advance(8)
      case 2 => advance(length())
      case 5 => advance(4)
      case other => throw new IllegalArgumentException(s"unsupported wire type $other")
    }

    private def advance(n: Int): Unit = {
      if (n > end - pos) throw new IllegalArgumentException("field beyond the message")
      pos += n
    }
  }
}

/**
 * Builds one KPL aggregate (the format [[KplAggregation]] reads: magic, protobuf `AggregatedRecord` with key tables,
 * MD5 of the protobuf), as the KPL writes it: each distinct partition key and explicit hash key once in its table, in
 * order of first use, then the sub-records in the order added. `size` is the encoded size so far, known before
 * encoding, so that a producer can stop adding before a limit.
 */
private[sparkkinesis] final class KplAggregateBuilder {
  import KplAggregateBuilder._

  private val partitionKeys = new java.util.LinkedHashMap[String, Integer]()
  private val hashKeys = new java.util.LinkedHashMap[String, Integer]()
  private val records = scala.collection.mutable.ArrayBuffer.empty[(Int, Int, Array[Byte])]
  private var protobufBytes = 0L

  def count: Int = records.size

  /** Bytes of the aggregate as encoded now (magic, protobuf and digest). */
  def size: Long = Magic.length + protobufBytes + DigestLength

  /** Bytes that adding this record would add to [[size]]. */
  def sizeIncrease(partitionKey: String, explicitHashKey: String, data: Array[Byte]): Long = {
    val pk = partitionKeys.get(partitionKey)
    val ehk = if (explicitHashKey == null) null else hashKeys.get(explicitHashKey)
    val pkIndex = if (pk == null) partitionKeys.size else pk.intValue
    val ehkIndex = if (explicitHashKey == null) -1 else if (ehk == null) hashKeys.size else ehk.intValue
    (if (pk == null) field(utf8Length(partitionKey)) else 0L) +
      (if (explicitHashKey != null && ehk == null) field(utf8Length(explicitHashKey)) else 0L) +
      field(recordLength(pkIndex, ehkIndex, data.length))
  }

  def add(partitionKey: String, explicitHashKey: String, data: Array[Byte]): Unit = {
    protobufBytes += sizeIncrease(partitionKey, explicitHashKey, data)
    val pk = partitionKeys.computeIfAbsent(partitionKey, _ => Integer.valueOf(partitionKeys.size)).intValue
    val ehk =
      if (explicitHashKey == null) -1
      else hashKeys.computeIfAbsent(explicitHashKey, _ => Integer.valueOf(hashKeys.size)).intValue
    records += ((pk, ehk, data))
  }

  /** The aggregate's bytes. */
  def result(): Array[Byte] = {
    val out = new Array[Byte](size.toInt)
    System.arraycopy(Magic, 0, out, 0, Magic.length)
    val writer = new Writer(out, Magic.length)
    partitionKeys.keySet.forEach(k => writer.bytesField(1, k.getBytes(UTF_8)))
    hashKeys.keySet.forEach(k => writer.bytesField(2, k.getBytes(UTF_8)))
    records.foreach { case (pk, ehk, data) =>
      writer.tag(3, 2)
      writer.varint(recordLength(pk, ehk, data.length))
      writer.tag(1, 0)
      writer.varint(pk.toLong)
      if (ehk >= 0) { writer.tag(2, 0); writer.varint(ehk.toLong) }
      writer.bytesField(3, data)
    }
    val md5 = MessageDigest.getInstance("MD5")
    md5.update(out, Magic.length, writer.position - Magic.length)
    System.arraycopy(md5.digest(), 0, out, writer.position, DigestLength)
    out
  }
}

private[sparkkinesis] object KplAggregateBuilder {
  private val Magic = KplAggregation.Magic
  private val DigestLength = 16

  /** Bytes of the varint encoding of `v` (>= 0). */
  private def varintLength(v: Long): Int = {
    var n = 1
    var rest = v >>> 7
    while (rest != 0) { n += 1; rest >>>= 7 }
    n
  }

  /** A length-delimited field with a one-byte tag (fields 1 to 15): tag, length, content. */
  private def field(contentLength: Long): Long = 1 + varintLength(contentLength) + contentLength

  /** The content length of one `Record` message. */
  private def recordLength(pkIndex: Int, ehkIndex: Int, dataLength: Int): Long =
    1 + varintLength(pkIndex.toLong) + (if (ehkIndex >= 0) 1 + varintLength(ehkIndex.toLong) else 0) +
      field(dataLength.toLong)

  private def utf8Length(s: String): Long = s.getBytes(UTF_8).length.toLong

  private final class Writer(out: Array[Byte], start: Int) {
    var position: Int = start

    def varint(value: Long): Unit = {
      var v = value
      while ((v & ~0x7fL) != 0) {
        out(position) = ((v & 0x7f) | 0x80).toByte
        position += 1
        v >>>= 7
      }
      out(position) = v.toByte
      position += 1
    }

    def tag(field: Int, wireType: Int): Unit = varint(((field << 3) | wireType).toLong)

    def bytesField(field: Int, value: Array[Byte]): Unit = {
      tag(field, 2)
      varint(value.length.toLong)
      System.arraycopy(value, 0, out, position, value.length)
      position += value.length
    }
  }
}
