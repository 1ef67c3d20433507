"""``spark-submit --packages``: Spark's own resolver (Ivy) fetches the line's artifact from a Maven repository.

Users of EMR, Glue and Dataproc add connectors by Maven coordinates. Here Spark resolves
``io.sparkkinesis:<line artifact>:<version>`` from the staging repository that ``mvn deploy`` writes (the Maven
repository layout that ``scripts/release.sh`` bundles), given as ``--repositories file://...``, and a batch read
then runs on kinesis-local through the jars it fetched (the job never calls ``configure_spark``). Ivy must get
exactly two jars, the line's and ``spark-kinesis-deps``, both from that repository, and nothing else: no Spark,
Scala or AWS SDK artifact.

Spark's resolver also looks in ``~/.m2/repository`` (where ``mvn install`` put the same artifacts) before the
repositories given to it, so the submitting JVM gets an empty home of its own (``-Duser.home``), and the Ivy
directory (``spark.jars.ivy``) is a fresh temporary one: nothing can come from a cache, and ``~/.ivy2`` is left
alone. Maven Central stays in the resolver's chain, as for a user: a dependency our POMs wrongly passed on would
be downloaded from there and show up in the jar set.

In the ``smoke`` set: ``scripts/test-lines.sh`` runs it on every line with that line's pyspark
(``SPARK_KINESIS_EXPECTED_LINE`` names the line), and the main run covers the default line.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_ENV
from harness import artifacts
from harness.kinesis import create_stream, put_plain

pytestmark = [pytest.mark.smoke, pytest.mark.emulator]

JOB = Path(__file__).resolve().parent / "jobs" / "packages_job.py"


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()


def _submit(coordinates: str, repository: Path, workdir: Path, *job_args: str) -> tuple[dict[str, Any], str]:
    home = workdir / "home"
    home.mkdir()
    env = {
        **os.environ,
        **TEST_ENV,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        # The submitting JVM resolves the packages: its ~/.m2 (a resolver Spark always adds) is an empty folder.
        "SPARK_SUBMIT_OPTS": f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -Duser.home={home}".strip(),
    }
    command = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        "local[1]",
        "--packages",
        coordinates,
        "--repositories",
        repository.as_uri(),
        "--conf",
        f"spark.jars.ivy={workdir / 'ivy'}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.driver.host=127.0.0.1",
        str(JOB),
        *job_args,
    ]
    # The timeout only stops a job that hangs (resolution included), on a machine however busy.
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=workdir, timeout=900, check=False)
    (workdir / "spark-submit.log").write_text(done.stderr)
    if done.returncode != 0:
        # The cause is usually far above the tail (Spark logs its shutdown after it): quote the Python traceback
        # and every exception line first.
        lines = done.stderr.splitlines()
        traceback = lines[next((i for i, x in enumerate(lines) if x.startswith("Traceback")), len(lines)) :]
        causes = [x for x in lines if ("Exception" in x or "Error" in x) and not x.lstrip().startswith("at ")]
        raise AssertionError(
            f"spark-submit --packages {coordinates} failed ({done.returncode})\n"
            + "\n".join(dict.fromkeys(traceback[:40] + causes[:40]))[:8000]
            + f"\n--- stdout tail\n{done.stdout[-2000:]}"
        )
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert results, f"the job printed no RESULT line:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(results[-1][len("RESULT ") :]), done.stderr


def test_spark_resolves_exactly_the_line_jar_and_the_deps_jar_from_a_maven_repository_and_reads(
    kinesis_local: str, kinesis_client_factory: Any, stream_name: str, stream_cleanup: Any, tmp_path: Path
) -> None:
    line = artifacts.expected_line()
    artifact = artifacts.line_artifact(line)
    ours = {artifact, artifacts.DEPS}
    repository = artifacts.STAGING_REPOSITORY
    staged = {name: artifacts.staged(name, ".jar") for name in ours}
    for name in ours:
        # What Ivy reads: the deployed POM (with its checksums, as a remote repository serves them).
        assert artifacts.staged(name, ".pom.sha1").read_text().split()[0] == _sha1(artifacts.staged(name, ".pom"))

    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=1))
    put_plain(client, stream_name, [f"packages-{i}" for i in range(5)])

    coordinates = f"{artifacts.GROUP}:{artifact}:{artifacts.VERSION}"
    started = time.monotonic()
    result, log = _submit(coordinates, repository, tmp_path, "--endpoint", kinesis_local, "--stream", stream_name)
    resolution = re.search(r":: resolution report :: resolve (\d+)ms :: artifacts dl (\d+)ms", log)
    print(
        f"spark-submit --packages {coordinates}: {time.monotonic() - started:.1f} s in all; Ivy: "
        + (f"resolve {resolution[1]} ms, download {resolution[2]} ms" if resolution else "no resolution report")
    )

    # Ivy's report: each module it found, and in which resolver (repo-1 is the first --repositories entry).
    found = dict(re.findall(r"^\s*found (\S+) in (\S+)$", log, re.MULTILINE))
    assert found == {f"{artifacts.GROUP}#{name};{artifacts.VERSION}": "repo-1" for name in ours}, log[-4000:]

    # The jars Spark copied out of the Ivy cache and put on the classpath: exactly ours, byte for byte the staged ones.
    fetched = {p.name: p for p in (tmp_path / "ivy" / "jars").iterdir()}
    expected = {f"{artifacts.GROUP}_{name}-{artifacts.VERSION}.jar": name for name in ours}
    assert set(fetched) == set(expected), sorted(fetched)
    for file_name, name in expected.items():
        assert _sha1(fetched[file_name]) == _sha1(staged[name]), f"{file_name} differs from {staged[name]}"
    assert sorted(Path(j.removeprefix("file:")).name for j in result["spark.jars"].split(",")) == sorted(expected)
    # Nothing else entered the Ivy cache either (no POM or jar of any other group).
    cached = {p.name for p in (tmp_path / "ivy" / "cache").iterdir() if p.is_dir()}
    assert cached == {artifacts.GROUP}, sorted(cached)

    # The builders' format resolves to our provider, loaded from the line jar Ivy fetched; the SDK from the deps jar.
    assert result["provider"].startswith("io.sparkkinesis."), result
    assert Path(result["provider_jar"]).name == f"{artifacts.GROUP}_{artifact}-{artifacts.VERSION}.jar", result
    assert Path(result["shaded_sdk_jar"]).name == f"{artifacts.GROUP}_{artifacts.DEPS}-{artifacts.VERSION}.jar"
    assert result["records"] == sorted(f"packages-{i}" for i in range(5))
