package io.sparkkinesis.client

import io.sparkkinesis.config.NetworkConfig
import io.sparkkinesis.errors.KinesisIllegalArgumentException
import software.amazon.awssdk.core.exception.SdkServiceException

/**
 * A proxy that refuses the connector's credentials (HTTP 407 Proxy Authentication Required) fails every call the
 * same way, so it is reported at once, naming the options to fix, instead of as an opaque I/O error after retries.
 */
private[sparkkinesis] object ProxyErrors {

  private val Refusal = """(?is).*\bproxy\b.*\b407\b.*|.*\b407\b.*\bproxy\b.*""".r

  /** Whether `e` (or a cause) is the proxy's 407: a 407 answer, or a CONNECT tunnel the proxy refused with 407. */
  def isRefusal(e: Throwable, network: NetworkConfig): Boolean =
    network.proxy.isDefined && Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(16).exists {
      case s: SdkServiceException => s.statusCode() == 407
      case other => Option(other.getMessage).exists(m => Refusal.pattern.matcher(m).matches())
    }

  /** The clear error for a refusal found by [[isRefusal]]. */
  def refused(network: NetworkConfig, cause: Throwable): ProxyRefused = {
    val p = network.proxy.get
    val what =
      if (p.username.isEmpty)
        "asks for credentials, and none are set: set kinesis.proxyUsername and kinesis.proxyPassword"
      else
        s"refused the credentials of user '${p.username.get}': check kinesis.proxyUsername and kinesis.proxyPassword"
    new ProxyRefused(s"${p.host}:${p.port}", what, cause)
  }
}

/** The proxy answered 407 Proxy Authentication Required: the proxy options are wrong (KINESIS_INVALID_OPTION). */
private[sparkkinesis] final class ProxyRefused(proxy: String, problem: String, cause: Throwable)
    extends KinesisIllegalArgumentException(
      "KINESIS_INVALID_OPTION.PROXY_REFUSED",
      Seq(proxy, problem),
      cause
    )
