package io.sparkkinesis.metadata

import java.net.URI
import java.time.Duration
import java.util.concurrent.ConcurrentHashMap

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config.{DynamoDbConfig, HttpSettings, RetryPolicy}
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.resources.{Lease, SharedResources}
import org.slf4j.LoggerFactory
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.http.SdkHttpClient
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.dynamodb.DynamoDbClient
import software.amazon.awssdk.services.dynamodb.model._

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

/**
 * Entries as items of one DynamoDB table, shared by any number of queries. Table layout:
 *
 * | attribute  | type | role          | value                                                              |
 * |:-----------|:-----|:--------------|:-------------------------------------------------------------------|
 * | `queryRun` | S    | partition key | `<checkpoint location>#<runId>`: one query, one checkpoint incarnation |
 * | `entry`    | S    | sort key      | `<batchId, 19 digits zero-padded>/<key>` (orders by batch)        |
 * | `batchId`  | N    |               | the batch id                                                       |
 * | `key`      | S    |               | the entry's key (`<stream>/<shardId>`)                             |
 * | `value`    | S    |               | the entry (versioned JSON)                                         |
 *
 * Two queries have different checkpoint locations and a reset checkpoint a new runId, so their entries never meet.
 * Writes are conditional on the item being absent (first writer wins), reads strongly consistent; a purge queries
 * one partition for the keys below the first kept batch and deletes them with BatchWriteItem, 25 per call. Calls
 * used: DescribeTable, CreateTable (when the table is missing), PutItem, GetItem, Query, BatchWriteItem. Failed calls
 * and unprocessed deletes are retried per the `kinesis.metadata*` options; a write whose response was lost and whose
 * retry then finds its own item reports `false`, the neutral outcome.
 */
private[sparkkinesis] final class DynamoDbMetadataCommitter(
    private[metadata] val client: DynamoDbClient,
    private[metadata] val table: String,
    private[metadata] val partition: String,
    retry: RetryPolicy,
    release: () => Unit = () => ()
) extends MetadataCommitter {
  import DynamoDbMetadataCommitter._

  /** Lets a running purge finish (see [[MetadataCommitter.close]]), then hands the client back. */
  override def close(): Unit =
    try super.close()
    finally release()

  private def itemKey(batchId: Long, key: String): Map[String, AttributeValue] =
    Map(PartitionKey -> str(partition), SortKey -> str(batchPrefix(batchId) + key))

  def putIfAbsent(batchId: Long, key: String, value: String): Boolean = {
    val batch = AttributeValue.builder().n(batchId.toString).build()
    val item =
      itemKey(batchId, key) ++ Map("batchId" -> batch, "key" -> str(key), ValueAttribute -> str(value))
    val request = PutItemRequest.builder().tableName(table).item(item.asJava)
    request.conditionExpression("attribute_not_exists(#p)")
    try {
      client.putItem(request.expressionAttributeNames(Map("#p" -> PartitionKey).asJava).build())
      true
    } catch { case _: ConditionalCheckFailedException => false }
  }

  def get(batchId: Long, key: String): Option[String] = {
    val response = client.getItem(
      GetItemRequest.builder().tableName(table).key(itemKey(batchId, key).asJava).consistentRead(true).build()
    )
    if (!response.hasItem || response.item().isEmpty) None
    else Option(response.item().get(ValueAttribute)).map(_.s())
  }

  def purgeBefore(batchId: Long): Unit = if (batchId > 0) {
    val request = QueryRequest.builder().tableName(table).consistentRead(true).projectionExpression("#p, #s")
    request.keyConditionExpression("#p = :p AND #s < :s")
    request.expressionAttributeNames(Map("#p" -> PartitionKey, "#s" -> SortKey).asJava)
    request.expressionAttributeValues(Map(":p" -> str(partition), ":s" -> str(batchPrefix(batchId))).asJava)
    client.queryPaginator(request.build()).items().asScala.grouped(MaxWritesPerBatch).foreach(deleteAll)
  }

  // Set once BatchWriteItem was refused for lack of permission: the awslabs connector's policy grants DeleteItem only.
  @volatile private var deleteOneByOne = false

  /** Deletes `keys` (at most 25) in one BatchWriteItem, retrying what it left; one by one when it is not allowed. */
  private def deleteAll(keys: Iterable[java.util.Map[String, AttributeValue]]): Unit =
    if (deleteOneByOne) keys.foreach(deleteOne)
    else
      try deleteInBatch(keys)
      catch {
        case e: DynamoDbException
            if Option(e.awsErrorDetails()).exists(_.errorCode() == "AccessDeniedException") =>
          log.warn(
            s"DynamoDB refused BatchWriteItem on table $table (${e.awsErrorDetails().errorMessage()}); purging old " +
              "batches with one DeleteItem per entry instead. Grant dynamodb:BatchWriteItem to purge in 25 times " +
              "fewer calls."
          )
          deleteOneByOne = true
          keys.foreach(deleteOne)
      }

  private def deleteOne(key: java.util.Map[String, AttributeValue]): Unit =
    client.deleteItem(DeleteItemRequest.builder().tableName(table).key(key).build())

  private def deleteInBatch(keys: Iterable[java.util.Map[String, AttributeValue]]): Unit = {
    def delete(key: java.util.Map[String, AttributeValue]) =
      WriteRequest.builder().deleteRequest(DeleteRequest.builder().key(key).build()).build()
    var pending: java.util.List[WriteRequest] = keys.map(delete).toList.asJava
    var attempt = 0
    while (!pending.isEmpty) {
      if (attempt > 0) Thread.sleep(retry.delayMs(attempt - 1))
      val response = client.batchWriteItem(
        BatchWriteItemRequest.builder().requestItems(Map(table -> pending).asJava).build()
      )
      pending = Option(response.unprocessedItems().get(table)).getOrElse(java.util.Collections.emptyList())
      attempt += 1
      if (!pending.isEmpty && attempt > retry.retries)
        throw KinesisErrors.metadataDeletesUnprocessed(table, pending.size, attempt)
    }
  }
}

