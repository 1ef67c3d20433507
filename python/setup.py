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
_oldest = min(tuple(int(x) for x in spark.split(".")) for spark, _ in _facts["SPARK_LINES"])
_newest_major = max(int(spark.split(".")[0]) for spark, _ in _facts["SPARK_LINES"])

setup(
    version=_facts["__version__"],
    project_urls={
        "Homepage": _facts["PROJECT_URL"],
        "Source": _facts["PROJECT_URL"],
        "Changelog": f"{_facts['PROJECT_URL']}/blob/main/CHANGELOG.md",
    },
    extras_require={
        # A jar per Spark line from the oldest built line on; newer minors of the newest major run
        # the newest build (with a warning).
        "spark": [f"pyspark>={_oldest[0]}.{_oldest[1]}.0,<{_newest_major + 1}"],
    },
)
