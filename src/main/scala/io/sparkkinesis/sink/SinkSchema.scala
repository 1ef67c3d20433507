package io.sparkkinesis.sink

import java.util.Locale

import io.sparkkinesis.errors.{KinesisErrors, KinesisIllegalArgumentException}
import org.apache.spark.sql.types.{BinaryType, DataType, StringType, StructType}

/**
 * Where the sink finds each input column in a row. `explicitHashKey` is optional; `partitionKey` only when
 * `keyOptional`: a stream with service-managed record distribution (AUTO) takes records without a partition key.
 */
private[sparkkinesis] final case class SinkColumns(
    data: Int,
    dataIsString: Boolean,
    partitionKey: Option[Int],
    explicitHashKey: Option[Int],
    keyOptional: Boolean = false
) {

  /** These columns for a stream placing records as `serviceManaged` says, or why the input cannot go there. */
  def forStream(serviceManaged: Boolean, stream: String): SinkSchema.Checked[SinkColumns] =
    if (partitionKey.isEmpty && !serviceManaged)
      Left(KinesisErrors.sinkKeyColumnNeeded(SinkSchema.PartitionKey, stream))
    else Right(copy(keyOptional = serviceManaged))
}

/** The sink's input contract, checked on the driver when a write starts. */
private[sparkkinesis] object SinkSchema {
  val Data = "data"
  val PartitionKey = "partitionKey"
  val ExplicitHashKey = "explicitHashKey"

  /** A result, or the error that names what is wrong with the input. */
  type Checked[T] = Either[KinesisIllegalArgumentException, T]

  /**
   * The column positions, or an error naming the column, the type found and what is allowed. `keyOptional`: the
   * stream has service-managed record distribution, so the partition key column may be missing.
   */
  def validate(schema: StructType, keyOptional: Boolean = false): Checked[SinkColumns] = {
    val byName = schema.fields.zipWithIndex.map { case (f, i) =>
      f.name.toLowerCase(Locale.ROOT) -> (f, i)
    }.toMap
    def find(name: String) = byName.get(name.toLowerCase(Locale.ROOT))
    def typed(name: String, allowed: Seq[DataType], shown: String): Checked[Option[(Int, DataType)]] =
      find(name) match {
        case None => Right(None)
        case Some((field, i)) if allowed.contains(field.dataType) => Right(Some(i -> field.dataType))
        case Some((field, _)) =>
          Left(KinesisErrors.sinkWrongType(field.name, field.dataType.simpleString, shown))
      }
    def required(name: String, column: Option[(Int, DataType)], shown: String) =
      column.toRight(KinesisErrors.sinkMissingColumn(name, shown, columnList(schema)))
    val known = Set(Data, PartitionKey, ExplicitHashKey).map(_.toLowerCase(Locale.ROOT))
    for {
      _ <- schema.fields
        .find(f => !known.contains(f.name.toLowerCase(Locale.ROOT)))
        .map(f => KinesisErrors.sinkUnknownColumn(f.name))
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
