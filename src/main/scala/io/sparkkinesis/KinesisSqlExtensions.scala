package io.sparkkinesis

import org.apache.spark.sql.{SparkSession, SparkSessionExtensions}

import io.sparkkinesis.payload.PayloadFunctions

/**
 * The connector's SQL functions (`from_glue_schema_registry`, `to_glue_schema_registry`, ...), for
 * `spark.sql.extensions=io.sparkkinesis.KinesisSqlExtensions`: every session of the application then has them, in
 * SQL and through `call_function`, on classic Spark and on a Spark Connect server alike.
 */
final class KinesisSqlExtensions extends (SparkSessionExtensions => Unit) {

  override def apply(extensions: SparkSessionExtensions): Unit =
    PayloadFunctions.all.foreach(f => extensions.injectFunction(f.description))
}

object KinesisSqlExtensions {

  /** Adds the functions to a running classic session that was built without the extension. */
  def register(spark: SparkSession): Unit = PayloadFunctions.register(spark)
}
