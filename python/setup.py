"""Fills in the parts of the metadata that come from pom.xml (through the generated _version.py)."""

from pathlib import Path

from setuptools import setup

_VERSION_FILE = Path(__file__).parent / "src" / "spark_kinesis" / "_version.py"
if not _VERSION_FILE.exists():
    raise SystemExit(
        f"{_VERSION_FILE} is missing: it is generated from pom.xml. "
        "Run scripts/setup.sh or scripts/build.sh from the repository root."
    )
_facts: dict = {}
exec(_VERSION_FILE.read_text(encoding="utf-8"), _facts)
_major, _minor = (int(x) for x in _facts["SPARK_VERSION"].split(".")[:2])

setup(
    version=_facts["__version__"],
    extras_require={
        # The jar is built for one Spark minor version; pyspark must be of that minor version.
        "spark": [f"pyspark>={_major}.{_minor}.0,<{_major}.{_minor + 1}"],
    },
)
