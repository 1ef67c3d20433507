package io.sparkkinesis.sink

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class SinkSchemaSuite extends AnyFunSuite {

  private def schema(fields: (String, DataType)*) = StructType(fields.map { case (n, t) =>
    StructField(n, t)
  })

  private def error(fields: (String, DataType)*) =
    SinkSchema.validate(schema(fields: _*)).swap.toOption.get.getMessage

  test("binary or string data, a string partition key and an optional string hash key are accepted") {
    assert(
      SinkSchema.validate(schema("partitionKey" -> StringType, "data" -> BinaryType)) ==
        Right(SinkColumns(data = 1, dataIsString = false, partitionKey = Some(0), explicitHashKey = None))
    )
    assert(
      SinkSchema.validate(
        schema("data" -> StringType, "PARTITIONKEY" -> StringType, "explicitHashKey" -> StringType)
      ) ==
        Right(SinkColumns(data = 0, dataIsString = true, partitionKey = Some(1), explicitHashKey = Some(2)))
    )
  }

  test("a missing column is named with what is allowed and what the input has") {
    val missingData = error("partitionKey" -> StringType)
    assert(missingData.contains("needs a column 'data' (binary or string)"))
    assert(missingData.contains("the input has columns partitionKey: string"))
    assert(error("data" -> BinaryType).contains("needs a column 'partitionKey' (string)"))
    assert(error().contains("the input has no columns"))
  }

  test("a column of a wrong type names the type found and the types allowed") {
    assert(
      error("data" -> IntegerType, "partitionKey" -> StringType) ==
        "Column 'data' has type int; the Kinesis sink accepts binary or string there. " +
        "Cast it, for example CAST(data AS BINARY)."
    )
    assert(
      error("data" -> BinaryType, "partitionKey" -> BinaryType)
        .startsWith("Column 'partitionKey' has type binary; the Kinesis sink accepts string there.")
    )
    assert(
      error("data" -> BinaryType, "partitionKey" -> StringType, "explicitHashKey" -> DecimalType(38, 0))
        .startsWith("Column 'explicitHashKey' has type decimal(38,0); the Kinesis sink accepts string there.")
    )
  }

  test("an unknown column is refused rather than dropped") {
    val message = error("data" -> BinaryType, "partitionKey" -> StringType, "shardId" -> StringType)
    assert(message.startsWith("Column 'shardId' is not one the Kinesis sink writes"))
    assert(message.contains("explicitHashKey (string, optional)"))
  }
}
