package io.sparkkinesis.metadata

import io.sparkkinesis.metadata.CommitterKeys._

import java.io.IOException
import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.{Callable, Executors, TimeUnit}

import io.sparkkinesis.config.RetryPolicy
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.http.{
  ExecutableHttpRequest,
  HttpExecuteRequest,
  HttpExecuteResponse,
  SdkHttpClient
}
import software.amazon.awssdk.http.apache.ApacheHttpClient

/**
 * An HTTP client that fails a share of the calls: half before the request is sent (nothing happened), half after the
 * response came back (the write happened, the caller never hears of it), as a dropped connection would.
 */
final class FlakyHttpClient(delegate: SdkHttpClient, failRate: Double, seed: Long) extends SdkHttpClient {
  private val random = new java.util.Random(seed)
  val failedBeforeSend = new AtomicInteger()
  val failedAfterResponse = new AtomicInteger()
  @volatile var enabled = true

  override def prepareRequest(request: HttpExecuteRequest): ExecutableHttpRequest = {
    val inner = delegate.prepareRequest(request)
    new ExecutableHttpRequest {
      override def call(): HttpExecuteResponse = {
        val roll = if (enabled) random.synchronized(random.nextDouble()) else 1.0
        if (roll < failRate / 2) {
          failedBeforeSend.incrementAndGet()
          throw new IOException("injected: connection reset before the request was sent")
        }
        val response = inner.call()
        if (roll < failRate) {
          failedAfterResponse.incrementAndGet()
          response.responseBody().ifPresent(_.close())
          throw new IOException("injected: connection reset before the response was read")
        }
        response
      }
      override def abort(): Unit = inner.abort()
    }
  }
  override def close(): Unit = delegate.close()
}

/**
 * The DynamoDB committer while a fifth of its HTTP calls fail, half of them after DynamoDB acted: a simulated query
 * runs many batches, each shard end written by two racing task attempts, read back by the driver and by a replay,
 * with purges as the query commits. No batch may be lost, and every reader of a batch must see the same end.
 */
class DynamoDbFaultInjectionSuite extends AnyFunSuite {

  test("faults on a fifth of the calls: no entry lost, every reader agrees, at most one writer told it won") {
    val config = DynamoDbTestConfig(DynamoDbTestConfig.uniqueTable("faults"), RetryPolicy(10, 5, 50))
    DynamoDbMetadataCommitter(config, "create-the-table")
    val flaky = new FlakyHttpClient(ApacheHttpClient.builder().build(), failRate = 0.2, seed = 42)
    val client = DynamoDbClients.open(config, Some(flaky)).value
    val partition = DynamoDbMetadataCommitter.partitionFor("file:/chk/faults/sources/0", "run-1")
    def open() = new DynamoDbMetadataCommitter(client, config.tableName, partition, config.retry)
    val pool = Executors.newFixedThreadPool(2)
    val shards = Seq("orders/shardId-0", "orders/shardId-1")
    val retain = 5
    var neutralWins = 0
    try
      for (batch <- 0L until 80L) {
        for (shard <- shards) {
          val attempts = (0 until 2).map { attempt =>
            pool.submit(new Callable[Boolean] {
              def call(): Boolean =
                open().putIfAbsent(batch, shard, s"end of $shard in $batch by attempt $attempt")
            })
          }
          val won = attempts.map(_.get(60, TimeUnit.SECONDS))
          assert(won.count(identity) <= 1, s"batch $batch $shard: both attempts told they won")
          val driver = open().get(batch, shard)
          val replay = open().get(batch, shard)
          assert(driver.isDefined, s"batch $batch $shard: the entry is lost")
          assert(driver == replay, s"batch $batch $shard: the driver and a replay disagree")
          won.indexOf(true) match {
            case -1 => neutralWins += 1 // the winner's response was lost: the neutral outcome
            case i =>
              assert(driver.contains(s"end of $shard in $batch by attempt $i"), s"batch $batch $shard")
          }
        }
        if (batch % 10 == 9) open().purgeBefore(batch - retain + 1)
      }
    finally pool.shutdownNow()
    flaky.enabled = false
    val c = open()
    for (batch <- 75L until 80L; shard <- shards) assert(c.get(batch, shard).isDefined, s"batch $batch lost")
    assert(c.keys(74).isEmpty && c.keys(75).size == 2, "purge kept the wrong batches")
    assert(
      flaky.failedBeforeSend.get() > 20 && flaky.failedAfterResponse.get() > 20,
      "too few faults injected"
    )
    info(
      s"faults before send: ${flaky.failedBeforeSend.get()}, after the response: ${flaky.failedAfterResponse.get()}, " +
        s"entries whose winner heard false: $neutralWins"
    )
    client.close()
  }
}
