"""NOTICE names every third-party project whose classes the shaded jar bundles.

Runs after the build (scripts/build.sh). Without a jar it fails, on purpose: a release must not
skip this check.
"""

from __future__ import annotations

import io
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.all_lines  # every line's artifacts

ROOT = Path(__file__).resolve().parent.parent
NOTICE = ROOT / "NOTICE"
SHADED_ROOT = "io/sparkkinesis/shaded/"
OWN_ROOT = "io/sparkkinesis/"

# Package path prefix (after the relocation prefix) -> the name NOTICE must contain.
# Most specific prefixes first. A bundled package matching none of these fails the test too, so
# adding a dependency forces a decision here and in NOTICE.
KNOWN_PROJECTS: list[tuple[str, str]] = [
    ("software/amazon/awssdk/thirdparty/jackson/core/io/doubleparser/", "FastDoubleParser"),
    ("software/amazon/awssdk/thirdparty/jackson/core/io/schubfach/", "Schubfach"),
    ("software/amazon/awssdk/thirdparty/jackson/", "Jackson"),
    ("software/amazon/awssdk/", "AWS SDK for Java"),
    ("software/amazon/kinesis/producer/", "Amazon Kinesis Producer Library"),
    ("software/amazon/eventstream/", "Amazon Event Stream"),
    ("io/netty/", "Netty"),
    ("org/reactivestreams/", "Reactive Streams"),
    ("org/apache/http/", "Apache HttpComponents"),  # 4.x
    ("org/apache/hc/", "Apache HttpComponents"),  # 5.x
    ("org/apache/commons/codec/", "Apache Commons Codec"),
    ("org/apache/commons/logging/", "Apache Commons Logging"),
    ("com/google/protobuf/", "Protocol Buffers"),
    ("com/amazonaws/services/schemaregistry/", "AWS Glue Schema Registry"),
    ("com/google/common/", "Guava"),
    ("com/google/thirdparty/", "Guava"),
    ("org/apache/commons/lang3/", "Apache Commons Lang"),
    ("org/apache/commons/io/", "Apache Commons IO"),
    ("org/apache/avro/", "Apache Avro"),
]


def _original_path(entry: str) -> str | None:
    """The class's package path before relocation; None for our own classes and non-classes."""
    if not entry.endswith(".class"):
        return None
    if entry.startswith("META-INF/versions/"):  # multi-release jar: META-INF/versions/<n>/<path>
        entry = entry.split("/", 3)[3] if entry.count("/") >= 3 else entry
    if entry.startswith(SHADED_ROOT):
        return entry[len(SHADED_ROOT) :]
    if entry.startswith(OWN_ROOT):
        return None
    return entry  # bundled but not relocated: still third-party code


def bundled_projects(jar: zipfile.ZipFile) -> tuple[Counter[str], Counter[str]]:
    """Count bundled classes per known project; and per unknown top-level package."""
    known: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    for entry in jar.namelist():
        path = _original_path(entry)
        if path is None:
            continue
        for prefix, project in KNOWN_PROJECTS:
            if path.startswith(prefix):
                known[project] += 1
                break
        else:
            unknown["/".join(path.split("/")[:3])] += 1
    return known, unknown


def missing_from_notice(known: Counter[str], notice_text: str) -> list[str]:
    text = notice_text.lower()
    return sorted(project for project in known if project.lower() not in text)


def find_jars() -> list[Path]:
    """The jars a user runs: every line's jar and the shared third-party one (the wheel's, else the build's)."""
    try:
        import spark_kinesis

        folder = Path(spark_kinesis.__file__).parent / "jars"
        jars = sorted(folder.glob("*.jar"))
        if jars:
            return jars
    except ImportError:
        pass
    sys.path.insert(0, str(ROOT / "scripts"))
    import pominfo

    built = [pominfo.deps_jar()] + [pominfo.line_jar(x["name"]) for x in pominfo.lines()]
    return [j for j in built if j.is_file()]


def test_notice_names_every_bundled_project():
    jar_files = find_jars()
    if not any(j.name.startswith("spark-kinesis-deps-") for j in jar_files):
        pytest.fail(
            f"No spark-kinesis-deps jar found (among {[j.name for j in jar_files]}). "
            "Build it first with scripts/build.sh; this test checks the built jars against NOTICE."
        )
    known: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    for jar_file in jar_files:
        with zipfile.ZipFile(jar_file) as jar:
            k, u = bundled_projects(jar)
        known.update(k)
        unknown.update(u)
        if not jar_file.name.startswith("spark-kinesis-deps-"):
            assert not k and not u, f"{jar_file.name} is a line jar and must bundle no third-party class: {k + u}"
    assert known, "the deps jar bundles no third-party classes at all; is it the shaded jar?"
    assert not unknown, (
        f"the jars bundle classes of packages that tests/test_notice.py does not know: "
        f"{dict(unknown)}. Find their project and license, add them to NOTICE, and map the package "
        "in KNOWN_PROJECTS."
    )
    missing = missing_from_notice(known, NOTICE.read_text(encoding="utf-8"))
    assert not missing, (
        f"the jars bundle classes of {missing} (class counts: "
        f"{ {p: known[p] for p in missing} }), but NOTICE does not name them. Add each with its "
        "license and required attribution to NOTICE."
    )


# --- the checker itself, on made-up jars (no build needed) ----------------------------------------


def _jar(*entries: str) -> zipfile.ZipFile:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as out:
        for name in entries:
            out.writestr(name, b"")
    buffer.seek(0)
    return zipfile.ZipFile(buffer)


def test_checker_groups_relocated_classes():
    jar = _jar(
        "io/sparkkinesis/kinesis/KinesisSourceProvider.class",
        "io/sparkkinesis/shaded/software/amazon/awssdk/core/SdkBytes.class",
        "io/sparkkinesis/shaded/software/amazon/awssdk/thirdparty/jackson/core/JsonParser.class",
        "io/sparkkinesis/shaded/io/netty/buffer/ByteBuf.class",
        "io/sparkkinesis/shaded/io/netty/util/Version.class",
        "META-INF/versions/11/io/sparkkinesis/shaded/org/apache/commons/codec/X.class",
        "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister",
        "com/example/unrelocated/Thing.class",
        "io/sparkkinesis/shaded/org/example/Odd.class",
    )
    known, unknown = bundled_projects(jar)
    assert known == {
        "AWS SDK for Java": 1,
        "Jackson": 1,
        "Netty": 2,
        "Apache Commons Codec": 1,
    }
    assert unknown == {"com/example/unrelocated": 1, "org/example/Odd.class": 1}


def test_checker_reports_projects_missing_from_notice():
    known = Counter({"Netty": 3, "Protocol Buffers": 1})
    assert missing_from_notice(known, "... Netty (io.netty:*) ...") == ["Protocol Buffers"]


def test_notice_names_the_expected_projects():
    text = NOTICE.read_text(encoding="utf-8")
    for name in (
        "AWS SDK for Java",
        "Netty",
        "Reactive Streams",
        "MIT-0",
        "Apache HttpComponents",
        "Apache Commons Codec",
        "Apache Commons Logging",
    ):
        assert name in text
