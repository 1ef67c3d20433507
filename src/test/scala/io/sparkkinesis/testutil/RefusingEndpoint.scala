package io.sparkkinesis.testutil

import java.net.InetSocketAddress
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicInteger

import com.sun.net.httpserver.HttpServer

/**
 * A loopback endpoint that refuses every Kinesis request as Kinesis does (HTTP 400, a JSON error body), with the
 * error `answer` gives for the request's operation; for the refusals no emulator makes (throttling, AccessDenied,
 * LimitExceeded). The calling JVM must speak JSON to Kinesis (`aws.cborEnabled=false`).
 */
object RefusingEndpoint {

  /** Requests received, by operation (`X-Amz-Target`'s last part). */
  final class Counts {
    private val byOperation = new ConcurrentHashMap[String, AtomicInteger]()

    def add(operation: String): Unit =
      byOperation.computeIfAbsent(operation, _ => new AtomicInteger).incrementAndGet()
    def apply(operation: String): Int = Option(byOperation.get(operation)).fold(0)(_.get)
    def get: Int = byOperation.values().stream().mapToInt(_.get).sum()

    /** The body of the last request of each operation, as sent (the wire request). */
    val lastBody = new ConcurrentHashMap[String, String]()
  }

  /** Runs `body` with the endpoint's URL and its request counts. */
  def using[T](answer: String => String)(body: (String, Counts) => T): T = {
    val requests = new Counts
    val server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0)
    server.createContext(
      "/",
      exchange => {
        val operation =
          Option(exchange.getRequestHeaders.getFirst("X-Amz-Target")).fold("")(_.split('.').last)
        requests.add(operation)
        requests.lastBody.put(operation, new String(exchange.getRequestBody.readAllBytes(), UTF_8))
        val error = answer(operation)
        val json = s"""{"__type":"$error","message":"refused by the test endpoint"}""".getBytes(UTF_8)
        exchange.getResponseHeaders.add("Content-Type", "application/x-amz-json-1.1")
        exchange.getResponseHeaders.add("x-amzn-ErrorType", error)
        exchange.sendResponseHeaders(400, json.length.toLong)
        exchange.getResponseBody.write(json)
        exchange.close()
      }
    )
    server.start()
    try body(s"http://127.0.0.1:${server.getAddress.getPort}", requests)
    finally server.stop(0)
  }
}
