package io.sparkkinesis.credentials

import java.lang.reflect.{Constructor, InvocationTargetException}
import java.net.URI
import java.time.Duration

import scala.util.Try

import io.sparkkinesis.config.KinesisOptions.{CredentialProviderClass, CredentialProviderParam}
import io.sparkkinesis.config._
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.resources.{Lease, SharedResources}
import org.slf4j.LoggerFactory
import software.amazon.awssdk.auth.credentials.{AwsCredentials => SdkCredentials, _}
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.sts.StsClient
import software.amazon.awssdk.services.sts.auth.StsAssumeRoleCredentialsProvider
import software.amazon.awssdk.services.sts.model.AssumeRoleRequest

/**
 * The one entry point from credential options to an AWS SDK credentials provider, used by every client the
 * connector builds (Kinesis, DynamoDB, the sink's producer): `acquire` gives a lease, to close when the client closes.
 * Providers are shared by all clients of one JVM and configuration ([[SharedResources]]): an assumed role's session
 * is created once per executor and refreshed in the background before it expires. Closing the provider a client
 * holds does nothing; the last lease's idle grace period or the JVM's shutdown closes it.
 */
private[sparkkinesis] object AwsCredentials {
  private val log = LoggerFactory.getLogger(getClass)

  /** Refresh an assumed role's session this long before it expires (in the background). */
  val PrefetchBeforeExpiry: Duration = Duration.ofMinutes(5)

  /** A request made this close to expiry waits for a refresh instead of using the old session. */
  val StaleBeforeExpiry: Duration = Duration.ofMinutes(1)

  private val providers = new SharedResources[CredentialsConfig, SharedProvider](
    "AWS credentials provider",
    c => new SharedProvider(build(c), c.toString),
    _.underlying match {
      case c: AutoCloseable => c.close()
      case _ =>
    }
  )

  /** A lease on the provider of `config`; close it when the client that signs with it closes. */
  def acquire(config: CredentialsConfig): Lease[AwsCredentialsProvider] = {
    SecretHygiene.capCredentialLoggers
    providers.acquire(config)
  }

  private def build(config: CredentialsConfig): AwsCredentialsProvider = {
    if (config.ignoredOptions.nonEmpty)
      log.warn(s"$key takes precedence; these options are ignored: ${config.ignoredOptions.mkString(", ")}")
    log.info(s"AWS credentials: ${config.source.describe}")
    forSource(config.source)
  }

  private def forSource(source: CredentialsSource): AwsCredentialsProvider = source match {
    case DefaultChain => DefaultCredentialsProvider.builder().build()
    case StaticKeys(id, secret, token) =>
      StaticCredentialsProvider.create(token match {
        case Some(t) => AwsSessionCredentials.create(id, secret, t)
        case None => AwsBasicCredentials.create(id, secret)
      })
    case CustomProvider(className, param) => new CustomProviderAdapter(instantiate(className, param))
    case role: AssumeRole => assumeRole(role)
  }

  private def assumeRole(role: AssumeRole): AwsCredentialsProvider = {
    val sts = StsClient.builder().credentialsProvider(forSource(role.base))
    sts.httpClientBuilder(HttpSettings.apache(role.network))
    sts.overrideConfiguration(
      HttpSettings.apiCallAttemptTimeout(ClientOverrideConfiguration.builder(), role.network).build()
    )
    // Options always give the connector's region; us-east-1 only for a config built by hand without one.
    sts.region(Region.of(role.region.getOrElse("us-east-1")))
    role.endpointUrl.foreach(u => sts.endpointOverride(URI.create(u)))
    val request = AssumeRoleRequest.builder().roleArn(role.roleArn).roleSessionName(role.sessionName)
    role.externalId.foreach(request.externalId)
    val provider = StsAssumeRoleCredentialsProvider.builder().stsClient(sts.build())
    provider.refreshRequest(request.build()).asyncCredentialUpdateEnabled(true)
    provider.prefetchTime(PrefetchBeforeExpiry).staleTime(StaleBeforeExpiry).build()
  }

  /** Loads a [[KinesisCredentialsProvider]] class and checks it can be constructed; fails with a clear message. */
  def checkCustomClass(className: String): Unit = constructorOf(className)

  private val key = CredentialProviderClass.fullKey

  private def constructorOf(className: String): Either[Constructor[_], Constructor[_]] = {
    val loader = Option(Thread.currentThread().getContextClassLoader).getOrElse(getClass.getClassLoader)
    val cls =
      try Class.forName(className, true, loader)
      catch {
        case _: ClassNotFoundException => throw KinesisErrors.classNotFound(key, className)
        case e: NoClassDefFoundError => throw KinesisErrors.classNotLoaded(key, className, e.getMessage)
      }
    if (!classOf[KinesisCredentialsProvider].isAssignableFrom(cls))
      throw KinesisErrors.classNotProvider(key, className, classOf[KinesisCredentialsProvider].getName)
    Try(cls.getConstructor(classOf[String]))
      .map(Left(_))
      .orElse(Try(cls.getConstructor()).map(Right(_)))
      .getOrElse(throw KinesisErrors.noConstructor(key, className))
  }

  private def instantiate(className: String, param: Option[String]): KinesisCredentialsProvider = {
    val instance =
      try
        constructorOf(className) match {
          case Left(withParam) => withParam.newInstance(param.orNull)
          case Right(noArgs) =>
            if (param.isDefined)
              throw KinesisErrors.noStringConstructor(CredentialProviderParam.fullKey, className)
            noArgs.newInstance()
        }
      catch {
        case e: InvocationTargetException =>
          // The cause's type only: its message could echo the parameter.
          throw KinesisErrors.constructorFailed(key, className, e.getCause.getClass.getName)
      }
    instance.asInstanceOf[KinesisCredentialsProvider]
  }

  /** The SDK's view of a user's provider. */
  private final class CustomProviderAdapter(user: KinesisCredentialsProvider) extends AwsCredentialsProvider {

    override def resolveCredentials(): SdkCredentials = {
      val c =
        Option(user.resolve()).getOrElse(throw KinesisErrors.providerReturnedNull(key, user.getClass.getName))
      if (c.sessionToken.isPresent) {
        val b = AwsSessionCredentials.builder().accessKeyId(c.accessKeyId).secretAccessKey(c.secretAccessKey)
        b.sessionToken(c.sessionToken.get())
        c.expiration.ifPresent(e => b.expirationTime(e))
        b.build()
      } else AwsBasicCredentials.create(c.accessKeyId, c.secretAccessKey)
    }
    override def toString: String = s"CustomProvider[${user.getClass.getName}]"
  }

  /** A cached provider as clients see it: closing it is a no-op, its name shows no secret. */
  private final class SharedProvider(val underlying: AwsCredentialsProvider, name: String)
      extends AwsCredentialsProvider {
    override def resolveCredentials(): SdkCredentials = underlying.resolveCredentials()
    override def toString: String = name
  }
}
