package io.sparkkinesis.payload

import java.io.ByteArrayOutputStream
import java.math.{BigDecimal => JBigDecimal}

import com.fasterxml.jackson.core.{JsonFactory, JsonGenerator}
import org.apache.spark.sql.types.{DataType, StringType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * An image of `dynamodb_changes` without a schema, on Spark 3.5 (no VARIANT type): the unwrapped item as a JSON
 * string. Numbers keep every digit of DynamoDB's N; binary values are base64 text.
 */
private[payload] object UntypedImage {
  val dataType: DataType = StringType

  private val Json = new JsonFactory()

  def apply(write: DocumentWriter => Unit): Any = {
    val out = new ByteArrayOutputStream()
    val gen = Json.createGenerator(out)
    try write(new JsonWriter(gen))
    finally gen.close()
    UTF8String.fromBytes(out.toByteArray)
  }

  private final class JsonWriter(gen: JsonGenerator) extends DocumentWriter {
    def string(s: String): Unit = gen.writeString(s)
    def number(n: JBigDecimal): Unit = gen.writeNumber(n)
    def binary(b: Array[Byte]): Unit = gen.writeBinary(b)
    def boolean(b: Boolean): Unit = gen.writeBoolean(b)
    def nul(): Unit = gen.writeNull()
    def startObject(): Unit = gen.writeStartObject()
    def field(name: String): Unit = gen.writeFieldName(name)
    def endObject(): Unit = gen.writeEndObject()
    def startArray(): Unit = gen.writeStartArray()
    def endArray(): Unit = gen.writeEndArray()
  }
}
