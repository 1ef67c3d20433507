package io.sparkkinesis.source

import io.sparkkinesis.client.KinesisApi
import org.scalatest.funsuite.AnyFunSuite

/** The driver's call ledger gives each planned batch the requests made since the batch before it was planned. */
class DriverCallLedgerSuite extends AnyFunSuite {

  private def call(ledger: DriverCallLedger, api: String, times: Int = 1): Unit =
    (1 to times).foreach(_ => ledger.counter.add(api))

  test(
    "a batch gets the requests made since the previous batch was planned, start-up requests in the first"
  ) {
    val ledger = new DriverCallLedger
    call(ledger, KinesisApi.DescribeStreamSummary)
    call(ledger, KinesisApi.ListShards, 2)
    ledger.planned(0)
    call(ledger, KinesisApi.ListShards) // a trigger that found nothing new
    call(ledger, KinesisApi.ListShards)
    ledger.planned(1)
    assert(ledger.of(0) == Map(KinesisApi.DescribeStreamSummary -> 1L, KinesisApi.ListShards -> 2L))
    assert(ledger.of(1) == Map(KinesisApi.ListShards -> 2L))
  }

  test("requests after the last planned batch are not reported; a batch not planned here has none") {
    val ledger = new DriverCallLedger
    ledger.planned(3)
    call(ledger, KinesisApi.GetRecords, 5)
    assert(ledger.of(3).isEmpty)
    assert(ledger.of(4).isEmpty)
    assert(ledger.counter.drain() == Map(KinesisApi.GetRecords -> 5L), "still waiting for the next batch")
  }

  test("a batch planned again keeps its counts; later requests go to the next batch") {
    val ledger = new DriverCallLedger
    call(ledger, KinesisApi.ListShards)
    ledger.planned(7)
    call(ledger, KinesisApi.ListShards, 3)
    ledger.planned(7)
    assert(ledger.of(7) == Map(KinesisApi.ListShards -> 1L))
    ledger.planned(8)
    assert(ledger.of(8) == Map(KinesisApi.ListShards -> 3L))
  }

  test("the counts of the last `kept` batches are kept, older ones dropped; 10 by default") {
    for ((ledger, kept) <- Seq(new DriverCallLedger(3) -> 3, new DriverCallLedger -> 10)) {
      (0L to 30L).foreach { id => call(ledger, KinesisApi.ListShards); ledger.planned(id) }
      assert(ledger.of(30) == Map(KinesisApi.ListShards -> 1L))
      assert(ledger.of(30 - kept + 1).nonEmpty)
      assert(ledger.of(30 - kept).isEmpty)
    }
  }
}
