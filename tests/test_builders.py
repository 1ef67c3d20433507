"""Unit tests of the typed option builders. No JVM is started."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from spark_kinesis import (
    ConsumerType,
    EndingPosition,
    HttpProtocol,
    KinesisSink,
    KinesisSource,
    MetadataCommitterType,
    MetricsLevel,
    ShardPositions,
    SinkProducer,
    StartingPosition,
    ThreadingModel,
)
from spark_kinesis._fields import option_fields
from spark_kinesis.option_table import OptionRuleError, bundled_option_table


def _spec(builder, name):
    return next(spec for spec in option_fields(builder) if spec.name == name)


_CONSUMER_ARN = "arn:aws:kinesis:us-east-1:123456789012:stream/s/consumer/c:1700000000"

# One valid value per argument and the option string it must become. Every argument of both
# builders must be listed (test_every_argument_has_an_example), so a new option needs a test here.
SOURCE_EXAMPLES: dict[str, tuple[object, str]] = {
    "stream_name": ("clicks", "clicks"),
    "stream_arn": (
        "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks",
        "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks",
    ),
    "region": ("eu-west-1", "eu-west-1"),
    "endpoint_url": ("http://127.0.0.1:4567", "http://127.0.0.1:4567"),
    "client_num_retries": (3, "3"),
    "client_retry_intervals_ms": (timedelta(seconds=2), "2000"),
    "client_max_retry_interval_ms": (5000, "5000"),
    "client_connect_timeout_ms": (timedelta(seconds=3), "3000"),
    "client_socket_timeout_ms": (60_000, "60000"),
    "client_api_call_attempt_timeout_ms": (20_000, "20000"),
    "client_max_connections": (16, "16"),
    "proxy_address": ("proxy.corp", "proxy.corp"),
    "proxy_port": (3128, "3128"),
    "proxy_username": ("svc", "svc"),
    "proxy_password": ("proxy-secret", "proxy-secret"),
    "aws_access_key_id": ("AKIDEXAMPLE", "AKIDEXAMPLE"),
    "aws_secret_key": ("s3cr3t", "s3cr3t"),
    "session_token": ("tok", "tok"),
    "sts_role_arn": ("arn:aws:iam::123456789012:role/reader", "arn:aws:iam::123456789012:role/reader"),
    "sts_session_name": ("spark", "spark"),
    "sts_endpoint_url": ("https://sts.eu-west-1.amazonaws.com", "https://sts.eu-west-1.amazonaws.com"),
    "sts_external_id": ("ext-1", "ext-1"),
    "credential_provider_class": ("com.example.Creds", "com.example.Creds"),
    "credential_provider_param": ("p", "p"),
    "kinesis_region": ("us-west-2", "us-west-2"),
    "consumer_type": (ConsumerType.SUBSCRIBE_TO_SHARD, "SubscribeToShard"),
    "consumer_name": ("fraud-detector", "fraud-detector"),
    "starting_position": (StartingPosition.trim_horizon(), "TRIM_HORIZON"),
    "ending_position": (EndingPosition.at_timestamp("2026-11-01T01:00:00+01:00"), "AT_TIMESTAMP 2026-11-01T00:00:00Z"),
    "fail_on_data_loss": (True, "true"),
    "include_sub_sequence_number": (True, "true"),
    "max_fetch_records_per_shard": (50_000, "50000"),
    "max_fetch_time_per_shard_sec": (timedelta(minutes=1), "60"),
    "max_records_per_trigger": (1_000, "1000"),
    "max_bytes_per_trigger": (5_000_000, "5000000"),
    "max_fetch_rate": (0.5, "0.5"),
    "describe_shard_interval": (timedelta(seconds=5), "5000"),
    "min_batches_to_retain": (10, "10"),
    "check_new_record_threads": (4, "4"),
    "metadata_committer_type": ("dynamodb", "DYNAMODB"),
    "metadata_path": ("s3a://bucket/meta", "s3a://bucket/meta"),
    "dynamodb_table_name": ("kinesisMeta", "kinesisMeta"),
    "dynamodb_region": ("eu-west-1", "eu-west-1"),
    "dynamodb_endpoint_url": ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    "metadata_num_retries": (0, "0"),
    "metadata_retry_intervals_ms": (250, "250"),
    "metadata_max_retry_interval_ms": (timedelta(seconds=30), "30000"),
    "records_per_fetch": (10_000, "10000"),
    "fetch_interval_ms": (timedelta(milliseconds=250), "250"),
    "idle_probe_interval_ms": (0, "0"),
    "avoid_empty_batches": (True, "true"),
    "internal_avoid_empty_batches": (True, "true"),
    "subscribe_timeout_sec": (30, "30"),
    "subscribe_max_retries": (2, "2"),
    "subscribe_http_protocol": (HttpProtocol.HTTP1_1, "HTTP1_1"),
    "consumer_deregister_on_stop": (False, "false"),
    "consumer_arn": (" " + _CONSUMER_ARN, _CONSUMER_ARN),
    "consumer_tags": ("team=risk, env=prod", "team=risk, env=prod"),
    "executor_affinity": (False, "false"),
    "shards_per_task": (8, "8"),
}
SINK_EXAMPLES: dict[str, tuple[object, str]] = {
    **{k: v for k, v in SOURCE_EXAMPLES.items() if k in {f.name for f in option_fields(KinesisSink)}},
    # The sink's producer speaks only HTTPS (rule sink-endpoint-https).
    "endpoint_url": ("https://127.0.0.1:4567", "https://127.0.0.1:4567"),
    "producer": (SinkProducer.JAVA, "JAVA"),
    "flush_wait_time_ms": (50, "50"),
    "record_max_buffered_time_ms": (timedelta(milliseconds=500), "500"),
    "max_connections": (24, "24"),
    "aggregation_enabled": (False, "false"),
    "record_ttl": (timedelta(minutes=1), "60000"),
    "verify_certificate": (False, "false"),
    "producer_sts_endpoint_url": ("https://127.0.0.1:4566", "https://127.0.0.1:4566"),
    "rate_limit": (100, "100"),
    "request_timeout_ms": (timedelta(seconds=10), "10000"),
    "metrics_level": (MetricsLevel.SUMMARY, "summary"),
    "aggregation_max_count": (1000, "1000"),
    "aggregation_max_size": (65536, "65536"),
    "threading_model": (ThreadingModel.POOLED, "POOLED"),
    "max_outstanding_records": (5000, "5000"),
    "sink_proxy_address": ("proxy.corp", "proxy.corp"),
    "sink_proxy_port": (3128, "3128"),
    "sink_proxy_username": ("svc", "svc"),
    "sink_proxy_password": ("proxy-secret", "proxy-secret"),
}

# Arguments that need a companion to be valid on their own.
_COMPANIONS: dict[str, dict[str, object]] = {
    "aws_access_key_id": {"aws_secret_key": "x"},
    "aws_secret_key": {"aws_access_key_id": "x"},
    "session_token": {"aws_access_key_id": "x", "aws_secret_key": "y"},
    "sts_session_name": {"sts_role_arn": "arn:aws:iam::1:role/r"},
    "sts_endpoint_url": {"sts_role_arn": "arn:aws:iam::1:role/r"},
    "sts_external_id": {"sts_role_arn": "arn:aws:iam::1:role/r"},
    "credential_provider_param": {"credential_provider_class": "com.example.C"},
    "consumer_type": {"consumer_name": "c"},
    "consumer_arn": {"consumer_type": "SubscribeToShard"},
    "consumer_tags": {"consumer_type": "SubscribeToShard", "consumer_name": "c"},
    "metadata_committer_type": {"dynamodb_table_name": "t"},
    "stream_arn": {"stream_name": None},
    "dynamodb_region": {"metadata_committer_type": "DYNAMODB", "dynamodb_table_name": "t"},
    "dynamodb_endpoint_url": {"metadata_committer_type": "DYNAMODB", "dynamodb_table_name": "t"},
    "dynamodb_table_name": {"metadata_committer_type": "DYNAMODB"},
    "proxy_port": {"proxy_address": "p"},
    "proxy_username": {"proxy_address": "p"},
    "proxy_password": {"proxy_address": "p", "proxy_username": "u"},
    "sink_proxy_port": {"sink_proxy_address": "p"},
    "sink_proxy_username": {"sink_proxy_address": "p"},
    "sink_proxy_password": {"sink_proxy_address": "p", "sink_proxy_username": "u"},
}


def _build(builder, **kwargs):
    kwargs.setdefault("stream_name", "s")
    return builder(**kwargs)


@pytest.mark.parametrize(("builder", "examples"), [(KinesisSource, SOURCE_EXAMPLES), (KinesisSink, SINK_EXAMPLES)])
def test_every_argument_has_an_example(builder, examples):
    assert {spec.name for spec in option_fields(builder)} == set(examples)


@pytest.mark.parametrize(
    ("builder", "name"),
    [(KinesisSource, n) for n in SOURCE_EXAMPLES] + [(KinesisSink, n) for n in SINK_EXAMPLES],
)
def test_each_argument_emits_its_option(builder, name):
    examples = SOURCE_EXAMPLES if builder is KinesisSource else SINK_EXAMPLES
    value, expected = examples[name]
    spec = _spec(builder, name)
    built = _build(builder, **{**_COMPANIONS.get(name, {}), name: value})
    assert built.options()[spec.info.full_key] == expected


def test_unset_arguments_emit_nothing():
    assert KinesisSource(stream_name="s").options() == {"kinesis.streamName": "s"}
    assert KinesisSink(stream_name="s").options() == {"kinesis.streamName": "s"}


def test_stream_name_is_required():
    with pytest.raises(
        OptionRuleError, match=r"KinesisSource\(stream_name=None, stream_arn=None\): Option kinesis.streamName is"
    ):
        KinesisSource()
    arn = "arn:aws:kinesis:eu-west-1:123456789012:stream/clicks"
    assert KinesisSource(stream_arn=arn).options() == {"kinesis.streamArn": arn}
    with pytest.raises(ValueError, match=r"kinesis.streamName and kinesis.streamArn are both set; set one of them"):
        KinesisSource(stream_name="clicks", stream_arn=arn)
    with pytest.raises(ValueError, match=r"KinesisSink\(stream_name=None, stream_arn=None\)"):
        KinesisSink(region="us-east-1")
    assert KinesisSink(stream_arn=arn).options() == {"kinesis.streamArn": arn}


# --- each kind of validation error -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"max_fetch_records_per_shard": 0}, ValueError, r"max_fetch_records_per_shard=0\).*at least 1"),
        ({"records_per_fetch": 10_001}, ValueError, r"getRecords.numberOfRecordsPerFetch must be from 1 to 10000"),
        ({"check_new_record_threads": 257}, ValueError, r"from 1 to 256"),
        ({"client_num_retries": -1}, ValueError, r"kinesis.clientNumRetries must be from 0 to 100"),
        ({"max_fetch_records_per_shard": "100"}, TypeError, r"must be an int, got a value of type str"),
        ({"max_fetch_records_per_shard": True}, TypeError, r"must be an int"),
        ({"fail_on_data_loss": "true"}, TypeError, r"kinesis.failOnDataLoss must be a bool"),
        ({"fetch_interval_ms": 1.5}, TypeError, r"a timedelta, an int \(in ms\) or a str such as 30s"),
        ({"fetch_interval_ms": timedelta(microseconds=1500)}, ValueError, r"whole number of milliseconds"),
        ({"max_fetch_time_per_shard_sec": timedelta(milliseconds=999)}, ValueError, r"must be at least 1s"),
        ({"max_fetch_time_per_shard_sec": 0}, ValueError, r"maxFetchTimePerShardSec must be at least 1s"),
        ({"describe_shard_interval": -5}, ValueError, r"describe_shard_interval=-5\).*must be at least 0ms"),
        ({"max_fetch_time_per_shard_sec": 2**63 // 1000 + 1}, ValueError, r"below 2\^63 ms"),
        ({"describe_shard_interval": "1x"}, ValueError, r"a duration such as 500ms, 30s, 2m.*milliseconds"),
        ({"subscribe_timeout_sec": "-1s"}, ValueError, r"a duration such as 500ms, 30s, 2m.*of seconds"),
        ({"consumer_type": "EFO"}, ValueError, r"consumerType must be one of GetRecords, SubscribeToShard"),
        ({"consumer_type": 3}, TypeError, r"one of GetRecords, SubscribeToShard"),
        ({"metadata_committer_type": "S3"}, ValueError, r"one of HDFS, DYNAMODB"),
        ({"subscribe_timeout_sec": 3601}, ValueError, r"timeoutSec must be from 1s to 1h"),
        ({"subscribe_http_protocol": "HTTP3"}, ValueError, r"one of HTTP2, HTTP2_ALPN, HTTP1_1"),
        ({"endpoint_url": "localhost:4567"}, ValueError, r"endpointUrl must be an http:// or https:// URL"),
        ({"region": "  "}, ValueError, r"region must be a non-empty string"),
        ({"region": 1}, TypeError, r"kinesis.region must be a str"),
        ({"consumer_name": "has space", "consumer_type": "SubscribeToShard"}, ValueError, r"1 to 128 characters"),
        ({"consumer_name": "x" * 129}, ValueError, r"1 to 128 characters"),
        ({"starting_position": "NOW"}, ValueError, r"starting_position='NOW'.*LATEST, TRIM_HORIZON"),
        ({"starting_position": "AT_TIMESTAMP yesterday"}, ValueError, r"not an ISO-8601 instant"),
        ({"starting_position": "AT_TIMESTAMP 2026-11-01T00:00:00"}, ValueError, r"no time zone offset"),
        ({"starting_position": 5}, TypeError, r"a StartingPosition, a ShardPositions or their string form"),
    ],
)
def test_validation_errors_name_argument_option_and_allowed(kwargs, error, pattern):
    with pytest.raises(error, match=pattern) as caught:
        _build(KinesisSource, **kwargs)
    name = next(iter(kwargs))
    assert name in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "rule", "pattern"),
    [
        (
            {"consumer_type": "SubscribeToShard"},
            "fan-out-needs-consumer-name",
            r"\(consumer_type='SubscribeToShard', consumer_name=None, consumer_arn=None\): "
            r"Option kinesis.consumerName is required",
        ),
        (
            {"consumer_type": "SubscribeToShard", "consumer_name": "c", "max_fetch_rate": 0.5},
            "fan-out-not-paced",
            r"kinesis.maxFetchRate = 0.5 applies to kinesis.consumerType = GetRecords only",
        ),
        (
            {"consumer_type": "SubscribeToShard", "consumer_name": "c", "consumer_arn": _CONSUMER_ARN},
            "consumer-name-or-arn",
            r"kinesis.consumerName and kinesis.consumerArn are both set",
        ),
        (
            {"consumer_type": "SubscribeToShard", "consumer_arn": _CONSUMER_ARN, "consumer_tags": "a=b"},
            "consumer-tags-need-name",
            r"kinesis.consumerTags tags the consumers the query registers",
        ),
        (
            {"consumer_arn": _CONSUMER_ARN},
            "consumer-options-need-fan-out",
            r"apply only when kinesis.consumerType is SubscribeToShard",
        ),
        (
            {"metadata_committer_type": MetadataCommitterType.DYNAMODB},
            "dynamodb-needs-table",
            r"dynamodb_table_name=None\): Option kinesis.dynamodb.tableName is required",
        ),
        (
            {"metadata_committer_type": "DYNAMODB", "dynamodb_table_name": "t", "metadata_path": "/m"},
            "metadata-path-needs-hdfs",
            r"kinesis.metadataPath applies only when kinesis.metadataCommitterType is HDFS",
        ),
        (
            {"dynamodb_region": "eu-west-1"},
            "dynamodb-region-needs-dynamodb",
            r"dynamodb_region='eu-west-1', metadata_committer_type=None\).*applies only when",
        ),
        ({"dynamodb_table_name": "t"}, "dynamodb-table-needs-dynamodb", r"applies only when"),
        (
            {"aws_access_key_id": "AKID"},
            "static-keys-together",
            r"\(aws_access_key_id=<secret>, aws_secret_key=None\): .*go together",
        ),
        ({"aws_secret_key": "s"}, "static-keys-together", r"set both or neither"),
        ({"session_token": "t"}, "session-token-needs-keys", r"needs kinesis.awsAccessKeyId and kinesis.awsSecretKey"),
        ({"sts_external_id": "e"}, "sts-external-id-needs-role", r"sts_role_arn=None\).*needs kinesis.stsRoleArn"),
        (
            {"credential_provider_param": "p"},
            "provider-param-needs-class",
            r"credential_provider_class=None\).*needs kinesis.credentialProviderClass",
        ),
    ],
)
def test_conflicting_or_incomplete_combinations(kwargs, rule, pattern):
    with pytest.raises(OptionRuleError, match=pattern) as caught:
        _build(KinesisSource, **kwargs)
    assert caught.value.rule_id == rule
    assert str(caught.value).endswith(caught.value.rule_message)
    for name, value in kwargs.items():
        if _spec(KinesisSource, name).info.secret:
            assert repr(value) not in str(caught.value)


def test_sink_validates_its_own_arguments():
    with pytest.raises(ValueError, match=r"KinesisSink\(max_connections=0\).*sink.maxConnections"):
        KinesisSink(stream_name="s", max_connections=0)
    with pytest.raises(ValueError, match=r"sink.aggregationMaxSize must be from 64 to 1048576"):
        KinesisSink(stream_name="s", aggregation_max_size=2_000_000)
    with pytest.raises(ValueError, match=r"sink.metricsLevel must be one of none, summary, detailed"):
        KinesisSink(stream_name="s", metrics_level="all")
    with pytest.raises(TypeError, match=r"sink.aggregationEnabled must be a bool"):
        KinesisSink(stream_name="s", aggregation_enabled=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'consumer_type'"):
        KinesisSink(stream_name="s", consumer_type="GetRecords")  # type: ignore[call-arg]


# --- starting positions ----------------------------------------------------------------------------


def test_starting_positions_render_like_the_connector_parses_them():
    moment = datetime(2026, 11, 1, 1, 0, tzinfo=timezone(timedelta(hours=1)))
    assert StartingPosition.at_timestamp(moment).option_value() == "AT_TIMESTAMP 2026-11-01T00:00:00Z"
    assert StartingPosition.parse("at_timestamp 2026-11-01T00:00:00.250Z").option_value() == (
        "AT_TIMESTAMP 2026-11-01T00:00:00.250000Z"
    )
    assert StartingPosition.parse(" latest ") == StartingPosition.latest()
    assert StartingPosition.earliest() == StartingPosition.trim_horizon()
    built = KinesisSource(stream_name="s", starting_position="earliest")
    assert built.options()["kinesis.startingPosition"] == "TRIM_HORIZON"


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError, match="no time zone"):
        StartingPosition.at_timestamp(datetime(2026, 11, 1))
    with pytest.raises(TypeError, match="datetime or an ISO-8601 string"):
        StartingPosition.at_timestamp(12345)  # type: ignore[arg-type]


# --- escape hatch, secrets, immutability -----------------------------------------------------------


def test_extra_options_pass_through_unknown_keys():
    built = KinesisSource(stream_name="s", extra_options={"kinesis.futureOption": "on"})
    assert built.options()["kinesis.futureOption"] == "on"


def test_extra_options_refuse_keys_that_have_an_argument():
    with pytest.raises(ValueError, match=r"typed argument max_fetch_records_per_shard"):
        KinesisSource(stream_name="s", extra_options={"kinesis.MAXFETCHRECORDSPERSHARD": "5"})
    with pytest.raises(ValueError, match=r"typed argument region"):
        KinesisSink(stream_name="s", extra_options={"region": "x"})
    with pytest.raises(TypeError, match="must be str"):
        KinesisSource(stream_name="s", extra_options={"kinesis.x": 5})  # type: ignore[dict-item]


def test_secrets_never_appear_in_repr_or_errors():
    built = KinesisSource(
        stream_name="s",
        aws_access_key_id="AKIDSECRET",
        aws_secret_key="VERYSECRET",
        session_token="TOKENSECRET",
        sts_role_arn="arn:aws:iam::1:role/r",
        sts_external_id="EXTSECRET",
        credential_provider_class="com.example.C",
        credential_provider_param="PARAMSECRET",
    )
    text = repr(built) + str(built)
    for secret in ("AKIDSECRET", "VERYSECRET", "TOKENSECRET", "EXTSECRET", "PARAMSECRET"):
        assert secret not in text
    assert "aws_secret_key=<secret>" in text
    assert "stream_name='s'" in text
    with pytest.raises(TypeError) as caught:
        KinesisSource(stream_name="s", aws_access_key_id="x", aws_secret_key=12345)  # type: ignore[arg-type]
    assert "12345" not in str(caught.value)


def test_builders_are_immutable_and_revalidated_on_change():
    built = KinesisSource(stream_name="s")
    with pytest.raises(AttributeError):
        built.region = "x"  # type: ignore[misc]
    changed = built.with_options(max_fetch_records_per_shard=10)
    assert changed.options()["kinesis.maxFetchRecordsPerShard"] == "10"
    assert "kinesis.maxFetchRecordsPerShard" not in built.options()
    with pytest.raises(ValueError, match="at least 1"):
        built.with_options(max_fetch_records_per_shard=0)


def test_options_returns_a_copy():
    built = KinesisSource(stream_name="s")
    built.options()["kinesis.streamName"] = "other"
    assert built.options()["kinesis.streamName"] == "s"


# --- the whole catalogue: every argument of both builders, a wrong type and each bound ---------------

WRONG_TYPE = {
    "boolean": "true",
    "integer": "10",
    "decimal": "1.5",
    "duration": 1.5,
    "choice": 3,
    "position": 5,
    "string": 5,
}


def _catalogue(kind: str) -> list[tuple[type, str, object]]:
    cases: list[tuple[type, str, object]] = []
    for builder in (KinesisSource, KinesisSink):
        for spec in option_fields(builder):
            info = spec.info
            low = info.minimum - 1 if info.minimum is not None else info.above
            high = info.maximum + 1 if info.maximum is not None else None
            if info.type == "duration":  # bounds in milliseconds
                low, high = (None if ms is None else timedelta(milliseconds=ms) for ms in (low, high))
            if kind == "type":
                cases.append((builder, spec.name, WRONG_TYPE["position" if spec.forms else info.type]))
            elif kind == "low" and low is not None:
                cases.append((builder, spec.name, low))
            elif kind == "high" and high is not None:
                cases.append((builder, spec.name, high))
    return cases


REQUIRED = {"stream_name": "s"}


@pytest.mark.parametrize(("builder", "name", "value"), _catalogue("type"), ids=lambda v: getattr(v, "__name__", v))
def test_every_argument_refuses_a_wrong_type_naming_argument_and_option(builder, name, value):
    spec = _spec(builder, name)
    args = {**REQUIRED, name: value}
    with pytest.raises(TypeError) as caught:
        builder(**args)
    message = str(caught.value)
    assert f"{builder.__name__}({name}=" in message and spec.info.full_key in message, message
    assert f"got a value of type {type(value).__name__}" in message, message


@pytest.mark.parametrize(
    ("builder", "name", "value"), _catalogue("low") + _catalogue("high"), ids=lambda v: getattr(v, "__name__", v)
)
def test_every_bounded_argument_refuses_values_out_of_range_and_states_the_range(builder, name, value):
    spec = _spec(builder, name)
    with pytest.raises(ValueError) as caught:
        builder(**{**REQUIRED, name: value})
    message = str(caught.value)
    assert f"{builder.__name__}({name}={value!r})" in message and spec.info.full_key in message, message
    allowed = spec.info.bounds_text
    assert allowed and f"must be {allowed}" in message, message


def test_the_catalogue_covers_every_argument():
    # Cannot pass by accident: each builder has bounded integer options and every option has a kind.
    assert len(_catalogue("type")) == len(option_fields(KinesisSource)) + len(option_fields(KinesisSink))
    assert _catalogue("low") and _catalogue("high")


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"max_fetch_rate": 0}, r"max_fetch_rate=0\).*kinesis.maxFetchRate must be above 0 and at most 1000"),
        ({"max_fetch_rate": 5000}, r"max_fetch_rate=5000\).*kinesis.maxFetchRate must be above 0 and at most 1000"),
        ({"max_fetch_rate": float("nan")}, r"kinesis.maxFetchRate must be a finite number"),
        ({"max_fetch_rate": float("inf")}, r"kinesis.maxFetchRate must be a finite number"),
    ],
)
def test_more_value_errors(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        KinesisSource(stream_name="s", **kwargs)


def test_write_stream_needs_a_checkpoint_location():
    with pytest.raises(ValueError, match=r"checkpoint_location"):
        KinesisSink(stream_name="s").write_stream(object(), checkpoint_location="")  # type: ignore[arg-type]


# --- per-shard positions ---------------------------------------------------------------------------

SEQ = "49590338271490256608559692538361571095921575989136588898"


def test_shard_positions_render_the_document_the_connector_reads():
    doc = (
        ShardPositions()
        .after_sequence_number("orders", "shardId-000000000000", SEQ, sub_sequence_number=2)
        .at_sequence_number("orders", "shardId-000000000001", SEQ)
        .at_timestamp("orders", "shardId-000000000002", datetime(2026, 11, 1, 1, tzinfo=timezone(timedelta(hours=1))))
        .shard_end("orders", "shardId-000000000003")
        .trim_horizon("clicks", "shardId-000000000000")
    )
    source = KinesisSource(stream_name="orders,clicks", starting_position=doc)
    rendered = source.options()["kinesis.startingPosition"]
    assert json.loads(rendered) == {
        "orders": {
            "shardId-000000000000": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": SEQ, "subSequenceNumber": 2},
            "shardId-000000000001": {"type": "AT_SEQUENCE_NUMBER", "sequenceNumber": SEQ},
            "shardId-000000000002": {"type": "AT_TIMESTAMP", "timestamp": "2026-11-01T00:00:00Z"},
            "shardId-000000000003": {"type": "SHARD_END"},
        },
        "clicks": {"shardId-000000000000": {"type": "TRIM_HORIZON"}},
    }
    assert ShardPositions.from_json(rendered) == doc
    # The JSON string form is accepted and checked too.
    assert KinesisSource(stream_name="orders", starting_position=rendered).options()["kinesis.startingPosition"]


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (
            lambda: ShardPositions().at_sequence_number("s", "shardId-0", "12x"),
            r"shard 'shardId-0'.*'12x'.*sequence number",
        ),
        (lambda: ShardPositions().after_sequence_number("s", "shardId-0", SEQ, -1), r"subSequenceNumber -1"),
        (lambda: ShardPositions().trim_horizon("s", "shard 0"), r"'shard 0'.*not a shard id"),
        (lambda: ShardPositions().at_timestamp("s", "shardId-0", "2026-11-01T00:00:00"), r"no time zone"),
        (lambda: ShardPositions.from_json('{"s": {"shardId-0": {"type": "NOW"}}}'), r"type 'NOW' is not one of"),
        (lambda: ShardPositions.from_json('{"s": {"shardId-0": {"type": "LATEST", "x": 1}}}'), r"LATEST takes no x"),
        (lambda: ShardPositions.from_json("{"), r"not valid JSON"),
        (
            lambda: KinesisSource(
                stream_name="s", ending_position=ShardPositions().shard_end("s", "shardId-000000000000")
            ),
            r"ending_position=.*kinesis.endingPosition.*other than SHARD_END",
        ),
        (lambda: KinesisSource(stream_name="s", ending_position="TRIM_HORIZON"), r"kinesis.endingPosition.*LATEST"),
    ],
)
def test_bad_shard_positions_fail_naming_the_shard_and_the_problem(make, pattern):
    with pytest.raises(ValueError, match=pattern):
        make()


# --- the enums of the choice options, and time arguments -------------------------------------------


@pytest.mark.parametrize(
    ("enum", "key"),
    [
        (ConsumerType, "consumerType"),
        (HttpProtocol, "subscribeToShard.httpProtocol"),
        (MetadataCommitterType, "metadataCommitterType"),
        (MetricsLevel, "sink.metricsLevel"),
        (ThreadingModel, "sink.threadingModel"),
        (SinkProducer, "sink.producer"),
    ],
)
def test_each_choice_enum_names_exactly_the_jars_choices(enum, key):
    assert tuple(member.value for member in enum) == bundled_option_table()[key].choices


def test_enums_and_the_strings_they_stand_for_emit_the_same_option():
    by_enum = KinesisSink(stream_name="s", metrics_level=MetricsLevel.DETAILED, threading_model=ThreadingModel.POOLED)
    by_text = KinesisSink(stream_name="s", metrics_level="DETAILED", threading_model="pooled")
    assert by_enum.options() == by_text.options()
    assert by_enum.options()["kinesis.sink.metricsLevel"] == "detailed"
    assert MetricsLevel.SUMMARY == "summary"  # a str-valued enum compares as its string


def test_time_arguments_take_a_timedelta_or_an_int_in_the_unit_they_name():
    seconds = KinesisSource(stream_name="s", subscribe_timeout_sec=timedelta(minutes=2), max_fetch_time_per_shard_sec=9)
    assert seconds.options()["kinesis.subscribeToShard.timeoutSec"] == "120"
    assert seconds.options()["kinesis.maxFetchTimePerShardSec"] == "9"
    ttl = KinesisSink(stream_name="s", record_ttl=timedelta(seconds=45))
    assert ttl.options()["kinesis.sink.recordTtl"] == "45000"
    assert KinesisSink(stream_name="s", record_ttl=45_000).options() == ttl.options()
    with pytest.raises(ValueError, match=r"record_ttl=.*whole number of milliseconds"):
        KinesisSink(stream_name="s", record_ttl=timedelta(microseconds=1))
    # Not a whole number of seconds: milliseconds with their suffix, which the jar reads as such.
    assert (
        KinesisSource(stream_name="s", subscribe_timeout_sec=timedelta(milliseconds=1500)).options()[
            "kinesis.subscribeToShard.timeoutSec"
        ]
        == "1500ms"
    )
    assert (
        KinesisSource(stream_name="s", fetch_interval_ms=timedelta(minutes=2)).options()[
            "kinesis.getRecords.fetchIntervalMs"
        ]
        == "120000"
    )
    with pytest.raises(TypeError, match=r"a timedelta, an int \(in ms\) or a str"):
        KinesisSink(stream_name="s", record_ttl=1.5)  # type: ignore[arg-type]


def test_time_arguments_take_the_jars_duration_strings_and_emit_what_the_jar_reads_alike():
    def timeout(value: object) -> str:
        return KinesisSource(stream_name="s", subscribe_timeout_sec=value).options()[
            "kinesis.subscribeToShard.timeoutSec"
        ]

    assert [timeout(v) for v in ("2m", "45", " 90 SEC ", "1_500ms", "1h")] == ["120", "45", "90", "1500ms", "3600"]
    assert timeout(timedelta(minutes=2)) == timeout(120) == "120"
    interval = KinesisSource(stream_name="s", fetch_interval_ms="1s").options()["kinesis.getRecords.fetchIntervalMs"]
    assert interval == "1000"
    for bad in ("1x", "-1s", "1.5s", "", "2 m s"):
        with pytest.raises(
            ValueError, match=r"a duration such as 500ms, 30s, 2m, 1h or 1d, or a bare number of seconds"
        ):
            timeout(bad)


def test_trigger_intervals_take_a_timedelta():
    from spark_kinesis.realtime import interval_text

    assert interval_text(timedelta(seconds=10)) == "10000 milliseconds"
    assert interval_text(timedelta(milliseconds=1500)) == "1500 milliseconds"
    assert interval_text("10 seconds") == "10 seconds"
