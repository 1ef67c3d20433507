"""A seeded random walk over the things that happen to a production query (modelled on Spark's
Kafka source stress suite): records put, the query stopped and restarted from its checkpoint,
shards split and merged, interleaved at random. After every "check" step and at the end, the
output (a foreachBatch sink keyed by batch id, so replays overwrite) must equal exactly the
records put: nothing lost, nothing twice.

The run uses kinesis-local, which keeps closed parent shards readable after a reshard, as Kinesis
does. The walk is the same every run (a fixed seed); ``STRESS_SEED=random`` draws a new one, and
``STRESS_SEED=<seed printed in a failure> pytest tests/test_stress.py`` replays one.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from typing import Any

import pytest
from harness.kinesis import create_stream, merge_shards, open_shards, put_plain, split_shard
from streaming import BatchCollector, reader, start, stop, wait_for, walk_seed

pytestmark = pytest.mark.emulator

STEPS = int(os.environ.get("STRESS_STEPS", "30"))
MAX_OPEN_SHARDS = 5
# The walk runs once per consumer type. With enhanced fan-out the consumer is kept between the walk's
# restarts (as a production query restarted by its operator would keep it) and removed at the end.
CONSUMERS = [
    {"consumerType": "GetRecords"},
    {"consumerType": "SubscribeToShard", "consumerName": "stress-walk", "consumerDeregisterOnStop": "false"},
]


class Walk:
    def __init__(
        self, spark: Any, endpoint: str, client: Any, stream: str, checkpoint: str, options: dict[str, str], seed: int
    ):
        self.spark, self.endpoint, self.client, self.stream = spark, endpoint, client, stream
        self.checkpoint, self.options, self.seed = checkpoint, options, seed
        self.rng = random.Random(seed)
        self.collector = BatchCollector()
        self.query: Any = None
        self.put: list[str] = []
        self.log: list[str] = []

    def fail(self, message: str) -> None:
        raise AssertionError(f"[STRESS_SEED={self.seed}] {message}\nsteps: {'; '.join(self.log)}")

    def add(self) -> None:
        count = self.rng.randint(1, 60)
        records = [f"s{len(self.put) + i:05d}" for i in range(count)]
        put_plain(self.client, self.stream, records)
        self.put.extend(records)
        self.log.append(f"add {count}")

    def start(self) -> None:
        if self.query is None:
            # Each start draws how many shards a task reads (one per task, or grouped): restarts regroup.
            per_task = self.rng.choice(["1", "2", "3"])
            df = reader(self.spark, self.endpoint, self.stream, **self.options, shardsPerTask=per_task)
            self.query = start(df, self.collector, self.checkpoint)
            self.log.append(f"start shardsPerTask={per_task}")

    def stop(self) -> None:
        if self.query is not None:
            stop(self.query)
            self.query = None
            self.log.append("stop")

    def split(self) -> None:
        shards = open_shards(self.client, self.stream)
        if len(shards) >= MAX_OPEN_SHARDS:
            return
        shard = self.rng.choice(shards)["ShardId"]
        split_shard(self.client, self.stream, shard)
        self.log.append(f"split {shard}")

    def merge(self) -> None:
        shards = sorted(open_shards(self.client, self.stream), key=lambda s: int(s["HashKeyRange"]["StartingHashKey"]))
        if len(shards) < 2:
            return
        i = self.rng.randrange(len(shards) - 1)
        merge_shards(self.client, self.stream, shards[i]["ShardId"], shards[i + 1]["ShardId"])
        self.log.append(f"merge {shards[i]['ShardId']}+{shards[i + 1]['ShardId']}")

    def check(self) -> None:
        self.start()
        expected = Counter(self.put)
        try:
            wait_for(lambda: len(self.collector.rows()) >= len(self.put), self.query, what="all records")
        except AssertionError as error:
            self.fail(f"{error}; have {len(self.collector.rows())} of {len(self.put)}")
        got = Counter(self.collector.data())
        if got != expected:
            missing = sorted((expected - got).elements())[:5]
            extra = sorted((got - expected).elements())[:5]
            self.fail(f"output differs from the records put: missing {missing}, repeated/unknown {extra}")
        self.log.append(f"check {len(self.put)}")

    def run(self, steps: int) -> None:
        """At least ``steps`` steps that changed something (a stop of a stopped query is no step), and at
        least one of each kind: the walk goes on past ``steps`` until every kind has happened."""
        actions = {"add": self.add, "stop": self.stop, "start": self.start, "split": self.split, "merge": self.merge}
        actions["check"] = self.check
        weights = [6, 2, 2, 1, 1, 2]
        self.start()
        try:
            for _ in range(steps * 5):
                done = {entry.split()[0] for entry in self.log}
                if len(self.log) > steps and done >= set(actions):
                    break
                self.rng.choices(list(actions.values()), weights)[0]()
            else:
                self.fail(f"the walk did not reach {steps} steps of every kind in {steps * 5} draws")
            self.check()
        finally:
            self.stop()


@pytest.mark.parametrize("consumer", CONSUMERS, ids=lambda c: c["consumerType"])
def test_random_walk_of_puts_restarts_and_reshards(
    spark, kinesis_local, kinesis_client_factory, stream_name, stream_cleanup, tmp_path, consumer
):
    seed = walk_seed()
    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=2))
    options = {"startingPosition": "TRIM_HORIZON", "maxFetchRecordsPerShard": "40", **consumer}
    walk = Walk(spark, kinesis_local, client, stream_name, str(tmp_path / "chk"), options, seed)
    walk.run(STEPS)
    kinds = Counter(entry.split()[0] for entry in walk.log)
    assert len(walk.log) > STEPS and set(kinds) == {"add", "stop", "start", "split", "merge", "check"}, kinds
    print(f"STRESS_SEED={seed}: {len(walk.log)} steps, {dict(kinds)}")
