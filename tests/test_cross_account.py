"""Cross-account reads and writes through an assumed role, end to end: real Spark, the shaded jar, ministack.

ministack's STS puts an assumed role's session in the role's account (the account in the role ARN),
and ministack keeps Kinesis streams and DynamoDB tables per account: a stream created with the role's
session exists only there. Both are checked here with boto3 before the connector is tested, so an
emulator change that breaks the premise fails loudly. ministack does not check trust policies or the
external id (AUTH is off); that the external id is sent is tested with a fake STS in
AwsCredentialsSuite. The sink's KPL speaks only HTTPS: it reaches the same ministack through a TLS
front (tests/harness/tls_front.py), so the stream, the accounts and the role sessions are shared.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import boto3
import pytest
from harness import emulators, kpl
from harness.kinesis import create_stream, put_plain
from harness.tls_front import TlsFront
from streaming import read_until, reader

pytestmark = pytest.mark.emulator

ROLE_ACCOUNT = "222233334444"


def _role_arn() -> str:
    return f"arn:aws:iam::{ROLE_ACCOUNT}:role/cross-reader-{uuid.uuid4().hex[:6]}"


def _assumed_client(service: str, endpoint: str, role_arn: str) -> Any:
    sts = boto3.client(
        "sts",
        endpoint_url=endpoint,
        region_name=emulators.REGION,
        aws_access_key_id=emulators.ACCESS_KEY,
        aws_secret_access_key=emulators.SECRET_KEY,
    )
    creds = sts.assume_role(RoleArn=role_arn, RoleSessionName="setup")["Credentials"]
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=emulators.REGION,
        aws_access_key_id=creds["AccessKeyId"],
        aws_secret_access_key=creds["SecretAccessKey"],
        aws_session_token=creds["SessionToken"],
    )


def test_a_stream_in_the_role_account_is_read_through_the_role_and_invisible_without_it(
    spark: Any,
    ministack: str,
    jvm_cbor_disabled: None,
    aws_client_factory: Any,
    stream_name: str,
    tmp_path: Any,
) -> None:
    role = _role_arn()
    in_role_account = _assumed_client("kinesis", ministack, role)
    caller = _assumed_client("sts", ministack, role).get_caller_identity()
    assert caller["Account"] == ROLE_ACCOUNT, caller
    create_stream(in_role_account, stream_name, 2)
    sent = [(f"k{i}", f"cross-{i}") for i in range(60)]
    put_plain(in_role_account, stream_name, sent)

    # Premise: ministack isolates accounts; the default (test) credentials do not see the stream.
    default_account = aws_client_factory("kinesis", ministack)
    with pytest.raises(default_account.exceptions.ResourceNotFoundException):
        default_account.describe_stream_summary(StreamName=stream_name)

    table = f"meta-{uuid.uuid4().hex[:8]}"
    role_options = {
        "kinesis.stsRoleArn": role,
        "kinesis.stsSessionName": "spark-reader",
        "kinesis.stsEndpointUrl": ministack,
        "kinesis.stsExternalId": "ext-cross-1",
        "kinesis.metadataCommitterType": "DYNAMODB",
        "kinesis.dynamodb.tableName": table,
        "kinesis.dynamodb.endpointUrl": ministack,
        "kinesis.startingPosition": "TRIM_HORIZON",
    }
    checkpoint = str(tmp_path / "chk")
    rows = read_until(spark, ministack, stream_name, checkpoint, len(sent), **role_options).rows()
    assert Counter(r.data for r in rows) == Counter(d for _, d in sent)

    # The metadata went to DynamoDB in the role's account too, keyed by checkpoint location and run.
    dynamo = _assumed_client("dynamodb", ministack, role)
    items = dynamo.scan(TableName=table)["Items"]
    assert items, "no metadata in the role account's table"
    partitions = {i["queryRun"]["S"] for i in items}
    assert len(partitions) == 1, partitions
    location, run_id = partitions.pop().rsplit("#", 1)
    assert location.endswith("chk/sources/0") and uuid.UUID(run_id), location
    assert {i["key"]["S"].split("/")[0] for i in items} == {stream_name}
    assert table not in aws_client_factory("dynamodb", ministack).list_tables()["TableNames"]

    # Without the role the same query cannot see the stream: it fails when it starts.
    query = (
        reader(spark, ministack, stream_name, startingPosition="TRIM_HORIZON")
        .writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "chk-no-role"))
        .start()
    )
    try:
        with pytest.raises(Exception) as error:
            query.awaitTermination(60)
        assert "ResourceNotFound" in str(error.value) or "not found" in str(error.value).lower(), error.value
    finally:
        query.stop()


def test_a_stream_in_the_role_account_is_written_through_the_role_and_not_without_it(
    spark: Any, ministack: str, jvm_cbor_disabled: None, aws_client_factory: Any, stream_name: str
) -> None:
    role = _role_arn()
    in_role_account = _assumed_client("kinesis", ministack, role)
    create_stream(in_role_account, stream_name, 2)
    with pytest.raises(aws_client_factory("kinesis", ministack).exceptions.ResourceNotFoundException):
        aws_client_factory("kinesis", ministack).describe_stream_summary(StreamName=stream_name)
    rows = spark.range(0, 300, 1, 2).selectExpr(
        "concat('k', CAST(id % 37 AS STRING)) AS partitionKey", "concat('cross-write-', CAST(id AS STRING)) AS data"
    )
    with TlsFront(ministack) as front:
        options = {
            "kinesis.endpointUrl": front.url,
            "kinesis.region": emulators.REGION,
            "kinesis.streamName": stream_name,
            "kinesis.sink.verifyCertificate": "false",
            "kinesis.sink.recordTtl": "5000",
        }
        role_options = {
            "kinesis.stsRoleArn": role,
            "kinesis.stsSessionName": "spark-writer",
            "kinesis.stsEndpointUrl": ministack,
            "kinesis.stsExternalId": "ext-cross-w",
        }
        rows.write.format("aws-kinesis").mode("append").options(**options, **role_options).save()
        written = sorted(kpl.user_records(in_role_account, stream_name))
        assert written == sorted(f"cross-write-{i}".encode() for i in range(300))

        # Without the role the write signs as the default account, where the stream does not exist: the driver's
        # check of the stream fails the write at once, and nothing is added to the role account's stream.
        with pytest.raises(Exception) as error:
            rows.limit(10).write.format("aws-kinesis").mode("append").options(**options).save()
        assert f"Stream {stream_name} does not exist" in str(error.value), str(error.value)[:2000]
    assert len(kpl.user_records(in_role_account, stream_name)) == 300
