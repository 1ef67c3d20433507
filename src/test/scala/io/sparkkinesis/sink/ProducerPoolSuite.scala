package io.sparkkinesis.sink

import java.util.concurrent.atomic.AtomicInteger

import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.credentials.ParamProvider
import io.sparkkinesis.resources.SharedResources
import org.scalatest.funsuite.AnyFunSuite

/** Which writes share a producer: equal producer settings and equal credential options, nothing less. */
class ProducerPoolSuite extends AnyFunSuite {

  private val base = Map(
    "kinesis.streamName" -> "enriched",
    "kinesis.region" -> "eu-west-1",
    "kinesis.endpointUrl" -> "https://localhost:4567"
  )
  private val keys = Map("kinesis.awsAccessKeyId" -> "AKIAFIRST", "kinesis.awsSecretKey" -> "first-secret-77")
  private val role = "arn:aws:iam::111122223333:role/writer"

  private def key(options: Map[String, String]): ProducerKey = {
    val config = SinkConfig.parse(base ++ options, () => None)
    ProducerKey(config.producer, config.client.credentials)
  }

  /** A pool whose "producers" are numbers, one per start; every lease is kept. */
  private final class Counting {
    val started = new AtomicInteger()
    val cache = new SharedResources[ProducerKey, Int]("producer", _ => started.incrementAndGet(), _ => ())
    def get(options: Map[String, String]): Int = cache.acquire(key(options)).value
  }

  test("identical options share one producer, whatever the stream") {
    val pool = new Counting
    val first = pool.get(keys)
    assert(pool.get(keys) == first)
    assert(pool.get(keys + ("kinesis.streamName" -> "other")) == first)
    assert(pool.get(Map.empty) == pool.get(Map.empty))
    assert(pool.started.get == 2)
  }

  test("options that differ only in credentials get different producers") {
    val variants = Seq(
      "no credentials options (default chain)" -> Map.empty[String, String],
      "static keys" -> keys,
      "another access key id" -> (keys + ("kinesis.awsAccessKeyId" -> "AKIASECOND")),
      "another secret key" -> (keys + ("kinesis.awsSecretKey" -> "second-secret-88")),
      "a session token" -> (keys + ("kinesis.sessionToken" -> "token-1")),
      "a role" -> (keys + ("kinesis.stsRoleArn" -> role)),
      "another role" -> (keys + ("kinesis.stsRoleArn" -> s"$role-2")),
      "a role with an external id" -> (keys ++ Map(
        "kinesis.stsRoleArn" -> role,
        "kinesis.stsExternalId" -> "x"
      )),
      "a custom provider" -> Map("kinesis.credentialProviderClass" -> classOf[ParamProvider].getName),
      "a custom provider with a parameter" -> Map(
        "kinesis.credentialProviderClass" -> classOf[ParamProvider].getName,
        "kinesis.credentialProviderParam" -> "p2"
      )
    )
    val pool = new Counting
    val producers = variants.map { case (name, options) => name -> pool.get(options) }
    val shared = producers.groupBy(_._2).values.filter(_.size > 1).map(_.map(_._1))
    assert(shared.isEmpty, s"these share a producer: ${shared.mkString("; ")}")
    assert(pool.started.get == variants.size)
  }

  test("a key names its credentials source but shows no secret") {
    val shown = key(keys + ("kinesis.sessionToken" -> "token-1")).toString
    assert(shown.contains("static keys"))
    assert(!shown.contains("first-secret-77") && !shown.contains("AKIAFIRST") && !shown.contains("token-1"))
    val assumed = key(keys ++ Map("kinesis.stsRoleArn" -> role, "kinesis.stsExternalId" -> "ext-9")).toString
    assert(assumed.contains(role))
    assert(
      !assumed.contains("ext-9") && !assumed.contains("first-secret-77") && !assumed.contains("AKIAFIRST")
    )
    val custom = key(
      Map(
        "kinesis.credentialProviderClass" -> classOf[ParamProvider].getName,
        "kinesis.credentialProviderParam" -> "param-secret"
      )
    ).toString
    assert(custom.contains(classOf[ParamProvider].getName) && !custom.contains("param-secret"))
  }

  test("a producer whose native process died is closed and replaced; its key then gets the new one") {
    val dead = new java.util.concurrent.ConcurrentHashMap[Int, Boolean]()
    val closed = new AtomicInteger()
    val started = new AtomicInteger()
    val cache = new SharedResources[ProducerKey, Int](
      "producer",
      _ => started.incrementAndGet(),
      p => closed.set(p),
      p => dead.containsKey(p)
    )
    val k = key(keys)
    val first = cache.acquire(k).value
    dead.put(first, true)
    val second = cache.acquire(k).value
    assert(second != first && closed.get == first)
    assert(cache.acquire(k).value == second)
  }
}
