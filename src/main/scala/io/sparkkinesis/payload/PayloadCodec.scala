package io.sparkkinesis.payload

import org.apache.spark.sql.types.DataType

/** Reads payloads into Spark values; one per task thread, reused for every record of its writer schema. */
private[sparkkinesis] trait PayloadDecoder {
  def decode(bytes: Array[Byte], offset: Int, length: Int): Any
}

/** Writes Spark values as payloads; one per task thread. A value that does not fit fails naming the field. */
private[sparkkinesis] trait PayloadEncoder {
  def encode(value: Any): Array[Byte]
}

/**
 * A data format of the Glue Schema Registry: how its schemas (given as the registry's schema text) type Spark values,
 * and how payloads are read and written. Each method fails with an IllegalArgumentException that says why when a
 * schema text is no valid schema, or when the writer's schema cannot be read as the reader's.
 */
private[sparkkinesis] trait PayloadCodec {

  /** The Spark type of values of `definition`. */
  def sparkType(definition: String): DataType

  /** A decoder of payloads written with `writer`, giving values of `sparkType(reader)`. */
  def decoder(writer: String, reader: String): PayloadDecoder

  /** An encoder of values of `sparkType` as payloads of `definition`. */
  def encoder(definition: String, sparkType: DataType): PayloadEncoder

  /** None when values of `sparkType` can be written with `definition`, else why not, naming the field. */
  def checkWritable(sparkType: DataType, definition: String): Option[String]
}

private[sparkkinesis] object PayloadCodec {

  /** The codec of a registry data format name (AVRO, JSON, PROTOBUF); None for any other name. */
  def of(dataFormat: String): Option[PayloadCodec] = dataFormat match {
    case "AVRO" => Some(AvroCodec)
    case "JSON" => Some(JsonSchemaCodec)
    case "PROTOBUF" => Some(ProtobufCodec)
    case _ => None
  }

  /** The format names `of` knows, for messages. */
  val supported: Seq[String] = Seq("AVRO", "JSON", "PROTOBUF")
}

/** Avro payloads, typed as Spark's `from_avro` types them ([[AvroRows]]). */
private[sparkkinesis] object AvroCodec extends PayloadCodec {
  def sparkType(definition: String): DataType = AvroRows.sparkType(AvroRows.parse(definition))

  def decoder(writer: String, reader: String): PayloadDecoder = {
    val avro = new AvroRows.Decoder(AvroRows.parse(writer), AvroRows.parse(reader))
    (bytes, offset, length) => avro.decode(bytes, offset, length)
  }

  def encoder(definition: String, sparkType: DataType): PayloadEncoder = {
    val avro = new AvroRows.Encoder(AvroRows.parse(definition), sparkType)
    value => avro.encode(value)
  }

  def checkWritable(sparkType: DataType, definition: String): Option[String] =
    AvroRows.checkWritable(sparkType, AvroRows.parse(definition))
}
