package io.sparkkinesis.credentials

import scala.util.Try

import io.sparkkinesis.config.KinesisOptions
import org.apache.spark.sql.SparkSession
import org.slf4j.LoggerFactory

/**
 * Keeps credentials out of places the connector does not write itself.
 *   - Plan strings: Spark prints a streaming source's options in `explain()` and the UI, redacting keys that match
 *     `spark.sql.redaction.options.regex` (default `(?i)url`) or `spark.redaction.regex`. Those miss some of our
 *     secret options (`kinesis.stsExternalId`, `kinesis.credentialProviderParam`), so [[registerRedaction]] adds
 *     every option declared `secret` to the session's `spark.sql.redaction.options.regex`.
 *   - Logs: at DEBUG, the HTTP client's wire and header loggers and the SDK's request signer print request headers
 *     and bodies verbatim: signing key ids, session tokens, the external id of AssumeRole, and the temporary
 *     credentials STS returns. [[capCredentialLoggers]] keeps those loggers (the connector's shaded copies) at INFO
 *     whatever the log configuration says. To see the connector's HTTP traffic, use a proxy instead.
 */
private[sparkkinesis] object SecretHygiene {
  private val log = LoggerFactory.getLogger(getClass)

  /** Matches the key of every secret option, in any case. */
  val SecretOptionsRegex: String =
    KinesisOptions.all
      .filter(_.secret)
      .map(o => java.util.regex.Pattern.quote(o.fullKey))
      .mkString("(?i)(", "|", ")")

  private val RedactionConf = "spark.sql.redaction.options.regex"

  /** Adds the secret options to the session's redaction of plan strings (idempotent). */
  def registerRedaction(spark: SparkSession): Unit = {
    val current = spark.conf.getOption(RedactionConf).getOrElse("(?i)url")
    if (!current.contains(SecretOptionsRegex)) spark.conf.set(RedactionConf, s"$current|$SecretOptionsRegex")
  }

  /** The loggers that print credentials at DEBUG, under the names they have in this build (shaded or not). */
  def credentialLoggers: Seq[String] = {
    val http = classOf[org.apache.http.HttpHost].getPackage.getName // org.apache.http, relocated when shaded
    val sdk = classOf[software.amazon.awssdk.core.SdkBytes].getPackage.getName.stripSuffix(".core")
    Seq(s"$http.wire", s"$http.headers", s"$sdk.http.auth.aws.internal.signer", s"$sdk.auth.signer")
  }

  /** Sets the [[credentialLoggers]] to INFO when log4j 2 is the logging backend (Spark's default); once per JVM. */
  lazy val capCredentialLoggers: Unit = {
    val capped = Try {
      import org.apache.logging.log4j.Level
      import org.apache.logging.log4j.core.config.Configurator
      credentialLoggers.foreach { name =>
        val level = org.apache.logging.log4j.LogManager.getLogger(name).getLevel
        if (level == null || level.isLessSpecificThan(Level.INFO)) Configurator.setLevel(name, Level.INFO)
      }
    }
    if (capped.isFailure)
      log.warn(
        "Could not cap the HTTP wire and signer loggers at INFO (log4j 2 is not the logging backend): do not set " +
          credentialLoggers.mkString(", ") + " to DEBUG, they print credentials"
      )
    else log.debug(s"Capped at INFO (they print credentials): ${credentialLoggers.mkString(", ")}")
  }
}
