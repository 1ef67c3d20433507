package io.sparkkinesis.metadata

import io.sparkkinesis.metadata.CommitterKeys._

import java.net.URI
import java.util.concurrent.ConcurrentLinkedQueue

import scala.jdk.CollectionConverters._

import io.sparkkinesis.config.RetryPolicy
import io.sparkkinesis.testutil.Ministack
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}
import software.amazon.awssdk.core.{SdkRequest, SdkResponse}
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.core.interceptor._
import software.amazon.awssdk.http.apache.ApacheHttpClient
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.dynamodb.DynamoDbClient
import software.amazon.awssdk.awscore.exception.AwsErrorDetails
import software.amazon.awssdk.services.dynamodb.model.{
  BatchWriteItemRequest,
  BatchWriteItemResponse,
  DynamoDbException,
  WriteRequest
}

/**
 * Notes every DynamoDB call, and makes DynamoDB process only part of some BatchWriteItem calls: while `withholding`
 * lasts, the second half of each call's deletes (all but the first, when `withholdAllButOne`) never reaches
 * ministack and comes back as UnprocessedItems, as DynamoDB does under throttling.
 */
final class UnprocessedItemsInterceptor(table: String) extends ExecutionInterceptor {
  val operations = new ConcurrentLinkedQueue[String]()
  val batchWriteSizes = new ConcurrentLinkedQueue[Int]() // deletes asked for, per BatchWriteItem call
  @volatile var withholding = 0
  @volatile var withholdAllButOne = false
  // Answers BatchWriteItem as DynamoDB does a role whose policy does not grant it.
  @volatile var refuseBatchWrite = false
  import UnprocessedItemsInterceptor.Withheld

  override def beforeExecution(context: Context.BeforeExecution, attributes: ExecutionAttributes): Unit = {
    val operation = attributes.getAttribute(SdkExecutionAttribute.OPERATION_NAME)
    operations.add(operation)
    if (refuseBatchWrite && operation == "BatchWriteItem")
      throw DynamoDbException
        .builder()
        .statusCode(400)
        .awsErrorDetails(
          AwsErrorDetails
            .builder()
            .errorCode("AccessDeniedException")
            .errorMessage("not authorized to perform: dynamodb:BatchWriteItem")
            .build()
        )
        .build()
  }

  override def modifyRequest(context: Context.ModifyRequest, attributes: ExecutionAttributes): SdkRequest =
    context.request() match {
      case r: BatchWriteItemRequest =>
        val all = r.requestItems().get(table)
        batchWriteSizes.add(all.size)
        val kept = if (withholdAllButOne) 1 else (all.size + 1) / 2
        if (withholding > 0 && kept < all.size) {
          withholding -= 1
          attributes.putAttribute(Withheld, all.subList(kept, all.size))
          r.toBuilder.requestItems(Map(table -> all.subList(0, kept)).asJava).build()
        } else r
      case other => other
    }

  override def modifyResponse(context: Context.ModifyResponse, attributes: ExecutionAttributes): SdkResponse =
    (context.response(), Option(attributes.getAttribute(Withheld))) match {
      case (r: BatchWriteItemResponse, Some(withheld)) =>
        r.toBuilder.unprocessedItems(Map(table -> withheld).asJava).build()
      case (other, _) => other
    }

  def calls(operation: String): Int = operations.asScala.count(_ == operation)
}

object UnprocessedItemsInterceptor {
  private val Withheld = new ExecutionAttribute[java.util.List[WriteRequest]]("withheld deletes")
}

/** The DynamoDB committer's purge: one Query, then BatchWriteItem deletes, with the unprocessed ones retried. */
class DynamoDbPurgeSuite extends AnyFunSuite {
  private val config = DynamoDbTestConfig(DynamoDbTestConfig.uniqueTable("purge"))
  DynamoDbMetadataCommitter.prepareTable(config)

  private def client(interceptor: ExecutionInterceptor): DynamoDbClient =
    DynamoDbClient
      .builder()
      .region(Region.US_EAST_1)
      .endpointOverride(URI.create(Ministack.endpoint))
      .credentialsProvider(
        StaticCredentialsProvider.create(AwsBasicCredentials.create("test-access-key", "test-secret-key"))
      )
      .overrideConfiguration(
        ClientOverrideConfiguration.builder().addExecutionInterceptor(interceptor).build()
      )
      .httpClientBuilder(ApacheHttpClient.builder())
      .build()

