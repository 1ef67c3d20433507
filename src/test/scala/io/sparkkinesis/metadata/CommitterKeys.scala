package io.sparkkinesis.metadata

import java.net.URLDecoder
import java.nio.charset.StandardCharsets.UTF_8

import scala.jdk.CollectionConverters._

import software.amazon.awssdk.services.dynamodb.model.{AttributeValue, QueryRequest}

/** What the suites check a store against: the keys one batch holds, read straight from the store. */
object CommitterKeys {

  implicit final class HadoopKeys(private val c: HadoopMetadataCommitter) extends AnyVal {

    def keys(batchId: Long): Seq[String] =
      if (!c.fc.util().exists(c.batchDir(batchId))) Nil
      else
        c.fc
          .util()
          .listStatus(c.batchDir(batchId))
          .toSeq
          .map(_.getPath.getName)
          .filterNot(_.startsWith("."))
          .map(URLDecoder.decode(_, UTF_8))
  }

  implicit final class DynamoDbKeys(private val c: DynamoDbMetadataCommitter) extends AnyVal {

    def keys(batchId: Long): Seq[String] = {
      def str(s: String) = AttributeValue.builder().s(s).build()
      val request = QueryRequest
        .builder()
        .tableName(c.table)
        .consistentRead(true)
        .keyConditionExpression("#p = :p AND begins_with(#s, :s)")
        .expressionAttributeNames(
          Map(
            "#p" -> DynamoDbMetadataCommitter.PartitionKey,
            "#s" -> DynamoDbMetadataCommitter.SortKey
          ).asJava
        )
        .expressionAttributeValues(
          Map(":p" -> str(c.partition), ":s" -> str(DynamoDbMetadataCommitter.batchPrefix(batchId))).asJava
        )
        .build()
      c.client.queryPaginator(request).items().asScala.map(_.get("key").s()).toList
    }
  }
}
