"""Shared pytest fixtures: emulators, boto3 clients, stream helpers, a counting proxy, Spark.

Emulators start once per session, lazily (only if a test asks for them), on free loopback ports,
and stop at the end. To reuse emulators started by hand (``scripts/emulator.sh start KIND``), set
``KINESIS_LOCAL_ENDPOINT`` / ``MINISTACK_ENDPOINT``; the fixtures then neither start nor stop them.

Helpers live in the ``harness`` package (tests/harness/) so that scripts can use them too::

    from harness.kinesis import create_stream, put_plain, put_aggregated, split_shard, merge_shards
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import emulators
from harness.jvm import LEAN_JIT, spark_jvm_options
from harness.kinesis import delete_stream, put_plain, unique_stream_name
from harness.proxy import CountingProxy

ROOT = Path(__file__).resolve().parent.parent

# Dummy credentials for every AWS client in the tests: boto3 here, the AWS SDK in the Spark JVM
# (which inherits this process's environment when pyspark launches it), and the emulators.
TEST_ENV = {
    "AWS_ACCESS_KEY_ID": emulators.ACCESS_KEY,
    "AWS_SECRET_ACCESS_KEY": emulators.SECRET_KEY,
    "AWS_REGION": emulators.REGION,
    "AWS_DEFAULT_REGION": emulators.REGION,
}


# Fixtures that start a Spark JVM or an emulator, and modules whose tests start one themselves (spark-submit, the
# jar's command line, a Maven build) or read what only the full build makes: a test with none of them, and not
# marked ``emulator`` or ``all_lines``, is a ``unit`` test, run by scripts/test.sh --quick.
_HEAVY_FIXTURES = frozenset({"spark", "kinesis_local", "ministack"})
_HEAVY_MODULES = frozenset(
    {
        "test_check_options",
        "test_cluster_faults",
        "test_connect",
        "test_examples",
        "test_jar_smoke",
        "test_kcl3_handover",
        "test_maven_artifacts",
        "test_metrics_sink",
        "test_packages",
        "test_pipelines",
        "test_provider_conflict",
        "test_release",
        "test_secret_hygiene",
        "test_spark_line",
    }
)


# The modules that take longest, longest first (wall time of each in a run of the suite with two workers on a 2-core
# machine, 2026-11-28: from 290 s down to 23 s; the other modules take less). They run first, and the two pytest
# workers (--dist loadfile hands out whole modules in collection order) end together on short ones instead of one
# waiting minutes for the other's last long module (scripts/test.sh passes --no-loadscope-reorder, else xdist would
# hand out first the modules with the most tests).
_LONGEST_FIRST = (
    "test_cluster_faults",
    "test_real_time",
    "test_sink",
    "test_connect",
    "test_efo_emulator",
    "test_resources",
    "test_pipelines",
    "test_faults",
    "test_examples",
    "test_source_emulator",
    "test_large_records",
    "test_shard_listing",
    "test_fetch_rate",
    "test_idle_batches",
    "test_stress",
    "test_efo_consumers",
    "test_batch_read",
    "test_available_now",
    "test_secret_hygiene",
    "test_maven_artifacts",
    "test_auto_distribution",
    "test_provider_conflict",
    "test_kcl_positions",
    "test_metrics_sink",
    "test_source_metrics",
    "test_options_table",
)


# scripts/test.sh runs the suite in two stages: the tests that the default line's jar serves, while the other lines
# still build (SPARK_KINESIS_TEST_STAGE=default-line), then those marked ``all_lines`` (=all-lines).
STAGE_ENV = "SPARK_KINESIS_TEST_STAGE"
_STAGES = {"default-line": False, "all-lines": True}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {module: position for position, module in enumerate(_LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.stem, len(rank)))  # stable: the rest keep their order
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        module = item.path.stem
        if fixtures & _HEAVY_FIXTURES or module in _HEAVY_MODULES:
            continue
        if item.get_closest_marker("emulator") or item.get_closest_marker("all_lines"):
            continue
        item.add_marker(pytest.mark.unit)
    stage = os.environ.get(STAGE_ENV)
    if not stage:
        return
    if stage not in _STAGES:
        raise pytest.UsageError(f"{STAGE_ENV}={stage!r}: expected one of {sorted(_STAGES)}, or unset for every test")
    wanted = _STAGES[stage]
    kept, left_out = [], []
    for item in items:
        (kept if bool(item.get_closest_marker("all_lines")) == wanted else left_out).append(item)
    config.hook.pytest_deselected(items=left_out)
    items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every JVM that spark-submit starts for the tests (the session's, jobs', Spark Connect servers', pipelines')
    takes the options of ``spark_jvm_options`` (LEAN_JIT and the class-data archive of this pyspark), and so do the
    standalone cluster's daemons (tests/harness/cluster.py passes on this environment) and executors. Set once the
    tests to run are known, so that a run of unit tests only (scripts/test.sh --quick) does not make the archive.
    Benchmarks do not load this file: they measure with the JVM's defaults.
    """
    if LEAN_JIT in os.environ.get("SPARK_SUBMIT_OPTS", ""):
        return
    unit_only = all(item.get_closest_marker("unit") for item in session.items)
    options = LEAN_JIT if unit_only else spark_jvm_options()
    for variable in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        os.environ[variable] = f"{os.environ.get(variable, '')} {options}".strip()
    # The small JVM with which bin/spark-class builds each Spark command line.
    os.environ["SPARK_LAUNCHER_OPTS"] = f"{os.environ.get('SPARK_LAUNCHER_OPTS', '')} {LEAN_JIT}".strip()


