package io.sparkkinesis.config

import java.net.URI
import java.time.Duration

import software.amazon.awssdk.awscore.retry.AwsRetryStrategy
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration
import software.amazon.awssdk.http.apache.{ApacheHttpClient, ProxyConfiguration => ApacheProxy}
import software.amazon.awssdk.http.nio.netty.{ProxyConfiguration => NettyProxy}
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient.{Builder => NettyBuilder}
import software.amazon.awssdk.retries.StandardRetryStrategy
import software.amazon.awssdk.retries.api.BackoffStrategy

/**
 * The connector's [[NetworkConfig]] applied to the AWS SDK's HTTP clients: Apache (every synchronous client:
 * Kinesis, DynamoDB, STS) and Netty (enhanced fan-out). A proxy given in the options is the only one used: the
 * JVM's proxy system properties and the `HTTPS_PROXY` environment variable are not consulted then. Without one, the
 * SDK's own defaults apply (Apache honours the proxy system properties).
 */
private[sparkkinesis] object HttpSettings {

  /** An Apache client builder with the connect and socket timeouts, the connection cap and the proxy. */
  def apache(network: NetworkConfig): ApacheHttpClient.Builder = {
    val builder = ApacheHttpClient.builder().maxConnections(network.maxConnections)
    builder.connectionTimeout(Duration.ofMillis(network.connectTimeoutMs))
    builder.socketTimeout(Duration.ofMillis(network.socketTimeoutMs))
    network.proxy.foreach { p =>
      val proxy = ApacheProxy.builder().endpoint(URI.create(s"http://${p.host}:${p.port}"))
      proxy.useSystemPropertyValues(false).useEnvironmentVariableValues(false)
      for (user <- p.username) {
        proxy.username(user).password(p.password.getOrElse(""))
        // Send the credentials with the first request instead of after a 407 challenge: one round trip less, and
        // proxies that close the connection on a 407 still work.
        proxy.preemptiveBasicAuthenticationEnabled(true)
      }
      builder.proxyConfiguration(proxy.build())
    }
    builder
  }

  /**
   * The Netty client's proxy and connect timeout. Its read timeout stays the fan-out client's own (a subscription
   * may carry no bytes for minutes) and its concurrency uncapped (see `io.sparkkinesis.client.SdkSubscriptionClient`).
   */
  def netty(builder: NettyBuilder, network: NetworkConfig): NettyBuilder = {
    builder.connectionTimeout(Duration.ofMillis(network.connectTimeoutMs))
    network.proxy.foreach { p =>
      val proxy = NettyProxy.builder().scheme("http").host(p.host).port(p.port)
      proxy.useSystemPropertyValues(false).useEnvironmentVariableValues(false)
      p.username.foreach(user => proxy.username(user).password(p.password.getOrElse("")))
      builder.proxyConfiguration(proxy.build())
    }
    builder
  }

  /** The per-attempt timeout of API calls, when one is set, on a client's override configuration. */
  def apiCallAttemptTimeout(
      overrides: ClientOverrideConfiguration.Builder,
      network: NetworkConfig
  ): ClientOverrideConfiguration.Builder =
    network.apiCallAttemptTimeoutMs.fold(overrides)(ms =>
      overrides.apiCallAttemptTimeout(Duration.ofMillis(ms))
    )

  /**
   * The SDK's standard retry strategy with up to `retries` retries, no circuit breaker, and the same exponential
   * back-off from `baseMs` to `maxMs` for throttled requests as for other failures.
   */
  def standardRetries(retries: Int, baseMs: Long, maxMs: Long): StandardRetryStrategy.Builder = {
    val backoff = BackoffStrategy.exponentialDelay(Duration.ofMillis(baseMs), Duration.ofMillis(maxMs))
    AwsRetryStrategy
      .standardRetryStrategy()
      .toBuilder
      .maxAttempts(retries + 1)
      .circuitBreakerEnabled(false)
      .backoffStrategy(backoff)
      .throttlingBackoffStrategy(backoff)
  }
}
