"""Shard discovery with filtered listings (ShardListing): a split and a merge during a query at the defaults.

After its first, full listing the driver asks ListShards only for the shards after the newest it knows
(``ShardFilter`` ``AFTER_SHARD_ID``), when a read shard ended without naming its children, or every 15 s.

Emulator findings (checked with boto3 against kinesis-local 0.6.2 and ministack, 2026-11-27):

* kinesis-local honours ``ShardFilter`` ``AFTER_SHARD_ID`` (only later shard ids, closed ones included), and its
  GetRecords names the children (``ChildShards``) at a closed shard's end; its SubscribeToShard never ends a closed
  shard's subscription, so over fan-out the children and the parent's closing come from a filtered listing only.
* ministack ignores ``ShardFilter`` (it answers with every shard; it honours ``ExclusiveStartShardId``). The driver
  merges such an answer to the same view (ShardListingSuite covers that path with a fake that answers as ministack).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from typing import Any

import pytest
from harness.kinesis import create_stream, list_shards, merge_shards, split_shard
from streaming import BatchCollector, reader, start, stop, wait_batches, wait_for

pytestmark = pytest.mark.emulator


# Over fan-out only: there the filtered listing is the one way kinesis-local reveals a split or merge (polling reads
# ChildShards, and test_source_emulator's split and merge test covers it at the same defaults).
@pytest.mark.parametrize("consumer", ["SubscribeToShard"])
def test_split_and_merge_found_by_filtered_listings_are_read_exactly(
    spark: Any,
    kinesis_local: str,
    kinesis: Any,
    stream_name: str,
    tmp_path: Any,
    counting_proxy: Any,
    put_round: Any,
    consumer: str,
) -> None:
    """Every record once and each key in order across a split and a merge, at the default describeShardInterval;
    the one unfiltered ListShards is the first, and the driver lists no more than its rules allow."""
    create_stream(kinesis, stream_name, 2)
    proxy = counting_proxy(kinesis_local)
    listings = proxy.capture("ListShards")
    options = {"startingPosition": "TRIM_HORIZON", "consumerType": consumer}
    if consumer == "SubscribeToShard":
        options["consumerName"] = "listing-reader"
    collector = BatchCollector()
    began = time.monotonic()
    query = start(reader(spark, proxy.url, stream_name, **options), collector, str(tmp_path / "chk"))
    try:
        put_round(5)
        wait_for(lambda: len(collector.rows()) >= len(put_round.sent), query, what="the first round")
        shards = sorted(s["ShardId"] for s in list_shards(kinesis, stream_name))
        children = split_shard(kinesis, stream_name, shards[0])
        put_round(5)
        wait_for(lambda: len(collector.rows()) >= len(put_round.sent), query, what="the second round")
        merged = merge_shards(kinesis, stream_name, children[1], shards[1])
        put_round(5)
        wait_for(lambda: len(collector.rows()) >= len(put_round.sent), query, what="every row")
        wait_batches(query, 1)
    finally:
        stop(query)
    elapsed = time.monotonic() - began
    rows = collector.rows()
    assert Counter(r.data for r in rows) == Counter(put_round.sent)
    assert {merged, *children} <= {r.shard_id for r in rows}
    by_key: dict[str, list[int]] = defaultdict(list)
    for batch in sorted(collector.batches):
        for row in collector.batches[batch]:
            by_key[row.partition_key].append(int(row.data.split("-")[-1]))
    assert all(counters == sorted(counters) for counters in by_key.values()), by_key
    assert listings, "the driver listed no shards through the proxy"
    assert "ShardFilter" not in listings[0]
    later = [body.get("ShardFilter") for body in listings[1:]]
    assert all(f is not None and f["Type"] == "AFTER_SHARD_ID" for f in later), later
    # One every 15 s while nothing happens, plus one for each of the two reshards whose parents ended unannounced
    # (fan-out on kinesis-local) and one for where the windows fall. Before: up to one a second.
    assert len(later) <= elapsed / 15 + 2 + 1, (len(later), elapsed)
    print(f"{consumer}: {len(listings)} ListShards in {elapsed:.0f} s; filters {later}")
