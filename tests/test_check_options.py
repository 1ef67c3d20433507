"""``spark-kinesis check-options``: options checked by the jar's own parsing, as a read's or a
write's definition checks them (``io.sparkkinesis.tools.CheckOptionsTool``), with no AWS call.

Needs the jars: scripts/build.sh (or SPARK_KINESIS_JAR=<line jar>,<deps jar> while iterating).
"""

from __future__ import annotations

import io
import json

import pytest
from spark_kinesis.cli import main

STREAM = ["-o", "kinesis.streamName=orders", "-o", "kinesis.region=us-east-1"]


def _check(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["check-options", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_options_both_sides_accept(capsys):
    assert _check(capsys, *STREAM) == (0, "source: accepted\nsink: accepted\n", "")


def test_an_option_of_one_side_is_refused_by_the_other(capsys):
    fan_out = [*STREAM, "-o", "kinesis.consumerType=SubscribeToShard", "-o", "kinesis.consumerName=app"]
    code, out, _ = _check(capsys, *fan_out)
    assert code == 1
    assert out.splitlines()[0] == "source: accepted"
    assert out.splitlines()[1].startswith("sink: refused: Option kinesis.consumerType applies to reads"), out
    assert _check(capsys, "--source", *fan_out) == (0, "source: accepted\n", "")


def test_a_broken_rule_is_named_with_its_message(capsys):
    fan_out = ["-o", "kinesis.consumerType=SubscribeToShard", "-o", "kinesis.consumerName=app"]
    code, out, _ = _check(capsys, "--source", *STREAM, *fan_out, "-o", "kinesis.maxFetchRate=2.5")
    assert code == 1
    assert out.startswith("source: refused (rule fan-out-not-paced): Option kinesis.maxFetchRate = 2.5 applies"), out


def test_a_bad_value_and_an_unknown_key_name_the_option(capsys):
    code, out, _ = _check(capsys, "--sink", *STREAM, "-o", "kinesis.sink.maxConnections=0")
    assert code == 1 and "kinesis.sink.maxConnections" in out and "'0'" in out, out
    code, out, _ = _check(capsys, "--source", *STREAM, "-o", "kinesis.streamname=x", "-o", "kinesis.regoin=y")
    assert code == 1 and "Unknown option 'kinesis.regoin'" in out and "Did you mean" in out, out


def test_json_output(capsys):
    code, out, _ = _check(capsys, "--json", *STREAM, "-o", "kinesis.sink.maxConnections=0")
    assert code == 1
    results = json.loads(out)
    assert results["source"] == {"accepted": False, "rule": None, "message": results["source"]["message"]}
    assert "applies to writes" in results["source"]["message"]
    assert results["sink"]["accepted"] is False and "kinesis.sink.maxConnections" in results["sink"]["message"]


def test_a_custom_credentials_class_is_loaded(capsys):
    code, out, _ = _check(capsys, "--source", *STREAM, "-o", "kinesis.credentialProviderClass=com.example.Missing")
    assert code == 1 and "'com.example.Missing' was not found" in out, out


def test_secrets_are_refused_as_arguments_and_read_from_standard_input(capsys, monkeypatch):
    code, out, err = _check(capsys, *STREAM, "-o", "KINESIS.awsSecretKey=hunter2-secret")
    assert code == 2 and out == ""
    assert "is secret" in err and "hunter2-secret" not in err

    keys = {"kinesis.awsAccessKeyId": "AKIDEXAMPLE", "kinesis.awsSecretKey": "hunter2-secret"}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(keys)))
    assert _check(capsys, "--options-file", "-", *STREAM) == (0, "source: accepted\nsink: accepted\n", "")

    # A refused secret is not echoed: a session token without keys, as key=value lines.
    monkeypatch.setattr("sys.stdin", io.StringIO("kinesis.sessionToken = token-hunter2\n"))
    code, out, _ = _check(capsys, "--source", "--options-file", "-", *STREAM)
    assert code == 1 and "kinesis.sessionToken" in out and "token-hunter2" not in out, out


def test_the_region_comes_from_the_environment_unless_given(capsys, monkeypatch, tmp_path):
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    # Nothing else in the AWS SDK's default region chain: no profile, no instance metadata.
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, out, _ = _check(capsys, "--source", "-o", "kinesis.streamName=orders")
    assert code == 1 and "No AWS region" in out, out
    assert _check(capsys, "--source", "-o", "kinesis.streamName=orders", "--default-region", "eu-west-1")[0] == 0
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert _check(capsys, "--source", "-o", "kinesis.streamName=orders") == (0, "source: accepted\n", "")


def test_a_malformed_option_argument_is_a_usage_error(capsys):
    code, out, err = _check(capsys, "-o", "kinesis.streamName")
    assert code == 2 and out == "" and "expected KEY=VALUE" in err
