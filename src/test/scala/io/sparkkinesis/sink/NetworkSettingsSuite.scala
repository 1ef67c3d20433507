package io.sparkkinesis.sink

import java.io.{BufferedInputStream, InputStream}
import java.net.{InetAddress, ServerSocket, Socket}
import java.nio.charset.StandardCharsets.{ISO_8859_1, UTF_8}
import java.util.Base64
import java.util.concurrent.{ArrayBlockingQueue, TimeUnit}

import io.sparkkinesis.config.{NetworkConfig, OptionRuleViolation, ProxyConfig, SinkConfig, SourceConfig}
import io.sparkkinesis.testutil.ErrorChecks.optionErrorMessage
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}

/**
 * The network options (proxy, timeouts, connection cap) as the source and the sink parse them, and the loopback
 * relay that keeps a proxy password away from the KPL's native process. The real proxying, through a forward proxy in
 * front of kinesis-local, is tests/test_forward_proxy.py.
 */
class NetworkSettingsSuite extends AnyFunSuite {

  private val source = Map("kinesis.streamName" -> "s", "kinesis.region" -> "eu-west-1")
  private val sink = source + ("kinesis.endpointUrl" -> "https://localhost:4567")

  private def readNetwork(extra: (String, String)*): NetworkConfig =
    SourceConfig.parse(source ++ extra, () => None).client.network

  private def writeConfig(extra: (String, String)*): SinkConfig = SinkConfig.parse(sink ++ extra, () => None)

  test("without network options, the clients keep the settings they had before these options existed") {
    assert(readNetwork() == NetworkConfig(None, 2000L, 30000L, None, 64))
    assert(readNetwork() == NetworkConfig.Default)
    assert(writeConfig().client.network == NetworkConfig.Default)
    assert(writeConfig().producer.proxy.isEmpty)
  }

  test("the options set the proxy, the timeouts and the connection cap of every client, STS included") {
    val options = Seq(
      "kinesis.proxyAddress" -> "proxy.corp",
      "kinesis.proxyPort" -> "3128",
      "kinesis.proxyUsername" -> "svc",
      "kinesis.proxyPassword" -> "pw-1",
      "kinesis.clientConnectTimeoutMs" -> "1500",
      "kinesis.clientSocketTimeoutMs" -> "45000",
      "kinesis.clientApiCallAttemptTimeoutMs" -> "20000",
      "kinesis.clientMaxConnections" -> "8",
      "kinesis.stsRoleArn" -> "arn:aws:iam::123456789012:role/r"
    )
    val client = SourceConfig.parse(source ++ options, () => None).client
    val expected =
      NetworkConfig(
        Some(ProxyConfig("proxy.corp", 3128, Some("svc"), Some("pw-1"))),
        1500L,
        45000L,
        Some(20000L),
        8
      )
    assert(client.network == expected)
    assert(client.credentials.network == expected, "the STS client of the role uses them too")
    assert(writeConfig(options: _*).producer.proxy == expected.proxy)
  }

  test("the proxy port defaults to 443, as the KPL's does") {
    assert(readNetwork("kinesis.proxyAddress" -> "p").proxy.contains(ProxyConfig("p", 443, None, None)))
  }

  test("a write takes the awslabs names of the proxy options, for its KPL and its SDK clients alike") {
    val c = writeConfig(
      "kinesis.sink.proxyAddress" -> "10.0.0.7",
      "kinesis.sink.proxyPort" -> "8080",
      "kinesis.sink.proxyUsername" -> "u",
      "kinesis.sink.proxyPassword" -> "p"
    )
    val proxy = Some(ProxyConfig("10.0.0.7", 8080, Some("u"), Some("p")))
    assert(c.producer.proxy == proxy && c.client.network.proxy == proxy)
  }

  test(
    "the two families of proxy options at once, a password without a user, a port without a host: refused"
  ) {
    def rule(options: Map[String, String], parse: Map[String, String] => Any): String =
      intercept[OptionRuleViolation](parse(options)).ruleId
    val write = (o: Map[String, String]) => SinkConfig.parse(o, () => None)
    val read = (o: Map[String, String]) => SourceConfig.parse(o, () => None)
    assert(
      rule(sink ++ Map("kinesis.sink.proxyAddress" -> "a", "kinesis.proxyAddress" -> "b"), write) ==
        "sink-one-proxy-family"
    )
    assert(
      rule(source ++ Map("kinesis.proxyAddress" -> "a", "kinesis.proxyPassword" -> "p"), read) ==
        "proxy-password-needs-username"
    )
    assert(rule(source ++ Map("kinesis.proxyPort" -> "8080"), read) == "proxy-port-needs-address")
    assert(
      rule(sink ++ Map("kinesis.sink.proxyUsername" -> "u"), write) == "sink-proxy-username-needs-address"
    )
    val wrongSide = optionErrorMessage(
      intercept[IllegalArgumentException](read(source + ("kinesis.sink.proxyAddress" -> "a")))
    )
    assert(wrongSide.contains("kinesis.sink.proxyAddress applies to writes"), wrongSide)
  }

