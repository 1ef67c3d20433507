"""The connector on Spark Connect: a Connect server started with the jars, driven from a Connect client.

One server for the module (tests/harness/connect.py: pyspark's ``spark-submit --class ...SparkConnectServer
--jars <our jars>``, its UI and event log on), and one kinesis-local (plain port for reads and boto3, TLS port for
the sink). The client uses the typed builders (``KinesisSource``, ``KinesisSink``) on the remote session, as a user
would. The secret scan runs last: it stops the server, so that the event log and the server's log are complete when
they are read.

Client notes: a Connect session is made with ``pyspark.sql.connect.session.SparkSession.builder.remote(...)``,
which, unlike ``pyspark.sql.SparkSession.builder.remote(...)``, works in a process that already has a classic
session (other test modules' ``spark`` fixture) and does not switch the whole process to Connect mode
(``SPARK_CONNECT_MODE_ENABLED``); so the tests avoid ``pyspark.sql.functions`` and use SQL expressions.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import time
from collections import Counter
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyspark
import pytest
from harness import connect, emulators
from harness.kinesis import create_stream, put_plain
from harness.kpl import user_records

pytestmark = pytest.mark.emulator

ROOT = Path(__file__).resolve().parents[1]
HAS_REAL_TIME = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)

# Dummy credentials for the server JVM (it inherits this environment) and boto3; never real ones.
SERVER_ENV = {
    "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
    "AWS_REGION": emulators.REGION,
    "AWS_DEFAULT_REGION": emulators.REGION,
}


def remote_session(url: str) -> Any:
    """A new Connect session (its own session id on the server)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    return RemoteSparkSession.builder.remote(url).create()


@pytest.fixture(scope="session")
def workdir() -> Iterator[Path]:
    # Not pytest's tmp_path: other pytest sessions on the machine prune /tmp/pytest-of-<user> while this runs.
    path = ROOT / ".run" / f"connect-{secrets.token_hex(4)}"
    path.mkdir(parents=True)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _serving(folder: Path, jars: list[str], conf: dict[str, str] | None = None) -> Iterator[connect.ConnectServer]:
    """Start a Connect server with ``jars`` on ``--jars``, ``conf`` and :data:`SERVER_ENV`; stop it afterwards."""
    saved = {key: os.environ.get(key) for key in SERVER_ENV}
    os.environ.update(SERVER_ENV)
    try:
        server = connect.start(folder, jars, conf=conf)
        print(f"\nConnect server ({len(jars)} jars) answered after {server.start_seconds:.1f} s ({server.url})")
        try:
            yield server
        finally:
            server.stop()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def connect_server(workdir: Path) -> Iterator[connect.ConnectServer]:
    """A Connect server with the connector's jars on ``--jars`` and its SQL extension, for this session."""
    import spark_kinesis

    yield from _serving(
        workdir / "server", spark_kinesis.jar_paths(), {"spark.sql.extensions": spark_kinesis.SQL_EXTENSIONS}
    )


@pytest.fixture(scope="session")
def remote(connect_server: connect.ConnectServer) -> Iterator[Any]:
    """A Spark Connect client session on :func:`connect_server`."""
    started = time.monotonic()
    session = remote_session(connect_server.url)
    session.range(1).collect()
    print(f"first remote action after {time.monotonic() - started:.1f} s")
    try:
        yield session
    finally:
        if connect_server.alive():
            session.stop()


@pytest.fixture(scope="module")
def kinesis_tls() -> Iterator[emulators.Emulator]:
    """kinesis-local with its TLS port (the sink's KPL speaks only HTTPS)."""
    with emulators.running("kinesis-local") as emulator:
        yield emulator


@pytest.fixture
def kinesis(kinesis_tls: emulators.Emulator) -> Any:
    return emulators.kinesis_client(kinesis_tls.endpoint)


def source(emulator: emulators.Emulator, stream: str, **kwargs: Any) -> Any:
    from spark_kinesis import KinesisSource, StartingPosition

    return KinesisSource(
        stream_name=stream,
        region=emulators.REGION,
        endpoint_url=emulator.endpoint,
        starting_position=StartingPosition.trim_horizon(),
        **kwargs,
    )