private[sparkkinesis] object DynamoDbMetadataCommitter {
  private val log = LoggerFactory.getLogger(classOf[DynamoDbMetadataCommitter])

  val PartitionKey = "queryRun"
  val SortKey = "entry"
  val ValueAttribute = "value"

  /** BatchWriteItem's limit of requests per call. */
  val MaxWritesPerBatch = 25

  private def str(s: String) = AttributeValue.builder().s(s).build()

  private[metadata] def batchPrefix(batchId: Long) = f"$batchId%019d/"

  /** The partition of one query's checkpoint incarnation. */
  def partitionFor(checkpointLocation: String, runId: String): String = s"$checkpointLocation#$runId"

  /** A committer on the shared client of `config` (leased until closed), with the table created if missing. */
  def apply(config: DynamoDbConfig, partition: String): DynamoDbMetadataCommitter = {
    val lease = DynamoDbClients.acquire(config)
    lease.closeIfFails { client =>
      ensureReady(client, config)
      new DynamoDbMetadataCommitter(client, config.tableName, partition, config.retry, () => lease.close())
    }
  }

  /** Ensures the table of `config` exists and is ACTIVE; calls DynamoDB once per JVM and configuration. */
  def prepareTable(config: DynamoDbConfig): Unit = {
    val lease = DynamoDbClients.acquire(config)
    try ensureReady(lease.value, config)
    finally lease.close()
  }

  private val readyTables = ConcurrentHashMap.newKeySet[DynamoDbConfig]()

  private def ensureReady(client: DynamoDbClient, config: DynamoDbConfig): Unit =
    if (!readyTables.contains(config)) {
      ensureTable(client, config.tableName)
      readyTables.add(config)
    }

  /** Creates the table (on-demand billing) unless it exists, checks its key schema, and waits until ACTIVE. */
  def ensureTable(client: DynamoDbClient, table: String, timeout: Duration = Duration.ofMinutes(5)): Unit = {
    def describe(): Option[TableDescription] =
      try Some(client.describeTable(DescribeTableRequest.builder().tableName(table).build()).table())
      catch { case _: ResourceNotFoundException => None }

    if (describe().isEmpty) {
      log.info(s"Creating DynamoDB table $table for the Kinesis connector's metadata (on-demand billing)")
      try
        client.createTable(
          CreateTableRequest
            .builder()
            .tableName(table)
            .billingMode(BillingMode.PAY_PER_REQUEST)
            .attributeDefinitions(Seq(PartitionKey, SortKey).map { name =>
              AttributeDefinition.builder().attributeName(name).attributeType(ScalarAttributeType.S).build()
            }.asJava)
            .keySchema(
              KeySchemaElement.builder().attributeName(PartitionKey).keyType(KeyType.HASH).build(),
              KeySchemaElement.builder().attributeName(SortKey).keyType(KeyType.RANGE).build()
            )
            .build()
        )
      catch { case _: ResourceInUseException => () } // created concurrently by another JVM
    }
    val deadline = System.nanoTime() + timeout.toNanos
    var delayMs = 100L
    var current = describe()
    while (!current.exists(_.tableStatus() == TableStatus.ACTIVE)) {
      if (System.nanoTime() > deadline)
        throw KinesisErrors.metadataTableNotActive(
          table,
          timeout.toSeconds,
          current.map(_.tableStatusAsString()).getOrElse("missing")
        )
      Thread.sleep(delayMs)
      delayMs = math.min(delayMs * 2, 2000L)
      current = describe()
    }
    val keys = current.get.keySchema().asScala.map(k => k.attributeName() -> k.keyType()).toSet
    val expected = Set(PartitionKey -> KeyType.HASH, SortKey -> KeyType.RANGE)
    if (keys != expected)
      throw KinesisErrors.tableKeySchema(
        "kinesis.dynamodb.tableName",
        table,
        keys.map { case (n, t) => s"$n $t" }.mkString("[", ", ", "]"),
        s"[$PartitionKey HASH, $SortKey RANGE]"
      )
  }
}