  test("bad values name the option, the value and what is allowed; a bad password is never echoed") {
    def message(extra: (String, String)*): String =
      optionErrorMessage(intercept[IllegalArgumentException](readNetwork(extra: _*)))
    val zero = message("kinesis.clientConnectTimeoutMs" -> "0")
    assert(
      zero.contains("kinesis.clientConnectTimeoutMs") && zero.contains("'0'") && zero.contains("1ms to 10m")
    )
    val cap = message("kinesis.clientMaxConnections" -> "10001")
    assert(cap.contains("kinesis.clientMaxConnections") && cap.contains("1 to 10000"), cap)
    val url = message("kinesis.proxyAddress" -> "http://proxy:3128")
    assert(url.contains("kinesis.proxyAddress") && url.contains("without scheme or port"), url)
    val port = message("kinesis.proxyAddress" -> "p", "kinesis.proxyPort" -> "70000")
    assert(port.contains("kinesis.proxyPort") && port.contains("1 to 65535"), port)
    val blank =
      message("kinesis.proxyAddress" -> "p", "kinesis.proxyUsername" -> "u", "kinesis.proxyPassword" -> " ")
    assert(blank.contains("kinesis.proxyPassword") && blank.contains("<redacted>"), blank)
  }

  test("the proxy password shows in no configuration's string form") {
    val secret = "pw-in-no-string-9f3"
    val c = writeConfig(
      "kinesis.sink.proxyAddress" -> "proxy.corp",
      "kinesis.sink.proxyUsername" -> "svc",
      "kinesis.sink.proxyPassword" -> secret
    )
    for (text <- Seq(c.toString, c.client.toString, c.producer.toString, c.client.credentials.toString))
      assert(!text.contains(secret), text)
    assert(c.producer.proxy.get.toString == "ProxyConfig[proxy.corp:443 as svc with password (redacted)]")
  }

  test("the KPL gets a proxy without a password: the password stays with a loopback relay in this JVM") {
    val secret = "kpl-proxy-secret-7c1"
    val settings = writeConfig(
      "kinesis.sink.proxyAddress" -> "proxy.corp",
      "kinesis.sink.proxyPort" -> "3128",
      "kinesis.sink.proxyUsername" -> "svc",
      "kinesis.sink.proxyPassword" -> secret
    ).producer
    val (given, relay) = KplProducer.withRelay(settings)
    try {
      assert(relay.isDefined)
      assert(given.proxy.contains(ProxyConfig("127.0.0.1", relay.get.port, None, None)))
      val credentials = StaticCredentialsProvider.create(AwsBasicCredentials.create("AKID", "secret-key"))
      val config = KplProducer.configuration(given, credentials)
      assert(config.getProxyHost == "127.0.0.1" && config.getProxyPort == relay.get.port.toLong)
      // The KPL's configuration message (hex-encoded on the native process's command line) is made of these.
      assert(config.getProxyPassword.isEmpty && config.getProxyUserName.isEmpty)
      assert(!config.toString.contains(secret))
    } finally relay.foreach(_.close())
    // Without a password there is nothing to keep away: the KPL talks to the proxy itself, user name included.
    val plain =
      writeConfig("kinesis.sink.proxyAddress" -> "proxy.corp", "kinesis.sink.proxyUsername" -> "svc")
    val (same, none) = KplProducer.withRelay(plain.producer)
    assert(none.isEmpty && same == plain.producer)
    val config =
      KplProducer.configuration(same, StaticCredentialsProvider.create(AwsBasicCredentials.create("a", "b")))
    assert(
      config.getProxyHost == "proxy.corp" && config.getProxyPort == 443L && config.getProxyUserName == "svc"
    )
  }

