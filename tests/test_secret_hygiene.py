"""Secrets never reach logs (at DEBUG), plan strings, progress JSON, the Spark UI or command lines.

One Spark job (tests/jobs/secret_hygiene_job.py, its own JVM with log4j at DEBUG for everything)
runs queries with every secret credential option set: reads with a role (keys, session token and
external id as the base), with DynamoDB metadata, and with a custom provider; and a streaming write
through the KPL with the role and keys. The secret values are random per run and reach
the job through a file, so any place they show up was put there by Spark or the connector.
"""

from __future__ import annotations

import json
import os
import secrets as random_secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.kinesis import create_stream, put_plain
from harness.kpl import user_records
from test_cross_account import ROLE_ACCOUNT, _assumed_client, _role_arn

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[1]

PROVIDER_SOURCE = """
package hygiene;

import io.sparkkinesis.credentials.KinesisCredentials;
import io.sparkkinesis.credentials.KinesisCredentialsProvider;

/** Compiled by the test against the shaded jar: no AWS SDK class in sight. */
public class ParamProvider implements KinesisCredentialsProvider {
  private final String param;

  public ParamProvider(String param) {
    if (param == null || param.isEmpty()) throw new IllegalArgumentException("no parameter");
    this.param = param;
  }

  @Override
  public KinesisCredentials resolve() {
    return KinesisCredentials.of("test-access-key", "test-secret-key");
  }
}
"""

LOG4J = """
rootLogger.level = debug
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {path}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d %p %c: %m%n%ex
"""


def _compile_provider(workdir: Path) -> str:
    import spark_kinesis

    src = workdir / "provider" / "hygiene" / "ParamProvider.java"
    src.parent.mkdir(parents=True)
    src.write_text(PROVIDER_SOURCE)
    classes = workdir / "provider-classes"
    classpath = os.pathsep.join(spark_kinesis.jar_paths())
    subprocess.run(["javac", "-d", str(classes), "-cp", classpath, str(src)], check=True, timeout=120)
    # A jar given to Spark like any user jar (spark.jars): it must share the connector's class loader.
    jar = workdir / "hygiene-provider.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(classes), "."], check=True, timeout=120)
    return str(jar)


def test_no_secret_in_logs_plans_progress_ui_or_command_lines(ministack: str, kinesis_client_factory: Any) -> None:
    # Not pytest's tmp_path: other pytest sessions on the machine prune /tmp/pytest-of-<user> while this runs.
    tmp_path = ROOT / ".run" / f"hygiene-{random_secrets.token_hex(4)}"
    tmp_path.mkdir(parents=True)
    secrets = {
        "accessKeyId": "AKIA" + random_secrets.token_hex(8).upper(),
        "secretKey": "sk-" + random_secrets.token_hex(16),
        "sessionToken": "st-" + random_secrets.token_hex(16),
        "externalId": "ext-" + random_secrets.token_hex(8),
        "providerParam": "pp-" + random_secrets.token_hex(8),
    }
    role = _role_arn()
    role_stream = f"hygiene-role-{random_secrets.token_hex(4)}"
    default_stream = f"hygiene-default-{random_secrets.token_hex(4)}"
    sink_stream = f"hygiene-sink-{random_secrets.token_hex(4)}"
    table = f"hygiene-meta-{random_secrets.token_hex(4)}"
    role_kinesis = _assumed_client("kinesis", ministack, role)
    create_stream(role_kinesis, role_stream, 1)
    create_stream(role_kinesis, sink_stream, 1)
    put_plain(role_kinesis, role_stream, [f"r{i}" for i in range(20)])
    default_kinesis = kinesis_client_factory(ministack)
    create_stream(default_kinesis, default_stream, 1)
    put_plain(default_kinesis, default_stream, [f"d{i}" for i in range(20)])

    (tmp_path / "secrets.json").write_text(json.dumps(secrets))
    (tmp_path / "log4j2.properties").write_text(LOG4J.format(path=tmp_path / "debug.log"))
    (tmp_path / "setup.json").write_text(
        json.dumps(
            {
                "roleArn": role,
                "roleStream": role_stream,
                "defaultStream": default_stream,
                "sinkStream": sink_stream,
                "table": table,
                "providerClass": "hygiene.ParamProvider",
                "providerJar": _compile_provider(tmp_path),
            }
        )
    )
    job = ROOT / "tests" / "jobs" / "secret_hygiene_job.py"
    done = subprocess.run(
        [sys.executable, str(job), ministack, str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    results = [json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert results == [{"role": 20, "custom": 20, "sink": 20}], done.stdout[-3000:] + done.stderr[-5000:]
    assert ROLE_ACCOUNT in role
    # The sink really wrote with the role's session (the stream exists only in the role's account),
    # and the role query's metadata really went to DynamoDB there.
    assert sorted(user_records(role_kinesis, sink_stream)) == sorted(f"r{i}".encode() for i in range(20))
    assert _assumed_client("dynamodb", ministack, role).scan(TableName=table)["Items"]

    log = (tmp_path / "debug.log").read_text(errors="replace")
    # The log really is at DEBUG and covers the connector, the AWS SDK (Kinesis, STS, DynamoDB) and the KPL.
    assert " DEBUG " in log and "io.sparkkinesis" in log, log[:2000]
    for client in ("DynamoDb", "Sts", "Kinesis", "kinesis_producer"):
        assert client.lower() in log.lower(), f"no {client} line in the DEBUG log"
    places = {"debug log": log, "job stdout": done.stdout, "job stderr": done.stderr}
    artifacts = sorted((tmp_path / "artifacts").iterdir())
    names = {p.name for p in artifacts}
    for query in ("role", "custom", "sink"):
        for kind in ("explain-query", "progress", "cmdlines", "ui-sql", "ui-streaming-page"):
            assert any(n.startswith(f"{query}-{kind}") for n in names), (query, kind, names)
    for path in artifacts:
        places[path.name] = path.read_text(errors="replace")
    # The artifacts hold what they should (so an empty capture cannot pass).
    assert f"KinesisScan[stream={role_stream}" in places["role-explain-query.txt"]
    assert "credentials=assume role" in places["role-explain-query.txt"]
    assert role_stream in places["role-progress.json"]
    assert f"aws-kinesis[{sink_stream}]" in places["sink-progress.json"]
    assert "secret_hygiene_job.py" in places["role-cmdlines.txt"]
    assert "kinesis_producer" in places["sink-cmdlines.txt"], "the KPL's native process was not running"
    leaks = [
        f"{name} appears in {place}"
        for place, text in places.items()
        for name, value in secrets.items()
        if value in text
    ]
    assert not leaks, leaks
    shutil.rmtree(tmp_path)  # kept for inspection when the test fails