  /** A committer of a query of its own (its own partition), retrying `retries` times. */
  private def committerOfNewQuery(dynamo: DynamoDbClient, retries: Int) = new DynamoDbMetadataCommitter(
    dynamo,
    config.tableName,
    DynamoDbMetadataCommitter.partitionFor(s"file:/chk/${java.util.UUID.randomUUID()}", "run-1"),
    RetryPolicy(retries, 1, 10)
  )

  private def shards(n: Int) = (0 until n).map(i => f"orders/shardId-$i%012d")

  test(
    "a purge deletes the earlier batches in BatchWriteItem calls of at most 25, retrying the unprocessed"
  ) {
    val interceptor = new UnprocessedItemsInterceptor(config.tableName)
    val dynamo = client(interceptor)
    val partition =
      DynamoDbMetadataCommitter.partitionFor(s"file:/chk/${java.util.UUID.randomUUID()}", "run-1")
    val other = DynamoDbMetadataCommitter.partitionFor(s"file:/chk/${java.util.UUID.randomUUID()}", "run-1")
    val c = new DynamoDbMetadataCommitter(dynamo, config.tableName, partition, RetryPolicy(3, 1, 10))
    val neighbour = new DynamoDbMetadataCommitter(dynamo, config.tableName, other, RetryPolicy(3, 1, 10))
    for (batch <- 0L to 2L; shard <- shards(30)) assert(c.putIfAbsent(batch, shard, s"$batch"))
    assert(neighbour.putIfAbsent(0, shards(1).head, "another query"))
    interceptor.operations.clear()
    interceptor.withholding = 2 // the first call leaves 12 of its 25 unprocessed, its retry 6 of those 12
    c.purgeBefore(2)
    assert(interceptor.calls("Query") == 1 && interceptor.calls("DeleteItem") == 0, interceptor.operations)
    // 60 deletes: 25 (13 done), 12 (6 done), 6, then 25 and 10.
    assert(interceptor.batchWriteSizes.asScala.toList == List(25, 12, 6, 25, 10))
    assert(interceptor.calls("BatchWriteItem") == 5)
    assert(c.keys(0).isEmpty && c.keys(1).isEmpty, "every entry of batches 0 and 1 is deleted")
    assert(c.keys(2).size == 30, "the kept batch is whole")
    assert(
      neighbour.get(0, shards(1).head).contains("another query"),
      "another query's partition is untouched"
    )
    dynamo.close()
  }

  test("deletes still unprocessed after the retries fail the purge; the next purge deletes them") {
    val interceptor = new UnprocessedItemsInterceptor(config.tableName)
    val dynamo = client(interceptor)
    val c = committerOfNewQuery(dynamo, retries = 2)
    for (batch <- 0L to 1L; shard <- shards(10)) assert(c.putIfAbsent(batch, shard, s"$batch"))
    interceptor.withholdAllButOne = true
    interceptor.withholding = Int.MaxValue
    val e = intercept[IllegalStateException](c.purgeBefore(1))
    assert(e.getMessage.contains("left 7 deletes unprocessed after 3 BatchWriteItem calls"), e.getMessage)
    assert(c.keys(0).size == 7, "each of the 3 calls deleted one entry")
    interceptor.withholding = 0
    c.purgeBefore(1)
    assert(c.keys(0).isEmpty && c.keys(1).size == 10)
    dynamo.close()
  }

  test("a role that may not call BatchWriteItem (the awslabs connector's policy) purges with DeleteItem") {
    val interceptor = new UnprocessedItemsInterceptor(config.tableName)
    val dynamo = client(interceptor)
    val c = committerOfNewQuery(dynamo, retries = 2)
    for (batch <- 0L to 2L; shard <- shards(3)) assert(c.putIfAbsent(batch, shard, s"$batch"))
    interceptor.refuseBatchWrite = true
    interceptor.operations.clear()
    c.purgeBefore(1)
    assert(c.keys(0).isEmpty && c.keys(1).size == 3)
    assert(
      interceptor.calls("BatchWriteItem") == 1 && interceptor.calls("DeleteItem") == 3,
      interceptor.operations
    )
    interceptor.operations.clear()
    c.purgeBefore(2)
    assert(c.keys(1).isEmpty && c.keys(2).size == 3)
    assert(interceptor.calls("BatchWriteItem") == 0, "refused once, not asked again")
    dynamo.close()
  }
}
