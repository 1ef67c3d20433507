package io.sparkkinesis.config

import io.sparkkinesis.errors.KinesisErrors

/** The validated options of one call of a Glue Schema Registry function. */
private[sparkkinesis] final case class SchemaRegistryConfig(
    // The registry's endpoint and client settings: the key of an executor's registry client and schema cache.
    endpoint: AwsClientConfig,
    registryName: String,
    schemaName: Option[String],
    schemaVersion: Option[Long],
    schemaDefinition: Option[String],
    dataFormat: Option[GsrDataFormat],
    autoRegister: Boolean,
    compression: GsrCompression,
    mode: PayloadMode,
    errorField: Option[String],
    cacheSize: Int
) {

  /** How the schema is named in messages. */
  def describeSchema: String =
    schemaName.fold("the given schema definition")(n =>
      s"schema '$n' of registry '$registryName'" + schemaVersion.fold(" (latest version)")(v =>
        s" version $v"
      )
    )
}

private[sparkkinesis] object SchemaRegistryConfig {
  import KinesisOptions._

  /** The connector options shared with reads and writes that a function takes: region, credentials, network. */
  private val SharedClientOptions: Set[OptionSpec[_]] = Seq[Seq[OptionSpec[_]]](
    Seq(Region, ClientNumRetries, ClientRetryIntervalsMs, ClientMaxRetryIntervalMs, ClientMaxConnections),
    Seq(AwsAccessKeyId, AwsSecretKey, SessionToken, CredentialProviderClass, CredentialProviderParam),
    Seq(StsRoleArn, StsSessionName, StsEndpointUrl, StsExternalId),
    Seq(ProxyAddress, ProxyPort, ProxyUsername, ProxyPassword),
    Seq(ClientConnectTimeoutMs, ClientSocketTimeoutMs, ClientApiCallAttemptTimeoutMs)
  ).flatten.toSet

  /** `function`: the SQL function the options were given to, for messages. */
  def parse(
      function: String,
      options: Map[String, String],
      defaultRegion: () => Option[String]
  ): SchemaRegistryConfig = {
    val view = new OptionValues(options, OptionScope.Functions)
    options.keys.flatMap(KinesisOptions.lookup).foreach { spec =>
      if (spec.scope == OptionScope.Both && !SharedClientOptions(spec))
        throw KinesisErrors.optionOfOtherSide(spec.fullKey, "reads and writes (the source and the sink)")
      if (spec.secret)
        throw KinesisErrors.badValueNotShown(
          spec.fullKey,
          s"$function takes no secret: the arguments of a function appear in query plans. Let it obtain " +
            s"credentials with ${StsRoleArn.fullKey}, ${CredentialProviderClass.fullKey} or the default chain"
        )
    }
    val region = view.get(Region).orElse(defaultRegion()).getOrElse(throw KinesisErrors.noRegion())
    val registryUrl =
      view.get(SchemaRegistryEndpointUrl).getOrElse(AwsClientConfig.serviceEndpoint("glue", region))
    val schemaName = view.get(SchemaRegistrySchemaName)
    val definition = view.get(SchemaRegistrySchemaDefinition)
    if (schemaName.isEmpty && definition.isEmpty)
      throw KinesisErrors.requiredOption(
        SchemaRegistrySchemaName.fullKey,
        s"$function needs a schema: name it with ${SchemaRegistrySchemaName.fullKey} (and optionally " +
          s"${SchemaRegistrySchemaVersion.fullKey}), or give its text with ${SchemaRegistrySchemaDefinition.fullKey}."
      )
    if (view.isSet(SchemaRegistrySchemaVersion) && (schemaName.isEmpty || definition.nonEmpty))
      throw KinesisErrors.badValue(
        SchemaRegistrySchemaVersion.fullKey,
        view.canonical(SchemaRegistrySchemaVersion).get,
        s"a version is chosen only together with ${SchemaRegistrySchemaName.fullKey} and without " +
          SchemaRegistrySchemaDefinition.fullKey
      )
    val errorField = view.get(SchemaRegistryErrorField)
    val mode = view.getOrDefault(SchemaRegistryMode)
    if (errorField.nonEmpty && mode != PayloadMode.Permissive)
      throw KinesisErrors.badValue(
        SchemaRegistryErrorField.fullKey,
        errorField.get,
        s"an error field is added only in PERMISSIVE mode (${SchemaRegistryMode.fullKey})"
      )
    SchemaRegistryConfig(
      endpoint = AwsClientConfig.parse(view, region, registryUrl),
      registryName = view.getOrDefault(SchemaRegistryName),
      schemaName = schemaName,
      schemaVersion = view.get(SchemaRegistrySchemaVersion),
      schemaDefinition = definition,
      dataFormat = view.get(SchemaRegistryDataFormat),
      autoRegister = view.getOrDefault(SchemaRegistryAutoRegister),
      compression = view.getOrDefault(SchemaRegistryCompression),
      mode = mode,
      errorField = errorField,
      cacheSize = view.getOrDefault(SchemaRegistryCacheSize).toInt
    )
  }
}

/** `kinesis.schemaRegistry.dataFormat`: the Glue Schema Registry's data formats (this build handles AVRO and JSON). */
private[sparkkinesis] sealed abstract class GsrDataFormat(val name: String) extends Choice

private[sparkkinesis] object GsrDataFormat {
  case object Avro extends GsrDataFormat("AVRO")
  case object Json extends GsrDataFormat("JSON")
  case object Protobuf extends GsrDataFormat("PROTOBUF")
  val all: Seq[GsrDataFormat] = Seq(Avro, Json, Protobuf)
}

/** `kinesis.schemaRegistry.compression`: the header's compression byte. */
private[sparkkinesis] sealed abstract class GsrCompression(val name: String, val byte: Byte) extends Choice

private[sparkkinesis] object GsrCompression {
  case object None extends GsrCompression("NONE", 0)
  case object Zlib extends GsrCompression("ZLIB", 5)
  val all: Seq[GsrCompression] = Seq(None, Zlib)
}

/** `kinesis.schemaRegistry.mode`: what a record that cannot be decoded does. */
private[sparkkinesis] sealed abstract class PayloadMode(val name: String) extends Choice

private[sparkkinesis] object PayloadMode {
  case object FailFast extends PayloadMode("FAILFAST")
  case object Permissive extends PayloadMode("PERMISSIVE")
  val all: Seq[PayloadMode] = Seq(FailFast, Permissive)
}
