package io.sparkkinesis.credentials

import java.time.Instant
import java.util.Optional

import io.sparkkinesis.config.KinesisOptions.CredentialProviderClass
import io.sparkkinesis.errors.KinesisErrors

/**
 * A user-supplied source of AWS credentials, named by the option `kinesis.credentialProviderClass`. The signature
 * uses only JDK types and our own [[KinesisCredentials]], so an implementation (in Java or Scala) compiles against
 * the connector jar without seeing its shaded AWS SDK; to Java this is a plain interface. The connector creates one
 * instance per JVM (driver, each executor) and configuration, through a public constructor taking one `String` (the
 * value of `kinesis.credentialProviderParam`, or null when it is not set) or else a public no-argument constructor.
 * `resolve()` is called for every AWS request, from many threads: cache the credentials, refresh them before they
 * expire.
 */
trait KinesisCredentialsProvider {

  /** The credentials to sign the next request with; never null. */
  def resolve(): KinesisCredentials
}

/**
 * AWS credentials as a [[KinesisCredentialsProvider]] returns them: an access key id and a secret key, plus a
 * session token and an expiration for temporary credentials. `toString` shows no part of them except the expiration.
 */
final class KinesisCredentials private (
    val accessKeyId: String,
    val secretAccessKey: String,
    token: String,
    expiry: Instant
) {
  KinesisCredentials.refuseEmpty(accessKeyId, "access key id")
  KinesisCredentials.refuseEmpty(secretAccessKey, "secret access key")

  def sessionToken: Optional[String] = Optional.ofNullable(token)
  def expiration: Optional[Instant] = Optional.ofNullable(expiry)

  override def toString: String =
    "KinesisCredentials[accessKeyId=<redacted>, secretAccessKey=<redacted>" +
      (if (token == null) "" else ", sessionToken=<redacted>") +
      (if (expiry == null) "" else s", expiration=$expiry") + "]"
}

object KinesisCredentials {

  /** Long-term credentials (an IAM user's keys). */
  def of(accessKeyId: String, secretAccessKey: String): KinesisCredentials =
    new KinesisCredentials(accessKeyId, secretAccessKey, null, null)

  /** Temporary credentials; `expiration` may be null when unknown. */
  def temporary(
      accessKeyId: String,
      secretAccessKey: String,
      sessionToken: String,
      expiration: Instant
  ): KinesisCredentials = {
    refuseEmpty(sessionToken, "session token")
    new KinesisCredentials(accessKeyId, secretAccessKey, sessionToken, expiration)
  }

  /** Credentials come from the provider that `kinesis.credentialProviderClass` names: an empty part is its fault. */
  private def refuseEmpty(part: String, what: String): Unit =
    if (part == null || part.isEmpty)
      throw KinesisErrors.badValueNotShown(CredentialProviderClass.fullKey, s"its credentials have no $what")
}
