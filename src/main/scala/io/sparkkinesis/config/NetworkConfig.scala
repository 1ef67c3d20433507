package io.sparkkinesis.config

/**
 * An HTTP proxy the connector's AWS calls go through: plain HTTP to the proxy, CONNECT tunnels for HTTPS endpoints,
 * Basic authentication when a user name is given. Equality covers the password (it is part of the keys of the
 * per-JVM client caches); `toString` never shows it.
 */
private[sparkkinesis] final case class ProxyConfig(
    host: String,
    port: Int,
    username: Option[String],
    password: Option[String]
) {

  override def toString: String =
    s"ProxyConfig[$host:$port" + username.fold("")(u => s" as $u") +
      password.fold("")(_ => " with password (redacted)") + "]"
}

/**
 * Network settings of the connector's AWS SDK clients (Kinesis, DynamoDB, STS): proxy, timeouts and connection
 * limit, as the `kinesis.proxy*` and `kinesis.client*` options describe them. `toString` shows no secret.
 */
private[sparkkinesis] final case class NetworkConfig(
    proxy: Option[ProxyConfig],
    connectTimeoutMs: Long,
    socketTimeoutMs: Long,
    apiCallAttemptTimeoutMs: Option[Long],
    maxConnections: Int
)

private[sparkkinesis] object NetworkConfig {
  import KinesisOptions._

  /** The settings when no network option is given: the options' defaults, no proxy. */
  val Default: NetworkConfig = parse(new OptionValues(Map.empty, OptionScope.Both))

  /**
   * The network options of a validated view. A write may name its proxy with the awslabs keys
   * (`kinesis.sink.proxy*`) or with ours (`kinesis.proxy*`); OptionRules refuses both at once.
   */
  def parse(view: OptionValues): NetworkConfig = {
    def family(
        address: OptionSpec[String],
        port: OptionSpec[Long],
        user: OptionSpec[String],
        pw: OptionSpec[String]
    ) =
      view.get(address).map(ProxyConfig(_, view.getOrDefault(port).toInt, view.get(user), view.get(pw)))
    NetworkConfig(
      proxy = family(SinkProxyAddress, SinkProxyPort, SinkProxyUsername, SinkProxyPassword)
        .orElse(family(ProxyAddress, ProxyPort, ProxyUsername, ProxyPassword)),
      connectTimeoutMs = view.getOrDefault(ClientConnectTimeoutMs),
      socketTimeoutMs = view.getOrDefault(ClientSocketTimeoutMs),
      apiCallAttemptTimeoutMs = view.get(ClientApiCallAttemptTimeoutMs),
      maxConnections = view.getOrDefault(ClientMaxConnections).toInt
    )
  }
}
