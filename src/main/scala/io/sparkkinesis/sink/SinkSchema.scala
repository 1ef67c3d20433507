package io.sparkkinesis.sink

import java.util.Locale

import org.apache.spark.sql.types.{BinaryType, DataType, StringType, StructType}

/**
 * Where the sink finds each input column in a row. `explicitHashKey` is optional; `partitionKey` is optional only
 * when `keyOptional`: the stream has service-managed record distribution (RecordDistributionStrategy AUTO), which
 * takes records without a partition key.
 */
final case class SinkColumns(
    data: Int,
    dataIsString: Boolean,
    partitionKey: Option[Int],
    explicitHashKey: Option[Int],
    keyOptional: Boolean = false
) {

  /**
   * These columns for a stream that places records as `serviceManaged` says, or why the input cannot be written there.
   */
  def forStream(serviceManaged: Boolean, stream: String): Either[String, SinkColumns] =
    if (partitionKey.isEmpty && !serviceManaged)
      Left(
        s"The Kinesis sink needs a column '${SinkSchema.PartitionKey}' (string) for stream $stream, which places " +
          "records by partition key (RecordDistributionStrategy USER_PARTITION_KEY). Only a stream with " +
          "service-managed record distribution (AUTO) takes rows without one; add the column."
      )
    else Right(copy(keyOptional = serviceManaged))
}

/** The sink's input contract, checked on the driver when a write starts. */
object SinkSchema {
  val Data = "data"
  val PartitionKey = "partitionKey"
  val ExplicitHashKey = "explicitHashKey"

  // A stream with service-managed record distribution also takes rows without a partition key: see forStream.
  private val allowedColumns = s"$Data (binary or string, required), $PartitionKey (string, required), " +
    s"$ExplicitHashKey (string, optional)"

  /**
   * The column positions, or an error naming the column, the type found and what is allowed. `keyOptional`: the
   * stream has service-managed record distribution, so the partition key column may be missing.
   */
  def validate(schema: StructType, keyOptional: Boolean = false): Either[String, SinkColumns] = {
    val byName = schema.fields.zipWithIndex.map { case (f, i) =>
      f.name.toLowerCase(Locale.ROOT) -> (f, i)
    }.toMap
    def find(name: String) = byName.get(name.toLowerCase(Locale.ROOT))
    def typed(name: String, allowed: Seq[DataType], shown: String): Either[String, Option[(Int, DataType)]] =
      find(name) match {
        case None => Right(None)
        case Some((field, i)) if allowed.contains(field.dataType) => Right(Some(i -> field.dataType))
        case Some((field, _)) =>
          Left(
            s"Column '${field.name}' has type ${field.dataType.simpleString}; the Kinesis sink accepts $shown " +
              s"there. Cast it, for example CAST(${field.name} AS ${if (shown.contains("binary")) "BINARY"
                else "STRING"})."
          )
      }
    def required(name: String, column: Option[(Int, DataType)], shown: String) =
      column.toRight(
        s"The Kinesis sink needs a column '$name' ($shown); the input has ${columnList(schema)}. " +
          s"Allowed columns: $allowedColumns."
      )
    val known = Set(Data, PartitionKey, ExplicitHashKey).map(_.toLowerCase(Locale.ROOT))
    for {
      _ <- schema.fields
        .find(f => !known.contains(f.name.toLowerCase(Locale.ROOT)))
        .map(f =>
          s"Column '${f.name}' is not one the Kinesis sink writes, and it would be dropped; select only the " +
            s"allowed columns: $allowedColumns."
        )
        .toLeft(())
      data <- typed(Data, Seq(BinaryType, StringType), "binary or string").flatMap(
        required(Data, _, "binary or string")
      )
      key <- typed(PartitionKey, Seq(StringType), "string").flatMap { column =>
        if (keyOptional) Right(column) else required(PartitionKey, column, "string").map(Some(_))
      }
      hash <- typed(ExplicitHashKey, Seq(StringType), "string")
    } yield SinkColumns(data._1, data._2 == StringType, key.map(_._1), hash.map(_._1), keyOptional)
  }

  private def columnList(schema: StructType): String =
    if (schema.isEmpty) "no columns"
    else schema.fields.map(f => s"${f.name}: ${f.dataType.simpleString}").mkString("columns ", ", ", "")
}