/**
 * One DynamoDB client per configuration (table aside) in a JVM, shared by the committers that lease it, and closed
 * once no lease has been held for the idle grace period ([[SharedResources]]) or when the JVM exits.
 */
private[sparkkinesis] object DynamoDbClients {

  private val clients =
    new SharedResources[DynamoDbConfig, Lease[DynamoDbClient]]("DynamoDB client", open(_, None), _.close())

  /** A lease on the shared client of `config`; close it when done. */
  def acquire(config: DynamoDbConfig): Lease[DynamoDbClient] =
    clients.acquire(config.copy(tableName = "")).map(_.value)

  /** A new client (not shared) and its credentials, closed with the lease; `http` (tests' own) is not closed. */
  def open(config: DynamoDbConfig, http: Option[SdkHttpClient]): Lease[DynamoDbClient] = {
    val credentials = AwsCredentials.acquire(config.credentials)
    val client = credentials.closeIfFails { provider =>
      val r = config.retry
      val retry =
        HttpSettings.standardRetries(r.retries, math.max(1L, r.baseMs), math.max(1L, r.maxMs)).build()
      val builder = DynamoDbClient
        .builder()
        .region(Region.of(config.region))
        .credentialsProvider(provider)
        .overrideConfiguration(
          HttpSettings
            .apiCallAttemptTimeout(ClientOverrideConfiguration.builder().retryStrategy(retry), config.network)
            .build()
        )
      config.endpointUrl.foreach(u => builder.endpointOverride(URI.create(u)))
      http match {
        case Some(h) => builder.httpClient(h)
        case None => builder.httpClientBuilder(HttpSettings.apache(config.network))
      }
      builder.build()
    }
    Lease.owning(client)(() =>
      try client.close()
      finally credentials.close()
    )
  }
}
