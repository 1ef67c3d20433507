package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream
import java.nio.ByteBuffer
import java.util.{Arrays, UUID}
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

  /** A framed `record` and its payload: `length` bytes of `payload` from `offset`. */
  final case class Framed(record: Array[Byte], payload: Array[Byte], offset: Int, length: Int) {
    def schemaVersion: UUID = { val id = ByteBuffer.wrap(record, 2, 16); new UUID(id.getLong, id.getLong) }

    /** Whether `other`, a framed record or its header, names the same schema version (compared without a UUID). */
    def sameSchemaVersion(other: Array[Byte]): Boolean =
      Arrays.equals(record, 2, HeaderLength, other, 2, HeaderLength)
  }

  /** The payload of a framed record, or why the bytes are no framed record; `zlib` inflates a compressed one. */
  def parse(bytes: Array[Byte], zlib: ZlibStreams): Either[String, Framed] =
    if (bytes.length < HeaderLength)
      Left(s"the record has ${bytes.length} bytes, fewer than the $HeaderLength of the header")
    else if (bytes(0) != Version) Left(f"its first byte is 0x${bytes(0)}%02x, not the version byte 0x03")
    else
      bytes(1) match {
        case GsrCompression.None.byte =>
          Right(Framed(bytes, bytes, HeaderLength, bytes.length - HeaderLength))
        case GsrCompression.Zlib.byte => zlib.inflate(bytes).map(p => Framed(bytes, p, 0, p.length))
        case other => Left(f"its compression byte is 0x$other%02x, neither 0x00 (none) nor 0x05 (zlib)")
      }

  /** The framed record of `payload` written with schema version `id`; `zlib` deflates a compressed one. */
  def frame(id: UUID, payload: Array[Byte], compression: GsrCompression, zlib: ZlibStreams): Array[Byte] = {
    val body = if (compression == GsrCompression.Zlib) zlib.deflate(payload) else payload
    ByteBuffer
      .allocate(HeaderLength + body.length)
      .put(Version)
      .put(compression.byte)
      .putLong(id.getMostSignificantBits)
      .putLong(id.getLeastSignificantBits)
      .put(body)
      .array()
  }

  /**
   * The zlib streams of one task: made when first needed, reset for each record; `close` frees their native memory
   * (a later record makes new ones). Not thread-safe.
   */
  final class ZlibStreams {
    private var inflater: Inflater = _
    private var deflater: Deflater = _
    private val chunk = new Array[Byte](8192)

    private[GsrFrame] def inflate(record: Array[Byte]): Either[String, Array[Byte]] = {
      if (inflater == null) inflater = new Inflater() else inflater.reset()
      try {
        inflater.setInput(record, HeaderLength, record.length - HeaderLength)
        val out = new ByteArrayOutputStream(math.max(64, 4 * (record.length - HeaderLength)))
        while (!inflater.finished()) {
          val n = inflater.inflate(chunk)
          if (n == 0 && (inflater.needsInput() || inflater.needsDictionary()))
            return Left("its zlib payload ends before its end of stream")
          out.write(chunk, 0, n)
        }
        Right(out.toByteArray)
      } catch {
        case e: DataFormatException => Left(s"its zlib payload is corrupt (${e.getMessage})")
      }
    }

    private[GsrFrame] def deflate(payload: Array[Byte]): Array[Byte] = {
      if (deflater == null) deflater = new Deflater() else deflater.reset()
      deflater.setInput(payload)
      deflater.finish()
      val out = new ByteArrayOutputStream(payload.length / 2 + 64)
      while (!deflater.finished()) out.write(chunk, 0, deflater.deflate(chunk))
      out.toByteArray
    }

    def close(): Unit = {
      if (inflater != null) { inflater.end(); inflater = null }
      if (deflater != null) { deflater.end(); deflater = null }
    }
  }
}