def sink(emulator: emulators.Emulator, stream: str, **kwargs: Any) -> Any:
    from spark_kinesis import KinesisSink

    return KinesisSink(
        stream_name=stream,
        region=emulators.REGION,
        endpoint_url=emulator.tls_endpoint,
        verify_certificate=False,
        record_max_buffered_time_ms=100,
        **kwargs,
    )


def read_available_now(df: Any, name: str, checkpoint: Path, spark: Any) -> list[str]:
    """Run ``df`` to the end of the stream (AvailableNow) into a memory table; return its ``data`` values."""
    query = (
        df.selectExpr("CAST(data AS STRING) AS d")
        .writeStream.format("memory")
        .queryName(name)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    assert query.awaitTermination(120), f"{name}: the AvailableNow query did not end within 120 s"
    if query.exception() is not None:
        raise AssertionError(f"{name} failed: {query.exception()}")
    return [row["d"] for row in spark.sql(f"SELECT d FROM {name}").collect()]


def put_records(kinesis: Any, stream: str, n: int, prefix: str) -> list[str]:
    data = [f"{prefix}-{i}" for i in range(n)]
    put_plain(kinesis, stream, [(f"k{i % 17}", d) for i, d in enumerate(data)])
    return data


# --- the protection's logic, without a server ----------------------------------------------------------------------


class RecordingConf:
    """A session's ``conf``: records every call; ``refuse`` makes ``set`` fail as a server that forbids it would."""

    def __init__(self, refuse: bool = False) -> None:
        self.values: dict[str, str] = {}
        self.calls: list[str] = []
        self.refuse = refuse

    def get(self, key: str, default: str | None = None) -> str | None:
        self.calls.append(f"get {key}")
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.calls.append(f"set {key}")
        if self.refuse:
            raise RuntimeError(f"[CANNOT_MODIFY_CONFIG] Cannot modify the value of the Spark config: {key}")
        self.values[key] = value


def fake_session(module: str, refuse: bool = False) -> Any:
    """An object whose class lives in ``module`` (a Connect session's is under ``pyspark.sql.connect``)."""
    cls = type("SparkSession", (), {"__module__": module})
    session = cls()
    session.conf = RecordingConf(refuse)
    return session


def fake_reader(session: Any) -> Any:
    """A Connect ``DataStreamReader`` stand-in: keeps its session in ``_client`` and records the options set."""

    class Reader:
        __module__ = "pyspark.sql.connect.streaming.readwriter"

        def __init__(self) -> None:
            self._client = session
            self.options_set: dict[str, str] = {}

        def format(self, name: str) -> Any:
            return self

        def options(self, **options: str) -> Any:
            self.options_set.update(options)
            return self

    return Reader()


def test_a_classic_session_is_left_alone() -> None:
    from spark_kinesis.connect import is_connect_session, protect_secrets

    classic = fake_session("pyspark.sql.session")
    assert not is_connect_session(classic)
    protect_secrets(classic, {"kinesis.awsSecretKey": "s3cr3t"}, "KinesisSource")
    protect_secrets(None, {"kinesis.awsSecretKey": "s3cr3t"}, "KinesisSource")
    assert classic.conf.calls == []


def test_a_connect_session_without_secret_options_is_left_alone() -> None:
    from spark_kinesis.connect import is_connect_session, protect_secrets

    session = fake_session("pyspark.sql.connect.session")
    assert is_connect_session(session)
    protect_secrets(
        session, {"kinesis.streamName": "s", "kinesis.stsRoleArn": "arn:aws:iam::1:role/r"}, "KinesisSource"
    )
    assert session.conf.calls == []


def test_the_redaction_is_added_to_the_users_and_the_servers_setting_once() -> None:
    from spark_kinesis.connect import CORE_REDACTION_CONF, REDACTION_CONF, protect_secrets, secret_redaction_pattern

    session = fake_session("pyspark.sql.connect.session")
    session.conf.values[CORE_REDACTION_CONF] = "(?i)server-pattern"
    protect_secrets(session, {"KINESIS.AWSSECRETKEY": "s3cr3t"}, "KinesisSource")
    assert session.conf.values[REDACTION_CONF] == f"(?i)server-pattern|{secret_redaction_pattern()}"
    calls = len(session.conf.calls)
    protect_secrets(session, {"kinesis.sessionToken": "t"}, "KinesisSink")
    assert session.conf.calls[calls:] == [f"get {REDACTION_CONF}"], "already there: read, not set again"


def test_the_pattern_covers_every_secret_option_of_the_jar_and_redacts_plan_text() -> None:
    from spark_kinesis.connect import secret_option_keys, secret_redaction_pattern
    from spark_kinesis.option_table import bundled_option_table

    assert set(secret_option_keys()) == {i.full_key for i in bundled_option_table().values() if i.secret}
    assert {"kinesis.awsAccessKeyId", "kinesis.awsSecretKey", "kinesis.sessionToken"} <= set(secret_option_keys())
    pattern = re.compile(secret_redaction_pattern().removeprefix("(?i)"), re.IGNORECASE)
    plan = (
        'options {\n  key: "kinesis.awsSecretKey"\n  value: "ab\\"c+/="\n}\n'
        'options {\n  key: "kinesis.streamName"\n  value: "clicks"\n}\n'
        "Map(kinesis.sessiontoken -> tok123, kinesis.region -> eu-west-1)"
    )
    redacted = pattern.sub("*", plan)
    assert "ab" not in redacted and "c+/=" not in redacted and "tok123" not in redacted
    assert '"clicks"' in redacted and "kinesis.region -> eu-west-1" in redacted


def test_a_session_that_refuses_the_setting_refuses_the_secret_options_before_any_is_set() -> None:
    from spark_kinesis import KinesisSink, KinesisSource
    from spark_kinesis.connect import ConnectSecretError

    session = fake_session("pyspark.sql.connect.session", refuse=True)
    reader = fake_reader(session)
    source = KinesisSource(stream_name="s", aws_access_key_id="AKIAEXAMPLE", aws_secret_key="very-secret-value")
    with pytest.raises(ConnectSecretError) as error:
        source.apply(reader)
    text = str(error.value)
    assert text.startswith("KinesisSource: the secret option(s) kinesis.awsAccessKeyId, kinesis.awsSecretKey ")
    for safe_way in ("IAM role", "kinesis.stsRoleArn", "kinesis.credentialProviderClass", "environment of the server"):
        assert safe_way in text
    assert "very-secret-value" not in text and "AKIAEXAMPLE" not in text
    assert reader.options_set == {}, "no option was set on the reader"
    # Without secrets the same session is fine.
    KinesisSink(stream_name="s").apply(fake_reader(session))


# --- reads ---------------------------------------------------------------------------------------------------------


def test_the_builders_see_a_connect_session(remote: Any) -> None:
    from spark_kinesis.connect import is_connect_session, session_of

    assert is_connect_session(remote)
    assert session_of(remote.readStream) is remote
    assert session_of(remote.read) is remote
    assert session_of(remote.range(1).writeStream) is remote
    assert session_of(remote.range(1).write) is remote


def test_streaming_read_available_now_reads_every_record_once(
    remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any, workdir: Path
) -> None:
    stream = create_stream(kinesis, f"connect-avn-{secrets.token_hex(3)}", 2)
    sent = put_records(kinesis, stream, 300, "avn")
    df = source(kinesis_tls, stream).read_stream(remote)
    assert df.isStreaming
    got = read_available_now(df, "connect_avn", workdir / "chk-avn", remote)
    assert len(got) == 300
    assert Counter(got) == Counter(sent)


def test_payload_functions_decode_records_read_through_a_server_given_the_extension(
    remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any
) -> None:
    """``dynamodb_changes`` resolves on a server whose ``spark.sql.extensions`` names the connector's extension (the
    one setting its guide asks of a Connect server), decoding records that a batch read through that server returns.
    """
    stream = create_stream(kinesis, f"connect-ddb-{secrets.token_hex(3)}", 1)
    change = (ROOT / "src" / "test" / "resources" / "dynamodb-changes" / "modify.json").read_bytes()
    put_plain(kinesis, stream, [("c#42", change)])
    schema = "customer STRING, orderId BIGINT, total DECIMAL(10,2), paid BOOLEAN"
    rows = (
        source(kinesis_tls, stream)
        .read(remote)
        .selectExpr(f"dynamodb_changes(data, '{schema}') AS c")
        .selectExpr(
            "c.eventName", "c.keys.orderId", "c.oldImage.total AS was", "c.newImage.total AS now", "c.newImage.paid"
        )
        .collect()
    )
    assert [tuple(r) for r in rows] == [("MODIFY", 1001, Decimal("89.50"), Decimal("99.95"), True)]


def test_batch_read_reads_the_stream_to_its_tip(remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any) -> None:
    stream = create_stream(kinesis, f"connect-batch-{secrets.token_hex(3)}", 2)
    sent = put_records(kinesis, stream, 200, "batch")
    rows = source(kinesis_tls, stream).read(remote).selectExpr("CAST(data AS STRING) AS d", "shardId").collect()
    assert Counter(row["d"] for row in rows) == Counter(sent)
    assert len({row["shardId"] for row in rows}) == 2


# --- the sink ------------------------------------------------------------------------------------------------------


def test_sink_batch_and_streaming_writes_land_in_the_stream(
    remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any, workdir: Path
) -> None:
    stream = create_stream(kinesis, f"connect-sink-{secrets.token_hex(3)}", 2)
    target = sink(kinesis_tls, stream)
    batch = [(f"k{i % 7}", f"batch-{i}") for i in range(150)]
    target.write(remote.createDataFrame(batch, "partitionKey STRING, data STRING"))

    # A streaming write: a JSON directory on the server's file system, to the end of what is there.
    incoming = workdir / "sink-in"
    incoming.mkdir()
    (incoming / "part-0.json").write_text("\n".join(f'{{"k": "k{i % 7}", "v": "stream-{i}"}}' for i in range(120)))
    streaming = remote.readStream.schema("k STRING, v STRING").json(str(incoming))
    query = target.write_stream(
        streaming.selectExpr("k AS partitionKey", "v AS data"), checkpoint_location=str(workdir / "chk-sink")
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    expected = [d for _, d in batch] + [f"stream-{i}" for i in range(120)]
    deadline = time.monotonic() + 90
    got: list[str] = []
    while time.monotonic() < deadline:
        got = [data.decode() for data in user_records(kinesis, stream)]
        if len(got) >= len(expected):
            break
        time.sleep(0.5)
    assert Counter(got) == Counter(expected)


# --- real-time mode ------------------------------------------------------------------------------------------------


@pytest.mark.skipif(not HAS_REAL_TIME, reason="real-time mode needs Spark 4.1 or newer")
def test_real_time_query_writes_records_as_they_arrive(
    remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any, workdir: Path
) -> None:
    """Kinesis to Kinesis with a real-time trigger of 5 minutes: records put while it runs land within seconds, so
    they were emitted inside the first batch (a micro-batch trigger of 5 minutes would hold them)."""
    from spark_kinesis.realtime import ALLOWLIST_CHECK_CONF

    src = create_stream(kinesis, f"connect-rt-in-{secrets.token_hex(3)}", 1)
    dst = create_stream(kinesis, f"connect-rt-out-{secrets.token_hex(3)}", 1)
    before = put_records(kinesis, src, 20, "before")
    remote.conf.set(ALLOWLIST_CHECK_CONF, "false")
    events = source(kinesis_tls, src).read_stream(remote)
    query = sink(kinesis_tls, dst).write_stream(
        events.selectExpr("data", "partitionKey"), str(workdir / "chk-rt"), real_time="5 minutes"
    )
    started = time.monotonic()
    try:

        def landed() -> set[str]:
            return {data.decode() for data in user_records(kinesis, dst)}

        deadline = started + 90
        while time.monotonic() < deadline and not set(before) <= landed():
            assert query.exception() is None, query.exception()
            time.sleep(0.5)
        assert set(before) <= landed(), "the records put before the start did not land"
        during = put_records(kinesis, src, 30, "during")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not set(during) <= landed():
            assert query.exception() is None, query.exception()
            time.sleep(0.5)
        assert set(before + during) <= landed(), "the records put while running did not land within 60 s"
        assert time.monotonic() - started < 300, "slower than one batch: this does not show real-time emission"
        assert query.isActive
    finally:
        query.stop()


# --- errors --------------------------------------------------------------------------------------------------------


def test_a_bad_option_fails_at_the_first_action_naming_the_option(
    remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any, workdir: Path
) -> None:
    """The jar's check of an unknown option reaches the client, at ``start()`` / ``collect()`` (building the
    DataFrame sends nothing to the server)."""
    from pyspark.errors import PySparkException

    stream = create_stream(kinesis, f"connect-bad-{secrets.token_hex(3)}", 1)
    bad = source(kinesis_tls, stream, extra_options={"kinesis.startingPositon": "LATEST"})
    df = bad.read_stream(remote)  # nothing sent yet: no error
    with pytest.raises(PySparkException) as streaming_error:
        df.writeStream.format("memory").queryName("connect_bad").option(
            "checkpointLocation", str(workdir / "chk-bad")
        ).start().awaitTermination(60)
    batch_df = bad.read(remote)
    with pytest.raises(PySparkException) as batch_error:
        batch_df.collect()
    for error in (streaming_error.value, batch_error.value):
        text = str(error)
        # Spark hands options to the source case-insensitively (lower case): the name is the one given, in lower case.
        assert "unknown option 'kinesis.startingpositon'" in text.lower(), text
        assert "Did you mean 'kinesis.startingPosition'" in text, text


# --- jars shipped from the client (spark.addArtifacts) --------------------------------------------------------------


@pytest.fixture(scope="session")
def bare_server(workdir: Path) -> Iterator[connect.ConnectServer]:
    """A Connect server started without the connector's jars."""
    yield from _serving(workdir / "bare-server", [])


def test_jars_added_by_the_client_serve_streaming_and_batch_reads_and_writes(
    bare_server: connect.ConnectServer, kinesis_tls: emulators.Emulator, kinesis: Any, workdir: Path
) -> None:
    """``spark.addArtifacts(*jar_paths())`` on a server without the jars: a batch read, a streaming read to the end
    (AvailableNow), a streaming write (Kinesis to Kinesis) and a batch write. Spark reads broadcast values and task
    results with its own class loader, which does not see a session's jars, so the connector broadcasts Spark's
    ``SerializableConfiguration`` and its writer sends the driver no message of its own class; before that the
    streaming read failed on the broadcast and the writes on their task results."""
    import spark_kinesis

    stream = create_stream(kinesis, f"connect-art-{secrets.token_hex(3)}", 2)
    target = create_stream(kinesis, f"connect-art-out-{secrets.token_hex(3)}", 1)
    sent = put_records(kinesis, stream, 100, "art")
    spark = remote_session(bare_server.url)
    try:
        spark.addArtifacts(*spark_kinesis.jar_paths())
        assert Counter(
            r["d"] for r in source(kinesis_tls, stream).read(spark).selectExpr("CAST(data AS STRING) AS d").collect()
        ) == Counter(sent)
        got = read_available_now(
            source(kinesis_tls, stream).read_stream(spark), "connect_art", workdir / "chk-art", spark
        )
        assert Counter(got) == Counter(sent)
        copy = sink(kinesis_tls, target).write_stream(
            source(kinesis_tls, stream).read_stream(spark).selectExpr("data", "partitionKey"),
            checkpoint_location=str(workdir / "chk-art-copy"),
        )
        try:
            copy.processAllAvailable()
        finally:
            copy.stop()
        sink(kinesis_tls, target).write(spark.createDataFrame([("k", "art-batch")], "partitionKey STRING, data STRING"))
    finally:
        spark.stop()
    written = [data.decode() for data in user_records(kinesis, target)]
    assert Counter(written) == Counter([*sent, "art-batch"])


# --- secrets (last: stops the server to read its complete event log and log) ------------------------------------------

UI_PAGES = ("/connect/", "/jobs/", "/stages/", "/SQL/", "/StreamingQuery/", "/environment/")


def credentials(tag: str) -> dict[str, str]:
    """Static credentials with values unique to this run (the emulator does not check signatures)."""
    return {
        "aws_access_key_id": f"AKIA{tag.upper()}{secrets.token_hex(6).upper()}",
        "aws_secret_key": f"{tag}-secret-{secrets.token_hex(12)}",
        "session_token": f"{tag}-token-{secrets.token_hex(12)}",
    }


def run_reads_and_a_write(
    workdir: Path,
    spark: Any,
    kinesis_tls: emulators.Emulator,
    stream: str,
    target: str,
    creds: dict[str, str],
    name: str,
    by_hand: bool,
) -> None:
    """A streaming read (AvailableNow), a batch read and a batch write, with ``creds``: through the builders, or with
    the same options set by hand on the readers and writers (no builder, so nothing redacts)."""
    from spark_kinesis.builders import FORMAT

    src, dst = source(kinesis_tls, stream, **creds), sink(kinesis_tls, target, **creds)
    rows = spark.createDataFrame([("k", f"{name}-row")], "partitionKey STRING, data STRING")
    if by_hand:
        streaming = spark.readStream.format(FORMAT).options(**src.options()).load()
        batch = spark.read.format(FORMAT).options(**src.options()).load()
        rows.write.format(FORMAT).options(**dst.options()).mode("append").save()
    else:
        streaming, batch = src.read_stream(spark), src.read(spark)
        dst.write(rows)
    assert len(read_available_now(streaming, name, workdir / f"chk-{name}", spark)) == 20
    assert batch.count() == 20


def occurrences(
    server: connect.ConnectServer, pages: dict[str, str], values: dict[str, str]
) -> dict[str, dict[str, int]]:
    """How often each value appears in the UI pages, the event log and the server's log."""
    places = {"ui": "".join(pages.values()), "event log": server.event_log_text(), "server log": server.log_text()}
    return {place: {key: text.count(value) for key, value in values.items()} for place, text in places.items()}


def test_no_secret_given_to_the_builders_reaches_the_ui_event_log_or_server_log(
    connect_server: connect.ConnectServer, remote: Any, kinesis_tls: emulators.Emulator, kinesis: Any, workdir: Path
) -> None:
    """The builders make a Connect session redact the connector's secret options before sending them: none of the
    secret values appears in the UI (Connect, jobs, stages, SQL, streaming and environment pages, and the Connect
    page of each session), the event log or the server's log. The control, on another session of the same server,
    sets the same kind of options by hand; the scan finds those values, so it can see a leak."""
    from spark_kinesis.connect import REDACTION_CONF, secret_redaction_pattern

    stream = create_stream(kinesis, f"connect-secret-{secrets.token_hex(3)}", 1)
    target = create_stream(kinesis, f"connect-secret-out-{secrets.token_hex(3)}", 1)
    put_records(kinesis, stream, 20, "secret")
    guarded_creds, control_creds = credentials("guarded"), credentials("control")

    guarded = remote_session(connect_server.url)
    control = remote_session(connect_server.url)
    try:
        guarded.conf.set(REDACTION_CONF, "(?i)user-own-pattern")  # a setting of the user's own: kept
        run_reads_and_a_write(
            workdir, guarded, kinesis_tls, stream, target, guarded_creds, "secret_guarded", by_hand=False
        )
        assert guarded.conf.get(REDACTION_CONF) == f"(?i)user-own-pattern|{secret_redaction_pattern()}"

        run_reads_and_a_write(
            workdir, control, kinesis_tls, stream, target, control_creds, "secret_control", by_hand=True
        )
        assert control.conf.get(REDACTION_CONF, None) is None

        pages = {page: connect_server.ui_html(page) for page in UI_PAGES}
        for session in (guarded, control, remote):
            page = f"/connect/session/?id={session.session_id}"
            pages[page] = connect_server.ui_html(page)
        # The detail page of every SQL execution and job (plans, descriptions, call sites).
        details = set(re.findall(r"/(SQL/execution|jobs/job)/\?id=(\d+)", "".join(pages.values())))
        for kind, number in sorted(details):
            pages[f"/{kind}/?id={number}"] = connect_server.ui_html(f"/{kind}/?id={number}")
        assert any(page.startswith("/SQL/execution/") for page in pages), "no SQL execution page found"
    finally:
        # Every session is closed while the server runs: a client whose server is gone retries for minutes at exit.
        guarded.stop()
        control.stop()
    assert any("secret_guarded" in html for html in pages.values()), "the UI does not list the guarded session's query"
    remote.stop()
    connect_server.stop()  # closes the event log; the fixtures' teardown then finds the server stopped

    found = occurrences(
        connect_server, pages, {**guarded_creds, **{f"control {k}": v for k, v in control_creds.items()}}
    )
    print(f"\noccurrences of each value in {len(pages)} UI pages, the event log and the server log:")
    for place, counts in found.items():
        print(f"  {place}: {counts}")
    for place, counts in found.items():
        leaked = {key: n for key, n in counts.items() if not key.startswith("control") and n}
        assert not leaked, f"secret values given to the builders found in the {place}: {leaked}"
    assert found["ui"]["control aws_secret_key"] > 0, "the scan cannot see a secret in the UI: the control failed"
    assert found["event log"]["control aws_secret_key"] > 0, "the scan cannot see a secret in the event log"