  test(
    "the relay opens tunnels through the user's proxy with its credentials, only to the producer's endpoints"
  ) {
    val upstream = new FakeProxy
    val relay = new ProxyRelay(
      ProxyConfig("127.0.0.1", upstream.port, Some("svc"), Some("p@ss:w")),
      Set("kinesis.local:4567")
    )
    try {
      val client = new Socket(InetAddress.getLoopbackAddress, relay.port)
      client.setSoTimeout(10000)
      val out = client.getOutputStream
      val in = new BufferedInputStream(client.getInputStream)
      out.write(
        "CONNECT kinesis.local:4567 HTTP/1.1\r\nHost: kinesis.local:4567\r\n\r\nhello".getBytes(ISO_8859_1)
      )
      out.flush()
      assert(ProxyRelay.readHead(in).startsWith("HTTP/1.1 200"))
      assert(
        new String(in.readNBytes(5), ISO_8859_1) == "hello",
        "bytes sent right after the CONNECT pass too"
      )
      val seen = upstream.heads.poll(10, TimeUnit.SECONDS)
      assert(seen.startsWith("CONNECT kinesis.local:4567 HTTP/1.1\r\n"), seen)
      val basic = "Basic " + Base64.getEncoder.encodeToString("svc:p@ss:w".getBytes(UTF_8))
      assert(seen.contains(s"Proxy-Authorization: $basic\r\n"), seen)
      client.close()

      val other = new Socket(InetAddress.getLoopbackAddress, relay.port)
      other.setSoTimeout(10000)
      other.getOutputStream.write("CONNECT evil.example:443 HTTP/1.1\r\n\r\n".getBytes(ISO_8859_1))
      assert(ProxyRelay.readHead(new BufferedInputStream(other.getInputStream)).startsWith("HTTP/1.1 403"))
      other.close()
      assert(
        upstream.heads.poll(500, TimeUnit.MILLISECONDS) == null,
        "a refused target never reaches the proxy"
      )
    } finally {
      relay.close()
      upstream.close()
    }
    // Checked on the relay itself: a connect to its old port could reach another listener that took the port since.
    val server = classOf[ProxyRelay].getDeclaredField("server")
    server.setAccessible(true)
    assert(server.get(relay).asInstanceOf[ServerSocket].isClosed, "a closed relay accepts no connection")
  }

  test("the socket and attempt timeouts reach the Kinesis client: a silent endpoint fails the call in time") {
    val silent = new ServerSocket(0, 10, InetAddress.getLoopbackAddress)
    val held = new java.util.concurrent.CopyOnWriteArrayList[Socket]()
    val acceptor = new Thread(() =>
      try while (true) held.add(silent.accept())
      catch { case _: java.io.IOException => () }
    )
    acceptor.setDaemon(true)
    acceptor.start()
    def failsAfterMs(extra: (String, String)*): Long = {
      val options = source ++ Map(
        "kinesis.endpointUrl" -> s"http://127.0.0.1:${silent.getLocalPort}",
        "kinesis.clientNumRetries" -> "0",
        "kinesis.awsAccessKeyId" -> "AKIDEXAMPLE",
        "kinesis.awsSecretKey" -> "secret"
      ) ++ extra
      val client = new io.sparkkinesis.client.SdkKinesisClient(SourceConfig.parse(options, () => None).client)
      val started = System.nanoTime()
      try intercept[Exception](client.describeStream("s"))
      finally client.close()
      (System.nanoTime() - started) / 1000000L
    }
    try {
      // The endpoint accepts and never answers: only the configured timeout ends the call (the default is 30 s).
      val socket = failsAfterMs("kinesis.clientSocketTimeoutMs" -> "400")
      // Below 20 s, however loaded the machine: the default 30 s timeout would not have ended the call yet.
      assert(socket >= 350 && socket < 20000, s"socket timeout 400 ms: the call failed after $socket ms")
      val attempt = failsAfterMs("kinesis.clientApiCallAttemptTimeoutMs" -> "400")
      assert(attempt >= 350 && attempt < 20000, s"attempt timeout 400 ms: the call failed after $attempt ms")
    } finally {
      silent.close()
      held.forEach(s => s.close())
    }
  }

  /** A proxy that records each request head, answers 200 and then echoes the tunnel's bytes. */
  private final class FakeProxy extends AutoCloseable {
    private val server = new ServerSocket(0, 10, InetAddress.getLoopbackAddress)
    val port: Int = server.getLocalPort
    val heads = new ArrayBlockingQueue[String](10)

    private val thread = new Thread(() =>
      try
        while (true) {
          val s = server.accept()
          val in: InputStream = new BufferedInputStream(s.getInputStream)
          heads.add(ProxyRelay.readHead(in))
          val out = s.getOutputStream
          out.write("HTTP/1.1 200 Connection established\r\n\r\n".getBytes(ISO_8859_1))
          out.flush()
          val buffer = new Array[Byte](1024)
          var n = in.read(buffer)
          while (n >= 0) { out.write(buffer, 0, n); out.flush(); n = in.read(buffer) }
          s.close()
        }
      catch { case _: java.io.IOException => () }
    )
    thread.setDaemon(true)
    thread.start()
    def close(): Unit = server.close()
  }
}
