"""The release bundle: ``scripts/release.sh`` writes what a publication uploads, complete and consistent.

The test runs ``scripts/release.sh --no-build --out <tmp>``: it assembles the bundle from what the build already
made (the staging repository of ``mvn deploy`` and the wheel of ``scripts/build.sh``, as ``scripts/test.sh`` leaves
them) and builds the sdist. Then it checks, for every published artifact (the deps jar and every line's jar; the
root pom only builds and is not published): the POM metadata Maven Central requires, the jar with its sources and
API-doc jars, and checksums that match; for the Python files: ``twine check``, the pom's version, and the same jars
in the wheel and the sdist. And that the version is written down once.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tarfile
import time
import xml.etree.ElementTree as ET
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from harness import artifacts
from harness.artifacts import NS, VERSION, pominfo

pytestmark = pytest.mark.all_lines  # every line's artifacts

ROOT = artifacts.ROOT
PUBLISHED = pominfo.published_artifacts()
HOME = pominfo.get("sparkkinesis.home")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("release") / "bundle"
    started = time.monotonic()
    done = subprocess.run(
        [str(ROOT / "scripts" / "release.sh"), "--no-build", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    print(f"scripts/release.sh --no-build: {time.monotonic() - started:.1f} s")
    assert done.returncode == 0, f"scripts/release.sh failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return out


def _maven(bundle: Path, artifact: str, suffix: str) -> Path:
    return artifacts.artifact_path(bundle / "maven", artifact, suffix)


def _wheel(bundle: Path) -> Path:
    return bundle / "python" / f"spark_kinesis-{VERSION}-py3-none-any.whl"


def _sdist(bundle: Path) -> Path:
    # setuptools before 69.3 writes spark-kinesis-<version>.tar.gz; PEP 625's name is spark_kinesis-<version>.
    (found,) = (bundle / "python").glob(f"spark[-_]kinesis-{VERSION}.tar.gz")
    return found


def test_the_bundle_holds_exactly_the_published_artifacts(bundle: Path) -> None:
    group = bundle.joinpath("maven", *artifacts.GROUP.split("."))
    assert sorted(p.name for p in group.iterdir()) == sorted(PUBLISHED)
    assert not list((bundle / "maven").rglob("maven-metadata*")), "the repository's index is not part of a bundle"
    assert sorted((bundle / "python").iterdir()) == sorted([_wheel(bundle), _sdist(bundle)])


@pytest.mark.parametrize("artifact", PUBLISHED)
def test_every_published_pom_has_the_metadata_maven_central_requires(bundle: Path, artifact: str) -> None:
    text = _maven(bundle, artifact, ".pom").read_text()
    assert "${" not in text, "a published POM names no unresolved property"
    pom = ET.fromstring(text)

    def field(path: str) -> str:
        return (pom.findtext(path, default="", namespaces=NS) or "").strip()

    assert field("m:groupId") == artifacts.GROUP
    assert field("m:artifactId") == artifact
    assert field("m:version") == VERSION
    assert field("m:parent/m:artifactId") == "", "a published POM stands alone: it names no parent to download"
    assert field("m:name") and field("m:description"), artifact
    assert field("m:url") == HOME
    licenses = pom.findall("m:licenses/m:license", NS)
    assert [(field_of(x, "m:name"), field_of(x, "m:url")) for x in licenses] == [
        ("Apache-2.0", "https://www.apache.org/licenses/LICENSE-2.0.txt")
    ]
    developers = pom.findall("m:developers/m:developer", NS)
    assert developers and all(field_of(d, "m:name") for d in developers)
    assert field("m:scm/m:url") == HOME
    assert field("m:scm/m:connection") == field("m:scm/m:developerConnection") == f"scm:git:{HOME}.git"


def field_of(node: ET.Element, path: str) -> str:
    return (node.findtext(path, default="", namespaces=NS) or "").strip()


@pytest.mark.parametrize("artifact", PUBLISHED)
def test_every_artifact_has_its_jar_sources_and_api_docs_with_matching_checksums(bundle: Path, artifact: str) -> None:
    for suffix in [".pom", ".jar", "-sources.jar", "-javadoc.jar"]:
        path = _maven(bundle, artifact, suffix)
        assert path.is_file() and path.stat().st_size > 0, path
        data = path.read_bytes()
        assert Path(f"{path}.md5").read_text().strip() == hashlib.md5(data).hexdigest(), f"{path}.md5"
        assert Path(f"{path}.sha1").read_text().strip() == hashlib.sha1(data).hexdigest(), f"{path}.sha1"
    with zipfile.ZipFile(_maven(bundle, artifact, "-sources.jar")) as sources:
        names = sources.namelist()
    with zipfile.ZipFile(_maven(bundle, artifact, "-javadoc.jar")) as docs:
        doc_names = docs.namelist()
    if artifact == artifacts.DEPS:
        # No code of its own: both say so and list the bundled artifacts (checked in test_maven_artifacts.py).
        assert "README.txt" in names and "README.txt" in doc_names
    else:
        assert "io/sparkkinesis/KinesisSourceProvider.scala" in names, names[:20]
        assert "index.html" in doc_names and "io/sparkkinesis/KinesisSourceProvider.html" in doc_names


def _wheel_metadata(wheel: Path) -> dict[str, list[str]]:
    with zipfile.ZipFile(wheel) as whl:
        name = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        return _headers(whl.read(name).decode())


def _sdist_metadata(sdist: Path) -> dict[str, list[str]]:
    with tarfile.open(sdist) as tar:
        member = tar.getmember(f"{_sdist_root(sdist)}/PKG-INFO")
        return _headers(tar.extractfile(member).read().decode())  # type: ignore[union-attr]


def _sdist_root(sdist: Path) -> str:
    return sdist.name.removesuffix(".tar.gz")


def _headers(text: str) -> dict[str, list[str]]:
    message = Parser().parsestr(text)
    found: dict[str, list[str]] = {}
    for key, value in message.items():
        found.setdefault(key, []).append(value)
    return found


def test_the_wheel_and_the_sdist_pass_twine_check(bundle: Path) -> None:
    files = [str(_wheel(bundle)), str(_sdist(bundle))]
    done = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "twine"), "check", "--strict", *files],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_python_files_carry_the_pom_version_and_the_project_urls(bundle: Path, kind: str) -> None:
    metadata = _wheel_metadata(_wheel(bundle)) if kind == "wheel" else _sdist_metadata(_sdist(bundle))
    assert metadata["Name"] == ["spark-kinesis"]
    assert metadata["Version"] == [VERSION]
    assert f"Homepage, {HOME}" in metadata.get("Project-URL", []), metadata.get("Project-URL")


def test_the_sdist_carries_the_wheels_jars_and_no_other_binary(bundle: Path) -> None:
    with zipfile.ZipFile(_wheel(bundle)) as whl:
        in_wheel = {Path(n).name: hashlib.sha1(whl.read(n)).hexdigest() for n in whl.namelist() if n.endswith(".jar")}
    with tarfile.open(_sdist(bundle)) as tar:
        members = [m for m in tar if m.isfile()]
        in_sdist = {
            Path(m.name).name: hashlib.sha1(tar.extractfile(m).read()).hexdigest()  # type: ignore[union-attr]
            for m in members
            if m.name.endswith(".jar")
        }
        suffixes = {Path(m.name).suffix for m in members}
    expected = {f"{name}-{VERSION}.jar" for name in PUBLISHED}
    assert set(in_wheel) == expected
    assert in_sdist == in_wheel
    assert suffixes <= {".py", ".typed", ".jar", ".md", ".toml", ".cfg", ".txt", "", ".in"}, suffixes


def test_the_version_is_written_once() -> None:
    # The root pom's <version>; the modules repeat it in <parent> (Maven requires it; pominfo set-version
    # changes them together), and everything else reads it from there.
    assert set(pominfo.parent_versions().values()) == {VERSION}, pominfo.parent_versions()
    generated = (ROOT / "python" / "src" / "spark_kinesis" / "_version.py").read_text()
    assert f'__version__ = "{VERSION}"' in generated
    changelog = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## \[([^\]]+)\]", changelog, re.MULTILINE)
    assert headings[:2] == ["Unreleased", VERSION], headings
