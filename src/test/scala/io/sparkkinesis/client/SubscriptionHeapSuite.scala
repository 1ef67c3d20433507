package io.sparkkinesis.client

import org.scalatest.funsuite.AnyFunSuite

class SubscriptionHeapSuite extends AnyFunSuite {

  test("the SDK's event-stream decoder starts small and grows to the largest event, within the estimate") {
    // HeapPerSubscription and docs/guide/fan-out.md's sizing advice rest on this: since SDK 2.57 the decoder
    // (software.amazon.awssdk.eventstream) starts each subscription with a 2 KiB buffer, grows it to the largest
    // event received and keeps it while the subscription lives. An SDK upgrade that changes the start fails here.
    val field =
      classOf[software.amazon.awssdk.eventstream.MessageDecoder].getDeclaredField("INITIAL_BUFFER_SIZE")
    field.setAccessible(true)
    assert(field.getInt(null) == (2 << 10))
    assert(SdkSubscriptionClient.HeapPerSubscription >= (2L << 20))
  }

  test("no warning while the subscriptions' buffers fit in half the heap; then one naming the figures") {
    val heap = 1L << 30 // 1 GiB: 128 subscriptions of 4 MiB are half of it
    assert(SdkSubscriptionClient.heapWarning(1, heap).isEmpty)
    assert(SdkSubscriptionClient.heapWarning(128, heap).isEmpty)
    val warning = SdkSubscriptionClient.heapWarning(129, heap).get
    assert(warning.contains("129 enhanced fan-out subscriptions"))
    assert(warning.contains("516 MiB"))
    assert(warning.contains("1024 MiB heap"))
    assert(warning.contains("spark.executor.memory"))
    assert(SdkSubscriptionClient.heapWarning(1024, 8L << 30).isEmpty)
    assert(SdkSubscriptionClient.heapWarning(1025, 4L << 30).nonEmpty)
  }
}
