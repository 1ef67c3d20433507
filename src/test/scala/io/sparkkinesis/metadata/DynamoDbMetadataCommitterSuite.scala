package io.sparkkinesis.metadata

import io.sparkkinesis.metadata.CommitterKeys._

import java.util.UUID

import io.sparkkinesis.config.{CredentialsConfig, DynamoDbConfig, RetryPolicy}
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import io.sparkkinesis.testutil.Ministack
import software.amazon.awssdk.services.dynamodb.model.{
  AttributeDefinition,
  BillingMode,
  CreateTableRequest,
  DescribeTableRequest,
  KeySchemaElement,
  KeyType,
  ScalarAttributeType
}

/** Test settings for DynamoDB on the ministack emulator, with the dummy static keys. */
object DynamoDbTestConfig {

  def apply(table: String, retry: RetryPolicy = RetryPolicy(3, 50, 500)): DynamoDbConfig =
    DynamoDbConfig(
      tableName = table,
      region = "us-east-1",
      endpointUrl = Some(Ministack.endpoint),
      credentials =
        CredentialsConfig(accessKeyId = Some("test-access-key"), secretKey = Some("test-secret-key")),
      retry = retry
    )

  def uniqueTable(prefix: String): String = s"$prefix-${UUID.randomUUID().toString.take(8)}"
}

/** The committer contract on DynamoDB (ministack), plus table creation and layout. */
class DynamoDbMetadataCommitterSuite extends MetadataCommitterContractSuite {
  private val config = DynamoDbTestConfig(DynamoDbTestConfig.uniqueTable("contract"))

  protected def newNamespace(): String =
    DynamoDbMetadataCommitter.partitionFor(s"file:/tmp/checkpoint-${UUID.randomUUID()}/sources/0", "run-1")
  protected def committer(namespace: String): MetadataCommitter = DynamoDbMetadataCommitter(config, namespace)

  test("the table is created on demand, on-demand billing, with the documented key schema") {
    val table = DynamoDbTestConfig.uniqueTable("created")
    val c = DynamoDbMetadataCommitter(DynamoDbTestConfig(table), "p")
    assert(c.putIfAbsent(0, "k", "v"))
    val description = DynamoDbClients
      .acquire(DynamoDbTestConfig(table))
      .value
      .describeTable(DescribeTableRequest.builder().tableName(table).build())
      .table()
    assert(description.tableStatusAsString() == "ACTIVE")
    assert(description.billingModeSummary().billingModeAsString() == "PAY_PER_REQUEST")
    assert(
      description.keySchema().toString.contains("queryRun") && description
        .keySchema()
        .toString
        .contains("entry")
    )
    // Ensuring again (another JVM, a restart) finds the table and leaves it alone.
    DynamoDbMetadataCommitter.ensureTable(DynamoDbClients.acquire(DynamoDbTestConfig(table)).value, table)
    assert(c.get(0, "k").contains("v"))
  }

  test("a table with another key schema is refused with a clear message") {
    val table = DynamoDbTestConfig.uniqueTable("foreign")
    val client = DynamoDbClients.acquire(DynamoDbTestConfig(table)).value
    client.createTable(
      CreateTableRequest
        .builder()
        .tableName(table)
        .billingMode(BillingMode.PAY_PER_REQUEST)
        .attributeDefinitions(
          AttributeDefinition.builder().attributeName("id").attributeType(ScalarAttributeType.S).build()
        )
        .keySchema(KeySchemaElement.builder().attributeName("id").keyType(KeyType.HASH).build())
        .build()
    )
    val e = intercept[IllegalArgumentException](DynamoDbMetadataCommitter(DynamoDbTestConfig(table), "p"))
    assertCondition(e, "KINESIS_INVALID_OPTION")
    assert(e.getMessage.contains(table) && e.getMessage.contains("queryRun HASH"), e.getMessage)
  }

  test("entries of one batch are listed by keys(); a purge leaves other partitions alone") {
    val ns = newNamespace()
    val c = DynamoDbMetadataCommitter(config, ns)
    Seq("s/shardId-0", "s/shardId-1").foreach(k => assert(c.putIfAbsent(2, k, "v")))
    assert(c.putIfAbsent(3, "s/shardId-0", "v"))
    assert(c.keys(2).toSet == Set("s/shardId-0", "s/shardId-1"))
    assert(c.keys(3) == Seq("s/shardId-0"))
    // Batch 20 sorts after batch 3 only because of the zero padding.
    assert(c.putIfAbsent(20, "s/shardId-0", "v"))
    c.purgeBefore(4)
    assert(c.keys(2).isEmpty && c.keys(3).isEmpty && c.keys(20) == Seq("s/shardId-0"))
  }
}
