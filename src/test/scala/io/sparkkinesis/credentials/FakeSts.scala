package io.sparkkinesis.credentials

import java.net.{InetSocketAddress, URLDecoder}
import java.nio.charset.StandardCharsets.UTF_8
import java.time.Instant
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger

import scala.jdk.CollectionConverters._

import com.sun.net.httpserver.{HttpExchange, HttpServer}

/**
 * A tiny STS on loopback for unit tests: it speaks the real AssumeRole wire protocol (form-encoded query request,
 * XML response), records every request (parameters and the access key id that signed it), and hands out
 * numbered session credentials valid for `validFor`.
 */
final class FakeSts(validFor: java.time.Duration = java.time.Duration.ofHours(1)) extends AutoCloseable {

  final case class Request(params: Map[String, String], signedBy: String)

  private val server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0)
  private val seen = new ConcurrentLinkedQueue[Request]()
  private val issued = new AtomicInteger()

  /** While set, each request after the first waits (up to 60 s) for this latch before it is answered. */
  @volatile var holdRefreshes: Option[java.util.concurrent.CountDownLatch] = None

  server.createContext(
    "/",
    (exchange: HttpExchange) => {
      val body = new String(exchange.getRequestBody.readAllBytes(), UTF_8)
      val params = body
        .split('&')
        .filter(_.nonEmpty)
        .map { kv =>
          val (k, v) = kv.span(_ != '=')
          URLDecoder.decode(k, UTF_8) -> URLDecoder.decode(v.drop(1), UTF_8)
        }
        .toMap
      val auth = Option(exchange.getRequestHeaders.getFirst("Authorization")).getOrElse("")
      val signedBy = """Credential=([^/]+)/""".r.findFirstMatchIn(auth).map(_.group(1)).getOrElse("")
      seen.add(Request(params, signedBy))
      if (seen.size > 1) holdRefreshes.foreach(_.await(60, java.util.concurrent.TimeUnit.SECONDS))
      val n = issued.incrementAndGet()
      val expiration = Instant.now().plus(validFor)
      val xml =
        s"""<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
           |<AssumeRoleResult><Credentials>
           |<AccessKeyId>ASIAROLE$n</AccessKeyId><SecretAccessKey>role-secret-$n</SecretAccessKey>
           |<SessionToken>role-token-$n</SessionToken><Expiration>$expiration</Expiration>
           |</Credentials><AssumedRoleUser><AssumedRoleId>AROA1:s</AssumedRoleId>
           |<Arn>${params.getOrElse("RoleArn", "")}</Arn></AssumedRoleUser></AssumeRoleResult>
           |<ResponseMetadata><RequestId>r-$n</RequestId></ResponseMetadata></AssumeRoleResponse>""".stripMargin
      val bytes = xml.getBytes(UTF_8)
      exchange.getResponseHeaders.add("Content-Type", "text/xml")
      exchange.sendResponseHeaders(200, bytes.length.toLong)
      exchange.getResponseBody.write(bytes)
      exchange.close()
    }
  )
  server.start()

  val endpoint: String = s"http://127.0.0.1:${server.getAddress.getPort}"
  def requests: Seq[Request] = seen.asScala.toList
  def close(): Unit = server.stop(0)
}
