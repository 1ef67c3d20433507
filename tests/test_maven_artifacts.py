"""The Maven artifacts of every Spark line, as a Scala user gets them from a repository.

Needs ``mvn install`` (``scripts/test.sh`` runs it first): the artifacts are read from the local
repository, and a throwaway consumer project resolves each line the way a user's build would.
"""

from __future__ import annotations

import re
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from harness.artifacts import LINES, NS, VERSION
from harness.artifacts import installed as _installed

pytestmark = pytest.mark.all_lines  # every line's artifacts

_CONSUMER_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>consumer-of-{artifact}</artifactId>
  <version>1</version>
  <dependencies>
    <dependency>
      <groupId>io.sparkkinesis</groupId>
      <artifactId>{artifact}</artifactId>
      <version>{version}</version>
    </dependency>
  </dependencies>
</project>
"""

# One build of all the consumers (a Maven JVM takes seconds of CPU to start): each is still a project of its own,
# resolved as a user's build would resolve it.
_CONSUMERS_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>consumers</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <modules>{modules}</modules>
</project>
"""


@pytest.fixture(scope="module")
def classpaths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """The jar names of the class path that Maven resolves for a project depending on each line's artifact."""
    root = tmp_path_factory.mktemp("consumers")
    for artifact in LINES:
        (root / artifact).mkdir()
        (root / artifact / "pom.xml").write_text(_CONSUMER_POM.format(artifact=artifact, version=VERSION))
    modules = "".join(f"<module>{artifact}</module>" for artifact in LINES)
    (root / "pom.xml").write_text(_CONSUMERS_POM.format(modules=modules))
    subprocess.run(
        [
            "mvn",
            "-B",
            "-q",
            "-o",
            "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath",
            "-Dmdep.outputFile=classpath.txt",
        ],
        cwd=root,
        check=True,
        timeout=300,
    )
    return {
        artifact: sorted(Path(p).name for p in (root / artifact / "classpath.txt").read_text().strip().split(":") if p)
        for artifact in LINES
    }


@pytest.mark.parametrize("artifact", LINES)
def test_a_user_of_a_line_downloads_only_the_line_jar_and_the_shared_deps_jar(
    artifact: str, classpaths: dict[str, list[str]]
) -> None:
    assert classpaths[artifact] == sorted([f"{artifact}-{VERSION}.jar", f"spark-kinesis-deps-{VERSION}.jar"])


@pytest.mark.parametrize("artifact", LINES)
def test_published_pom_is_flat_and_names_no_test_dependency(artifact: str) -> None:
    pom = ET.parse(_installed(artifact, ".pom")).getroot()
    assert pom.find("m:parent", NS) is None, "the published POM must not need the build's parent POMs"
    scopes = {
        d.findtext("m:artifactId", namespaces=NS): d.findtext("m:scope", default="compile", namespaces=NS)
        for d in pom.iterfind("m:dependencies/m:dependency", NS)
    }
    passed_on = {a for a, scope in scopes.items() if scope in ("compile", "runtime")}
    assert passed_on == {"spark-kinesis-deps"}, scopes
    assert "test" not in scopes.values(), scopes
    assert _installed(artifact, "-sources.jar").stat().st_size > 10_000
    with zipfile.ZipFile(_installed(artifact, "-javadoc.jar")) as docs:
        assert "io/sparkkinesis/KinesisSourceProvider.html" in docs.namelist()


def test_the_deps_pom_passes_nothing_on() -> None:
    pom = ET.parse(_installed("spark-kinesis-deps", ".pom")).getroot()
    scopes = [d.findtext("m:scope", default="compile", namespaces=NS) for d in pom.iterfind(".//m:dependency", NS)]
    assert [s for s in scopes if s in ("compile", "runtime")] == []


@pytest.mark.parametrize("classifier", ["sources", "javadoc"])
def test_the_deps_jar_has_its_sources_and_api_doc_companions_naming_what_it_bundles(classifier: str) -> None:
    # It has no code of its own: both companions say so and list the bundled artifacts, whose own sources and
    # docs are on Maven Central.
    with zipfile.ZipFile(_installed("spark-kinesis-deps", f"-{classifier}.jar")) as companion:
        assert "README.txt" in companion.namelist()
        bundled = companion.read("bundled-artifacts.txt").decode()
    assert "software.amazon.awssdk:kinesis:jar:" in bundled, bundled[:2000]
    assert "software.amazon.kinesis:amazon-kinesis-producer:jar:" in bundled, bundled[:2000]
    assert "org.slf4j" not in bundled


@pytest.mark.parametrize("artifact", LINES)
def test_a_line_jar_names_third_party_classes_only_by_their_relocated_names(artifact: str) -> None:
    # A class name in the constant pool starts right after its length bytes, or after "L" in a
    # descriptor; a relocated one starts with io/sparkkinesis/shaded/.
    packages = (b"software/amazon/", b"io/netty/", b"com/google/common/", b"org/apache/http/")
    offenders = []
    with zipfile.ZipFile(_installed(artifact, ".jar")) as jar:
        names = jar.namelist()
        for name in names:
            if not name.endswith(".class"):
                continue
            for token in re.findall(rb"[A-Za-z0-9_$/]+", jar.read(name)):
                if any(token.find(p) in (0, 1) for p in packages):
                    offenders.append(f"{name}: {token.decode()}")
        assert all(n.startswith(("io/sparkkinesis/", "META-INF/")) for n in names if not n.endswith("/")), [
            n for n in names if not n.startswith(("io/sparkkinesis/", "META-INF/"))
        ][:10]
        assert not [n for n in names if n.startswith("io/sparkkinesis/shaded/")]
    assert offenders == []
