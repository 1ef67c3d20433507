package io.sparkkinesis.config

/**
 * Where the DynamoDB metadata committer keeps its table. Region and credentials are the connector's unless the
 * `kinesis.dynamodb.*` options say otherwise; retries follow the `kinesis.metadata*` options.
 */
private[sparkkinesis] final case class DynamoDbConfig(
    tableName: String,
    region: String,
    endpointUrl: Option[String],
    credentials: CredentialsConfig,
    retry: RetryPolicy,
    network: NetworkConfig = NetworkConfig.Default
)

private[sparkkinesis] object DynamoDbConfig {
  import KinesisOptions._

  /** The DynamoDB settings when `metadataCommitterType` is DYNAMODB. */
  def parse(view: OptionValues, client: AwsClientConfig, retry: RetryPolicy): Option[DynamoDbConfig] =
    // Which DynamoDB options go with which committer is checked by OptionRules.
    if (view.getOrDefault(MetadataCommitterType) != CommitterType.DynamoDb) None
    else
      Some(
        DynamoDbConfig(
          tableName = view.required(DynamoDbTableName),
          region = view.get(DynamoDbRegion).orElse(view.get(Region)).getOrElse(client.region),
          endpointUrl = view.get(DynamoDbEndpointUrl),
          credentials = client.credentials,
          retry = retry,
          network = client.network
        )
      )
}

/** `kinesis.metadataCommitterType`: where a query's tasks record their ends. */
private[sparkkinesis] sealed abstract class CommitterType(val name: String) extends Choice

private[sparkkinesis] object CommitterType {
  case object Hdfs extends CommitterType("HDFS")
  case object DynamoDb extends CommitterType("DYNAMODB")
  val all: Seq[CommitterType] = Seq(Hdfs, DynamoDb)
}
