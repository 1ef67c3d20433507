package io.sparkkinesis.sink

import java.io.{BufferedInputStream, InputStream, OutputStream}
import java.net.{InetAddress, InetSocketAddress, ServerSocket, Socket}
import java.nio.charset.StandardCharsets.{ISO_8859_1, UTF_8}
import java.util.Base64
import java.util.Locale
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import io.sparkkinesis.config.ProxyConfig
import io.sparkkinesis.resources.DaemonThreads
import org.slf4j.LoggerFactory

/**
 * A loopback HTTP proxy between the KPL's native process and the user's proxy, so that the proxy password never
 * leaves this JVM. KPL 1.1.1 hands its whole configuration, proxy password included, to its native process
 * hex-encoded on the command line (`-c`), which any local user can read in `/proc/<pid>/cmdline` (and which the KPL
 * logs at debug level). Credentials are different: the KPL sends them over its private pipe. There is no such message
 * for the proxy, so when a proxy password is set the sink gives the KPL this relay as its proxy, without credentials.
 * The relay accepts only `CONNECT` requests for the endpoints the producer is configured for (`allowedTargets`,
 * `host:port`), opens each tunnel through the user's proxy with a `Proxy-Authorization` header, and then copies bytes
 * both ways: TLS stays end to end between the native process and Kinesis. The user's proxy's answer to the CONNECT
 * (200, or 407 for refused credentials) goes back to the native process as it came.
 * One relay per producer; [[close]] stops accepting and closes the open tunnels.
 */
private[sparkkinesis] final class ProxyRelay(upstream: ProxyConfig, allowedTargets: Set[String])
    extends AutoCloseable {
  import ProxyRelay._

  private val allowed = allowedTargets.map(_.toLowerCase(Locale.ROOT))
  private val server = new ServerSocket()
  server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress, 0), 64)
  private val closed = new AtomicBoolean(false)
  private val refusalLogged = new AtomicBoolean(false)
  private val open = ConcurrentHashMap.newKeySet[Socket]()

  private val authorization: Option[String] = upstream.username.map { user =>
    val pair = s"$user:${upstream.password.getOrElse("")}".getBytes(UTF_8)
    "Basic " + Base64.getEncoder.encodeToString(pair)
  }

  /** The loopback port the KPL's native process is pointed at. */
  val port: Int = server.getLocalPort

  private val acceptor = daemon(s"spark-kinesis proxy relay $port") {
    while (!closed.get)
      try {
        val client = server.accept()
        track(client)
        daemon(s"spark-kinesis proxy relay $port tunnel")(serve(client)).start()
      } catch {
        case NonFatal(e) => if (!closed.get) log.warn(s"Proxy relay on port $port: accept failed: $e")
      }
  }
  acceptor.start()

  private def track(socket: Socket): Unit = {
    open.add(socket)
    if (closed.get) quietly(socket.close())
  }

  private def serve(client: Socket): Unit = {
    var tunnel: Option[Socket] = None
    try {
      val in = new BufferedInputStream(client.getInputStream)
      val out = client.getOutputStream
      val head = readHead(in)
      val requestLine = head.split("\r\n").headOption.getOrElse("").trim
      requestLine.split(" ") match {
        case Array(method, target, _*)
            if method.equalsIgnoreCase("CONNECT") && allowed.contains(target.toLowerCase(Locale.ROOT)) =>
          val socket = new Socket()
          track(socket)
          tunnel = Some(socket)
          socket.connect(new InetSocketAddress(upstream.host, upstream.port), ConnectTimeoutMs)
          val request = new StringBuilder(s"CONNECT $target HTTP/1.1\r\nHost: $target\r\n")
          authorization.foreach(a => request.append(s"Proxy-Authorization: $a\r\n"))
          request.append("\r\n")
          val upOut = socket.getOutputStream
          upOut.write(request.toString.getBytes(ISO_8859_1))
          upOut.flush()
          val upIn = new BufferedInputStream(socket.getInputStream)
          // The proxy's answer to the CONNECT goes back as it came; a refusal of the credentials is also logged.
          val reply = readHead(upIn)
          val status = reply.split("\r\n").headOption.getOrElse("").trim
          if (status.split(" ").lift(1).contains("407") && refusalLogged.compareAndSet(false, true))
            log.warn(
              s"The proxy ${upstream.host}:${upstream.port} refused the sink's proxy credentials ($status) for the " +
                s"tunnel to $target: check the proxy user name and password (kinesis.sink.proxyUsername and " +
                "kinesis.sink.proxyPassword, or kinesis.proxyUsername and kinesis.proxyPassword). Rows fail after " +
                "kinesis.sink.recordTtl."
            )
          out.write(reply.getBytes(ISO_8859_1))
          out.flush()
          val back = daemon(s"spark-kinesis proxy relay $port reply")(copy(upIn, out, client))
          back.start()
          copy(in, upOut, socket)
          back.join()
        case _ =>
          log.warn(
            s"Proxy relay on port $port refused '${requestLine.take(200)}': it relays only CONNECT to " +
              allowed.toSeq.sorted.mkString(", ")
          )
          out.write(Forbidden)
          out.flush()
      }
    } catch {
      case NonFatal(e) => if (!closed.get) log.debug(s"Proxy relay on port $port: tunnel ended: $e")
    } finally {
      (tunnel.toSeq :+ client).foreach { s => quietly(s.close()); open.remove(s) }
    }
  }

  def close(): Unit = if (closed.compareAndSet(false, true)) {
    quietly(server.close())
    open.forEach(s => quietly(s.close()))
    open.clear()
  }
}

private[sparkkinesis] object ProxyRelay {
  private val log = LoggerFactory.getLogger(classOf[ProxyRelay])

  private val ConnectTimeoutMs = 10000
  private val MaxHeadBytes = 16384

  private val Forbidden =
    "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".getBytes(ISO_8859_1)

  /** The request's head (request line and headers), read up to the blank line; what follows stays in `in`. */
  private[sink] def readHead(in: InputStream): String = {
    val bytes = new java.io.ByteArrayOutputStream()
    var last4 = 0
    var b = in.read()
    while (b >= 0) {
      bytes.write(b)
      last4 = (last4 << 8) | b
      if (last4 == 0x0d0a0d0a) return new String(bytes.toByteArray, ISO_8859_1)
      if (bytes.size() > MaxHeadBytes) throw new IllegalStateException("request head too long")
      b = in.read()
    }
    throw new IllegalStateException("connection closed before the request head ended")
  }

  /** Copies until `from` ends, then half-closes `toSocket`'s output so that the other side sees the end. */
  private def copy(from: InputStream, to: OutputStream, toSocket: Socket): Unit = {
    val buffer = new Array[Byte](16384)
    try {
      var n = from.read(buffer)
      while (n >= 0) {
        to.write(buffer, 0, n)
        to.flush()
        n = from.read(buffer)
      }
    } catch { case NonFatal(_) => () }
    finally quietly(toSocket.shutdownOutput())
  }

  private def daemon(name: String)(body: => Unit): Thread = DaemonThreads(name).newThread(() => body)

  private def quietly(action: => Unit): Unit =
    try action
    catch { case NonFatal(_) => () }
}
