package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream
import java.nio.ByteBuffer
import java.util.UUID
import java.util.zip.{DataFormatException, Deflater, Inflater}

import io.sparkkinesis.config.GsrCompression

/**
 * The Glue Schema Registry's framing of a record: the version byte 3, a compression byte (0: none, 5: zlib), the
 * 16-byte id of the writer's schema version (big-endian, most significant half first), then the payload, zlib-
 * deflated when the compression byte says so.
 */
private[sparkkinesis] object GsrFrame {
  val Version: Byte = 3
  val HeaderLength = 18

  /** A record's schema version id and its payload, or why the bytes are no framed record. */
  final case class Framed(schemaVersion: UUID, payload: Array[Byte], offset: Int, length: Int)

  def parse(bytes: Array[Byte]): Either[String, Framed] =
    if (bytes.length < HeaderLength)
      Left(s"the record has ${bytes.length} bytes, fewer than the $HeaderLength of the header")
    else if (bytes(0) != Version) Left(f"its first byte is 0x${bytes(0)}%02x, not the version byte 0x03")
    else {
      val header = ByteBuffer.wrap(bytes, 2, 16)
      val id = new UUID(header.getLong, header.getLong)
      bytes(1) match {
        case GsrCompression.None.byte => Right(Framed(id, bytes, HeaderLength, bytes.length - HeaderLength))
        case GsrCompression.Zlib.byte =>
          inflate(bytes).map(p => Framed(id, p, 0, p.length))
        case other => Left(f"its compression byte is 0x$other%02x, neither 0x00 (none) nor 0x05 (zlib)")
      }
    }

  /** The framed record of `payload` written with schema version `id`. */
  def frame(id: UUID, payload: Array[Byte], compression: GsrCompression): Array[Byte] = {
    val body = if (compression == GsrCompression.Zlib) deflate(payload) else payload
    ByteBuffer
      .allocate(HeaderLength + body.length)
      .put(Version)
      .put(compression.byte)
      .putLong(id.getMostSignificantBits)
      .putLong(id.getLeastSignificantBits)
      .put(body)
      .array()
  }

  private def inflate(bytes: Array[Byte]): Either[String, Array[Byte]] = {
    val inflater = new Inflater()
    try {
      inflater.setInput(bytes, HeaderLength, bytes.length - HeaderLength)
      val out = new ByteArrayOutputStream(math.max(64, 4 * (bytes.length - HeaderLength)))
      val chunk = new Array[Byte](8192)
      while (!inflater.finished()) {
        val n = inflater.inflate(chunk)
        if (n == 0 && (inflater.needsInput() || inflater.needsDictionary()))
          return Left("its zlib payload ends before its end of stream")
        out.write(chunk, 0, n)
      }
      Right(out.toByteArray)
    } catch {
      case e: DataFormatException => Left(s"its zlib payload is corrupt (${e.getMessage})")
    } finally inflater.end()
  }

  private def deflate(payload: Array[Byte]): Array[Byte] = {
    val deflater = new Deflater()
    try {
      deflater.setInput(payload)
      deflater.finish()
      val out = new ByteArrayOutputStream(payload.length / 2 + 64)
      val chunk = new Array[Byte](8192)
      while (!deflater.finished()) out.write(chunk, 0, deflater.deflate(chunk))
      out.toByteArray
    } finally deflater.end()
  }
}
