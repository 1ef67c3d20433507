"""The project's Maven artifacts where the build leaves them, and the Spark line a test run expects.

Two Maven repository layouts hold them:

- the local repository, ``~/.m2/repository`` (``mvn install``);
- the staging repository, ``target/staging-repository`` (``mvn deploy``, which the root pom points at that folder,
  never at a remote repository). ``scripts/release.sh`` copies it into the release bundle, and the ``--packages``
  test hands it to Spark's resolver as a ``file://`` repository.

The names and the version come from the pom files through ``scripts/pominfo.py``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import pominfo  # noqa: E402

NS = {"m": "http://maven.apache.org/POM/4.0.0"}
GROUP = pominfo.get("groupId")
VERSION = pominfo.get("version")
DEPS = pominfo.deps_artifact()
LINES = [line["artifactId"] for line in pominfo.lines()]
LOCAL_REPOSITORY = Path.home() / ".m2" / "repository"
STAGING_REPOSITORY = pominfo.staging_repository()


def artifact_path(repository: Path, artifact: str, suffix: str) -> Path:
    """``<repository>/io/sparkkinesis/<artifact>/<version>/<artifact>-<version><suffix>`` (suffix: ``.jar``, ...)."""
    return repository.joinpath(*GROUP.split("."), artifact, VERSION, f"{artifact}-{VERSION}{suffix}")


def installed(artifact: str, suffix: str) -> Path:
    """A file ``mvn install`` put in the local repository; the test fails when it is missing."""
    path = artifact_path(LOCAL_REPOSITORY, artifact, suffix)
    if not path.is_file():
        pytest.fail(f"{path} is missing: run mvn install (scripts/test.sh does)")
    return path


def staged(artifact: str, suffix: str) -> Path:
    """A file ``mvn deploy`` put in the staging repository; the test fails when it is missing."""
    path = artifact_path(STAGING_REPOSITORY, artifact, suffix)
    if not path.is_file():
        pytest.fail(
            f"{path} is missing: run `mvn deploy` (scripts/test.sh and scripts/release.sh do), which writes "
            f"every artifact into {STAGING_REPOSITORY}"
        )
    return path


def expected_line() -> str:
    """The Spark line whose jar this run must get: ``spark3.5_2.12``, ...

    ``scripts/test-lines.sh`` names it in ``SPARK_KINESIS_EXPECTED_LINE`` (a pyspark newer than every build
    expects the newest line); without that variable it is the default build's, which the main venv has.
    """
    given = os.environ.get("SPARK_KINESIS_EXPECTED_LINE")
    if given:
        return given
    import spark_kinesis

    major, minor, *_ = spark_kinesis.SPARK_VERSION.split(".")
    return f"spark{major}.{minor}_{spark_kinesis.SCALA_BINARY_VERSION}"


def line_of(jar: str) -> str | None:
    """``spark3.5_2.12`` for ``.../spark-kinesis-spark3.5_2.12-0.1.0.jar``; None for the deps jar."""
    name = Path(jar).name
    prefix = "spark-kinesis-spark"
    if not name.startswith(prefix):
        return None
    return "spark" + name[len(prefix) :].rsplit("-", 1)[0]


def line_artifact(line: str) -> str:
    """The artifactId of a line named as under ``lines/`` (``spark3.5_2.12``)."""
    for entry in pominfo.lines():
        if entry["name"] == line:
            return entry["artifactId"]
    raise AssertionError(f"no Spark line {line!r}; the lines are {[x['name'] for x in pominfo.lines()]}")
