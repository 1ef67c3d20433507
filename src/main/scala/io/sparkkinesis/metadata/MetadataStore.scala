package io.sparkkinesis.metadata

import io.sparkkinesis.config.{DynamoDbConfig, RetryPolicy}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.util.SerializableConfiguration

/** Where a query's metadata lives; travels to executors, which open a committer per run (checkpoint incarnation). */
private[sparkkinesis] trait MetadataStore extends Serializable {
  def open(runId: String): MetadataCommitter

  /** Called on the driver when the query starts, so a store that cannot be used fails the query there. */
  def prepare(): Unit = ()
}

/**
 * Entries under `<root>/<runId>` on a Hadoop file system.
 *
 * The Hadoop configuration is broadcast as Spark's own `SerializableConfiguration`, not as a class of this jar: an
 * executor deserializes a broadcast value with Spark's class loader, which does not see jars a Spark Connect client
 * added to its session (`spark.addArtifacts`); a class of ours there fails the read (ClassNotFoundException, or a
 * ClassCastException between two session class loaders in local mode).
 */
private[sparkkinesis] final case class HadoopMetadataStore(
    root: String,
    conf: Broadcast[SerializableConfiguration],
    retry: RetryPolicy
) extends MetadataStore {

  def open(runId: String): MetadataCommitter =
    new HadoopMetadataCommitter(s"$root/$runId", conf.value.value, retry)

  /** Refuses a file system on which entries cannot be written first-writer-wins (S3A without conditional writes). */
  override def prepare(): Unit = S3aConditionalCreate.requireOn(root)
}

/** Entries in a DynamoDB table, in the partition of (checkpoint location, runId). */
private[sparkkinesis] final case class DynamoDbMetadataStore(
    config: DynamoDbConfig,
    checkpointLocation: String
) extends MetadataStore {

  def open(runId: String): MetadataCommitter =
    DynamoDbMetadataCommitter(config, DynamoDbMetadataCommitter.partitionFor(checkpointLocation, runId))

  /** Creates the table if missing and checks its key schema, before any task writes to it. */
  override def prepare(): Unit = DynamoDbMetadataCommitter.prepareTable(config)
}
