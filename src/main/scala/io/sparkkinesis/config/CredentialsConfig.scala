package io.sparkkinesis.config

import io.sparkkinesis.config.KinesisOptions._

/**
 * Where AWS credentials come from, as the user's `kinesis.*` options say (`io.sparkkinesis.credentials` builds the
 * AWS SDK provider from it). Equality covers every field (it is the key of the per-JVM provider cache), but
 * `toString` never shows a secret: it names the source and the non-secret settings only, so the config can travel in
 * plans, task descriptions and logs. `stsRegion` and `network` (proxy, timeouts; its `toString` redacts the proxy
 * password) are the STS client's, the connector's own.
 */
private[sparkkinesis] final case class CredentialsConfig(
    accessKeyId: Option[String] = None,
    secretKey: Option[String] = None,
    sessionToken: Option[String] = None,
    stsRoleArn: Option[String] = None,
    stsSessionName: Option[String] = None,
    stsEndpointUrl: Option[String] = None,
    stsExternalId: Option[String] = None,
    stsRegion: Option[String] = None,
    providerClass: Option[String] = None,
    providerParam: Option[String] = None,
    network: NetworkConfig = NetworkConfig.Default
) {

  /** The source that wins by precedence: custom class, then STS role, then static keys, then the default chain. */
  def source: CredentialsSource = {
    val keys = for (id <- accessKeyId; secret <- secretKey) yield StaticKeys(id, secret, sessionToken)
    (providerClass, stsRoleArn) match {
      case (Some(cls), _) => CustomProvider(cls, providerParam)
      case (None, Some(role)) =>
        AssumeRole(
          role,
          stsSessionName.getOrElse(CredentialsConfig.DefaultSessionName),
          stsExternalId,
          stsEndpointUrl,
          stsRegion,
          keys.getOrElse(DefaultChain),
          network
        )
      case (None, None) => keys.getOrElse(DefaultChain)
    }
  }

  /** Options that are set but lose to a higher-precedence source (logged once as a warning, without values). */
  def ignoredOptions: Seq[String] =
    if (providerClass.isEmpty) Nil
    else
      (Seq(stsRoleArn -> StsRoleArn, stsSessionName -> StsSessionName, stsEndpointUrl -> StsEndpointUrl) ++
        Seq(stsExternalId -> StsExternalId, accessKeyId -> AwsAccessKeyId, secretKey -> AwsSecretKey) :+
        (sessionToken -> SessionToken)).collect { case (Some(_), option) => option.fullKey }

  override def toString: String = s"CredentialsConfig[${source.describe}]"
}

private[sparkkinesis] object CredentialsConfig {
  val DefaultSessionName = "spark-kinesis"

  val DefaultChainOnly: CredentialsConfig = CredentialsConfig()

  /**
   * The credential options of a validated option view (its combinations are checked by [[OptionRules]]). A custom
   * provider class is loaded by the caller that defines the query (`AwsCredentials.checkCustomClass`).
   */
  def parse(view: OptionValues, region: String): CredentialsConfig =
    CredentialsConfig(
      accessKeyId = view.get(AwsAccessKeyId),
      secretKey = view.get(AwsSecretKey),
      sessionToken = view.get(SessionToken),
      stsRoleArn = view.get(StsRoleArn),
      stsSessionName = view.get(StsSessionName),
      stsEndpointUrl = view.get(StsEndpointUrl),
      stsExternalId = view.get(StsExternalId),
      stsRegion = view.get(StsRoleArn).map(_ => region),
      providerClass = view.get(CredentialProviderClass),
      providerParam = view.get(CredentialProviderParam),
      // Used by the STS client of an assumed role: a proxy the connector's other calls go through, and timeouts.
      network = NetworkConfig.parse(view)
    )
}

/** One way of obtaining credentials; `describe`, also its `toString`, never contains a secret. */
private[sparkkinesis] sealed trait CredentialsSource {
  def describe: String
  override def toString: String = describe
}

private[sparkkinesis] case object DefaultChain extends CredentialsSource {
  def describe: String = "default credentials chain"
}

private[sparkkinesis] final case class StaticKeys(
    accessKeyId: String,
    secretKey: String,
    sessionToken: Option[String]
) extends CredentialsSource {

  def describe: String =
    if (sessionToken.isDefined) "static keys with session token (redacted)" else "static keys (redacted)"
}

private[sparkkinesis] final case class AssumeRole(
    roleArn: String,
    sessionName: String,
    externalId: Option[String],
    endpointUrl: Option[String],
    region: Option[String],
    base: CredentialsSource,
    network: NetworkConfig = NetworkConfig.Default
) extends CredentialsSource {

  def describe: String =
    s"assume role $roleArn as session $sessionName" +
      externalId.fold("")(_ => " with external id (redacted)") +
      endpointUrl.fold("")(u => s" via $u") + s", base credentials: ${base.describe}"
}

private[sparkkinesis] final case class CustomProvider(className: String, param: Option[String])
    extends CredentialsSource {
  def describe: String = s"custom provider $className" + param.fold("")(_ => " with parameter (redacted)")
}
