"""Every option key of the awslabs connector (spark-sql-kinesis-connector, ``KinesisOptions``) is
accepted by ours, checked by the jar's own parsing (``spark-kinesis check-options``, no AWS call).

The keys are the awslabs ``KinesisOptions`` constants: 37 ``kinesis.*`` keys the reader takes
(including five ``kinesis.internal.*`` tuning keys of its own queue-based reader) and 8
``kinesis.sink.*`` keys of its writer (``kinesis.sink.proxy*`` since its 1.4.0). Each is tried alone
on top of a minimal valid read or write, with a value an awslabs job would use (keys the awslabs
connector only takes together, such as a session name and its role, are given together), and then
all at once, as a whole job. The ``internal.*`` keys have no effect here: they are accepted with a
warning that says what this connector does instead, which check-options reports too.
"""

from __future__ import annotations

from typing import Any

import pytest
from spark_kinesis.cli import run_tool
from spark_kinesis.option_table import bundled_option_table

REGION = "us-east-1"
READ = {"kinesis.streamName": "orders", "kinesis.region": REGION, "kinesis.endpointUrl": "http://localhost:4567"}
WRITE = {**READ, "kinesis.endpointUrl": "https://localhost:4567"}
ROLE = "arn:aws:iam::123456789012:role/reader"

# key -> (value, other keys an awslabs job sets with it)
AWSLABS_READ: dict[str, tuple[str, dict[str, str]]] = {
    "kinesis.region": (REGION, {}),
    "kinesis.endpointUrl": ("https://kinesis.us-east-1.amazonaws.com", {}),
    "kinesis.streamName": ("orders", {}),
    "kinesis.consumerType": ("GetRecords", {}),
    "kinesis.consumerName": ("app", {"kinesis.consumerType": "SubscribeToShard"}),
    "kinesis.failOnDataLoss": ("true", {}),
    "kinesis.maxFetchRecordsPerShard": ("100000", {}),
    "kinesis.maxFetchTimePerShardSec": ("10", {}),
    "kinesis.startingPosition": ("TRIM_HORIZON", {}),
    "kinesis.describeShardInterval": ("1s", {}),
    "kinesis.minBatchesToRetain": ("100", {}),
    "kinesis.checkNewRecordThreads": ("8", {}),
    "kinesis.metadataCommitterType": ("HDFS", {}),
    "kinesis.metadataPath": ("/tmp/kinesis-metadata", {}),
    "kinesis.metadataNumRetries": ("5", {}),
    "kinesis.metadataRetryIntervalsMs": ("1000", {}),
    "kinesis.metadataMaxRetryIntervalMs": ("10000", {}),
    "kinesis.clientNumRetries": ("5", {}),
    "kinesis.clientRetryIntervalsMs": ("1000", {}),
    "kinesis.clientMaxRetryIntervalMs": ("10000", {}),
    "kinesis.internal.dataQueueCapacity": ("1000", {}),
    "kinesis.internal.maxDataQueueEmptyCount": ("2", {}),
    "kinesis.internal.dataQueueWaitTimeoutSec": ("5", {}),
    "kinesis.stsRoleArn": (ROLE, {"kinesis.stsSessionName": "app"}),
    "kinesis.stsSessionName": ("app", {"kinesis.stsRoleArn": ROLE}),
    "kinesis.stsEndpointUrl": ("https://sts.us-east-1.amazonaws.com", {"kinesis.stsRoleArn": ROLE}),
    "kinesis.awsAccessKeyId": ("AKIDEXAMPLE", {"kinesis.awsSecretKey": "secret"}),
    "kinesis.awsSecretKey": ("secret", {"kinesis.awsAccessKeyId": "AKIDEXAMPLE"}),
    "kinesis.sessionToken": ("token", {"kinesis.awsAccessKeyId": "AKIDEXAMPLE", "kinesis.awsSecretKey": "secret"}),
    "kinesis.kinesisRegion": (REGION, {}),
    "kinesis.dynamodb.tableName": ("kinesis-metadata", {"kinesis.metadataCommitterType": "DYNAMODB"}),
    "kinesis.subscribeToShard.timeoutSec": ("60", {}),
    "kinesis.subscribeToShard.maxRetries": ("10", {}),
    "kinesis.getRecords.numberOfRecordsPerFetch": ("10000", {}),
    "kinesis.getRecords.fetchIntervalMs": ("200", {}),
    "kinesis.internal.maintenanceTaskIntervalSec": ("100", {}),
    "kinesis.internal.avoidEmptyBatches": ("true", {}),
}

AWSLABS_WRITE: dict[str, tuple[str, dict[str, str]]] = {
    "kinesis.sink.flushWaitTimeMs": ("100", {}),
    "kinesis.sink.recordMaxBufferedTimeMs": ("1000", {}),
    "kinesis.sink.maxConnections": ("1", {}),
    "kinesis.sink.aggregationEnabled": ("true", {}),
    "kinesis.sink.proxyAddress": ("proxy.corp", {}),
    "kinesis.sink.proxyPort": ("3128", {"kinesis.sink.proxyAddress": "proxy.corp"}),
    "kinesis.sink.proxyUsername": ("svc", {"kinesis.sink.proxyAddress": "proxy.corp"}),
    "kinesis.sink.proxyPassword": (
        "pw",
        {"kinesis.sink.proxyAddress": "proxy.corp", "kinesis.sink.proxyUsername": "svc"},
    ),
}

