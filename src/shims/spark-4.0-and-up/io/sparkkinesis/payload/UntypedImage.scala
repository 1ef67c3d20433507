package io.sparkkinesis.payload

import java.math.{BigDecimal => JBigDecimal}
import java.util.ArrayList

import org.apache.spark.sql.types.{DataType, VariantType}
import org.apache.spark.types.variant.VariantBuilder
import org.apache.spark.types.variant.VariantBuilder.FieldEntry
import org.apache.spark.unsafe.types.VariantVal

/**
 * An image of `dynamodb_changes` without a schema, on Spark 4.0 and newer: the unwrapped item as a VARIANT. An N is
 * a long when it is a whole number that fits one, else a decimal when it fits VARIANT's (38 digits, scale 0 to 38),
 * else its text; B is binary, sets are arrays, M is an object.
 */
private[payload] object UntypedImage {
  val dataType: DataType = VariantType

  def apply(write: DocumentWriter => Unit): Any = {
    val w = new VariantWriter
    write(w)
    val v = w.builder.result()
    new VariantVal(v.getValue, v.getMetadata)
  }

  /** An object or array being written: where it starts, and its fields or the offsets of its elements. */
  private final case class Open(start: Int, fields: ArrayList[FieldEntry], offsets: ArrayList[Integer])

  private final class VariantWriter extends DocumentWriter {
    val builder = new VariantBuilder(false)
    private var open: List[Open] = Nil

    /** Before each value: an array's element records its offset (an object's field did at `field`). */
    private def next(): Unit = open match {
      case o :: _ if o.offsets != null => o.offsets.add(builder.getWritePos - o.start)
      case _ =>
    }

    def string(s: String): Unit = { next(); builder.appendString(s) }

    def number(n: JBigDecimal): Unit = {
      next()
      val d = if (n.scale < 0) n.setScale(0) else n
      val whole = if (d.scale == 0 && d.unscaledValue.bitLength < 64) Some(d.longValueExact()) else None
      whole match {
        case Some(l) => builder.appendLong(l)
        case None if d.precision <= 38 && d.scale <= 38 => builder.appendDecimal(d)
        case None => builder.appendString(n.toString)
      }
    }

    def binary(b: Array[Byte]): Unit = { next(); builder.appendBinary(b) }
    def boolean(b: Boolean): Unit = { next(); builder.appendBoolean(b) }
    def nul(): Unit = { next(); builder.appendNull() }
    def startObject(): Unit = { next(); open ::= Open(builder.getWritePos, new ArrayList[FieldEntry], null) }
    def startArray(): Unit = { next(); open ::= Open(builder.getWritePos, null, new ArrayList[Integer]) }

    def field(name: String): Unit = {
      val o = open.head
      o.fields.add(new FieldEntry(name, builder.addKey(name), builder.getWritePos - o.start))
    }

    def endObject(): Unit = {
      val o = open.head; open = open.tail; builder.finishWritingObject(o.start, o.fields)
    }

    def endArray(): Unit = {
      val o = open.head; open = open.tail; builder.finishWritingArray(o.start, o.offsets)
    }
  }
}
