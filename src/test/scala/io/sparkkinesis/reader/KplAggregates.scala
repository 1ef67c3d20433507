package io.sparkkinesis.reader

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest

/** Writes the KPL aggregation format that [[KplAggregation]] reads, as the KPL writes it. */
object KplAggregates {

  /** A sub-record to aggregate. */
  final case class Entry(partitionKey: String, explicitHashKey: Option[String], data: Array[Byte])

  def aggregate(entries: Seq[Entry]): Array[Byte] = {
    val pkIndex = entries.map(_.partitionKey).distinct.zipWithIndex.toMap
    val ehkIndex = entries.flatMap(_.explicitHashKey).distinct.zipWithIndex.toMap
    val body = new ProtoWriter
    pkIndex.toSeq.sortBy(_._2).foreach { case (pk, _) => body.bytesField(1, pk.getBytes(UTF_8)) }
    ehkIndex.toSeq.sortBy(_._2).foreach { case (ehk, _) => body.bytesField(2, ehk.getBytes(UTF_8)) }
    entries.foreach { e =>
      val record = new ProtoWriter
      record.varintField(1, pkIndex(e.partitionKey).toLong)
      e.explicitHashKey.foreach(ehk => record.varintField(2, ehkIndex(ehk).toLong))
      record.bytesField(3, e.data)
      body.bytesField(3, record.toByteArray)
    }
    val protobuf = body.toByteArray
    val out = new ByteArrayOutputStream()
    out.write(KplAggregation.Magic)
    out.write(protobuf)
    out.write(MessageDigest.getInstance("MD5").digest(protobuf))
    out.toByteArray
  }

  private final class ProtoWriter {
    private val out = new ByteArrayOutputStream()

    private def varint(value: Long): Unit = {
      var v = value
      while ((v & ~0x7fL) != 0) {
        out.write(((v & 0x7f) | 0x80).toInt)
        v >>>= 7
      }
      out.write(v.toInt)
    }

    def varintField(field: Int, value: Long): Unit = { varint((field << 3).toLong); varint(value) }

    def bytesField(field: Int, value: Array[Byte]): Unit = {
      varint(((field << 3) | 2).toLong)
      varint(value.length.toLong)
      out.write(value)
    }

    def toByteArray: Array[Byte] = out.toByteArray
  }
}