# kinesis.internal.avoidEmptyBatches is the awslabs name of kinesis.avoidEmptyBatches: it has an effect.
INTERNAL = sorted(k for k in AWSLABS_READ if k.startswith("kinesis.internal.") and not k.endswith("avoidEmptyBatches"))


def _whole_job() -> tuple[dict[str, str], dict[str, str]]:
    """Every awslabs key at once, as one job would set them: a read and a write."""
    read: dict[str, str] = dict(READ)
    for key, (value, extra) in AWSLABS_READ.items():
        if key in ("kinesis.consumerName", "kinesis.dynamodb.tableName"):
            continue  # a job reads with one consumer type and one metadata store: checked alone
        read.update(extra)
        read[key] = value
    write: dict[str, str] = dict(WRITE)
    for key, (value, extra) in AWSLABS_WRITE.items():
        write.update(extra)
        write[key] = value
    return read, write


# Cases beyond the per-key ones, checked in the same JVM run.
WHOLE_READ, WHOLE_WRITE, BAD_TYPE = "<whole read>", "<whole write>", "<bad internal value>"


def _cases() -> list[tuple[str, str, dict[str, str]]]:
    cases = [("source", key, {**READ, **extra, key: value}) for key, (value, extra) in AWSLABS_READ.items()]
    cases += [("sink", key, {**WRITE, **extra, key: value}) for key, (value, extra) in AWSLABS_WRITE.items()]
    read, write = _whole_job()
    cases += [("source", WHOLE_READ, read), ("sink", WHOLE_WRITE, write)]
    cases += [("source", BAD_TYPE, {**READ, "kinesis.internal.avoidEmptyBatches": "sometimes"})]
    return cases


@pytest.fixture(scope="module")
def results() -> dict[str, dict[str, Any]]:
    """check-options on every case, one JVM per side (the jar's own parsing, no AWS call)."""
    found: dict[str, dict[str, Any]] = {}
    for side in ("source", "sink"):
        cases = [c for c in _cases() if c[0] == side]
        request = {"region": REGION, "cases": [{"side": side, "options": opts} for _, _, opts in cases]}
        reply = run_tool("io.sparkkinesis.tools.CheckOptionsTool", request, "check-options", [])
        for (_, key, _), result in zip(cases, reply["results"], strict=True):
            found[key] = result
    return found


@pytest.fixture(scope="module")
def per_key(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {key: r for key, r in results.items() if key.startswith("kinesis.")}


def test_the_key_list_is_the_awslabs_one():
    assert len(AWSLABS_READ) == 37 and len(AWSLABS_WRITE) == 8
    assert len(INTERNAL) == 4


def test_every_awslabs_key_is_accepted_on_its_own(per_key):
    refused = {key: r["message"] for key, r in per_key.items() if not r["accepted"]}
    assert refused == {}, refused
    accepted = sum(1 for r in per_key.values() if r["accepted"])
    print(f"\nawslabs keys accepted by check-options: {accepted} of {len(per_key)}")


def test_internal_keys_warn_with_what_the_connector_does_instead(per_key):
    for key in INTERNAL:
        warnings = per_key[key].get("warnings", [])
        assert len(warnings) == 1, (key, warnings)
        assert warnings[0].startswith(
            f"Option {key} is accepted for compatibility with the awslabs connector and ignored: "
        )
    # Each says what is done instead, in its own terms.
    said = {key: per_key[key]["warnings"][0] for key in INTERNAL}
    assert "kinesis.maxBytesPerTrigger" in said["kinesis.internal.dataQueueCapacity"]
    assert "tip" in said["kinesis.internal.maxDataQueueEmptyCount"]
    assert "kinesis.subscribeToShard.timeoutSec" in said["kinesis.internal.dataQueueWaitTimeoutSec"]
    assert "kinesis.minBatchesToRetain" in said["kinesis.internal.maintenanceTaskIntervalSec"]
    # Keys with an effect warn about nothing.
    assert all("warnings" not in r for key, r in per_key.items() if key not in INTERNAL)


def test_a_whole_awslabs_job_is_accepted_read_and_write(results):
    read = results[WHOLE_READ]
    assert read["accepted"], read
    assert sorted(w.split(" ")[1] for w in read["warnings"]) == INTERNAL
    write = results[WHOLE_WRITE]
    assert write["accepted"] and "warnings" not in write, write


def test_the_option_table_marks_the_ignored_keys_and_keeps_the_proxy_password_secret():
    table = bundled_option_table()
    ignored = sorted("kinesis." + key for key, info in table.items() if info.compatibility)
    assert ignored == INTERNAL
    assert table["sink.proxyPassword"].secret and table["proxyPassword"].secret
    assert not table["sink.proxyAddress"].compatibility


def test_an_internal_key_keeps_its_type_check(results):
    result = results[BAD_TYPE]
    assert not result["accepted"]
    assert "kinesis.internal.avoidEmptyBatches" in result["message"] and "true or false" in result["message"]