def _emulator_fixture(kind: str, env_var: str) -> Iterator[str]:
    given = os.environ.get(env_var)
    if given:
        emulators.wait_until_healthy(given, timeout=10, kind=kind)
        yield given.rstrip("/")
        return
    with emulators.running(kind) as emulator:
        yield emulator.endpoint


@pytest.fixture(scope="session")
def kinesis_local() -> Iterator[str]:
    """Endpoint URL (``http://127.0.0.1:PORT``) of a kinesis-local emulator for this session."""
    yield from _emulator_fixture("kinesis-local", "KINESIS_LOCAL_ENDPOINT")


@pytest.fixture(scope="session")
def ministack() -> Iterator[str]:
    """Endpoint URL of a ministack emulator (Kinesis, DynamoDB, S3, ...) for this session."""
    yield from _emulator_fixture("ministack", "MINISTACK_ENDPOINT")


@pytest.fixture(scope="session")
def moto() -> Iterator[str]:
    """Endpoint URL of moto's server (the Glue Schema Registry API) for this session."""
    yield from _emulator_fixture("moto", "MOTO_ENDPOINT")


@pytest.fixture(scope="session")
def kinesis_client_factory() -> Callable[..., Any]:
    """``make(endpoint, **kw)`` -> boto3 Kinesis client with the dummy test credentials."""
    return emulators.kinesis_client


@pytest.fixture(scope="session")
def aws_client_factory() -> Callable[..., Any]:
    """``make(service, endpoint)`` -> boto3 client of any service (e.g. dynamodb on ministack)."""
    import boto3

    def make(service: str, endpoint: str) -> Any:
        return boto3.client(
            service,
            endpoint_url=endpoint,
            region_name=emulators.REGION,
            aws_access_key_id=emulators.ACCESS_KEY,
            aws_secret_access_key=emulators.SECRET_KEY,
        )

    return make


@pytest.fixture
def stream_name(request: pytest.FixtureRequest) -> str:
    """A stream name unique to this test (derived from the test's name)."""
    return unique_stream_name(request.node.name)


@pytest.fixture
def stream_cleanup() -> Iterator[Callable[[Any, str], str]]:
    """``register(client, name)``: delete that stream when the test ends (returns the name)."""
    created: list[tuple[Any, str]] = []

    def register(client: Any, name: str) -> str:
        created.append((client, name))
        return name

    yield register
    for client, name in reversed(created):
        try:
            delete_stream(client, name)
        except Exception as error:
            print(f"warning: could not delete stream {name}: {error}", file=sys.stderr)


@pytest.fixture
def kinesis(kinesis_local: str) -> Any:
    """A boto3 Kinesis client of the session's kinesis-local (a test module may override it with another emulator)."""
    return emulators.kinesis_client(kinesis_local)


class KeyedRounds:
    """``put_round(n)`` writes ``n`` records for each of 8 partition keys, numbered on across rounds (``k3-11``).

    ``sent`` lists every record's data in the order written, so a test can check that each record was read once
    and that each key's records kept their order.
    """

    keys = tuple(f"k{i}" for i in range(8))

    def __init__(self, kinesis: Any, stream: str) -> None:
        self.kinesis = kinesis
        self.stream = stream
        self.sent: list[str] = []

    def __call__(self, n: int) -> None:
        batch = []
        for _ in range(n):
            for key in self.keys:
                batch.append((key, f"{key}-{len(self.sent)}"))
                self.sent.append(batch[-1][1])
        put_plain(self.kinesis, self.stream, batch)


@pytest.fixture
def put_round(kinesis: Any, stream_name: str) -> KeyedRounds:
    """Rounds of keyed records written to the test's stream (``stream_name``) on ``kinesis``."""
    return KeyedRounds(kinesis, stream_name)


@pytest.fixture
def counting_proxy() -> Iterator[Callable[[str], CountingProxy]]:
    """``proxy = counting_proxy(endpoint)``: a counting proxy in front of ``endpoint``.

    Give ``proxy.url`` to the client under test; read ``proxy.counts()``, ``proxy.reset()``.
    All proxies made by the test close when it ends.
    """
    proxies: list[CountingProxy] = []

    def make(upstream: str, **kwargs: Any) -> CountingProxy:
        proxy = CountingProxy(upstream, **kwargs)
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.close()


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local SparkSession with the connector jar (through ``spark_kinesis.configure_spark``).

    The jar must have been built: ``scripts/build.sh``. Credentials are the dummy test ones, put in
    the environment before the JVM starts. ``-Daws.cborEnabled=false`` is *not* set here: only
    ministack needs CBOR off (see docs/emulators.md), so tests against ministack arrange it.
    """
    for key, value in TEST_ENV.items():
        os.environ[key] = value
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    import spark_kinesis
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("spark-kinesis-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.streaming.minBatchesToRetain", "5")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.speculation", "false")
    )
    session = spark_kinesis.configure_spark(builder).getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def jvm_cbor_disabled(spark: Any) -> Iterator[None]:
    """Run this test with the AWS SDK's CBOR protocol off in the Spark JVM (needed for ministack).

    Sets the system property ``aws.cborEnabled=false`` for the test and restores it afterwards.
    The SDK reads the property when a client is *built* (checked: a client built before the
    change keeps using CBOR), so this only helps if the connector builds its clients after the
    fixture runs, i.e. does not reuse a client cached by an earlier test with the same settings.
    Outside Spark, ``-Daws.cborEnabled=false`` or the environment variable ``CBOR_ENABLED=false``
    do the same for a whole JVM.
    """
    system = spark._jvm.java.lang.System
    previous = system.getProperty("aws.cborEnabled")
    system.setProperty("aws.cborEnabled", "false")
    try:
        yield
    finally:
        if previous is None:
            system.clearProperty("aws.cborEnabled")
        else:
            system.setProperty("aws.cborEnabled", previous)
