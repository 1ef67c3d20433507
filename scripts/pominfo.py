#!/usr/bin/env python3
"""Read facts from the pom files, the single place where versions are written down.

Usage::

    scripts/pominfo.py get spark.version        # a <properties> entry of the root pom
    scripts/pominfo.py get version              # the project's own <version>
    scripts/pominfo.py lines                    # one Spark line a row: dir artifactId spark scala scala-binary
    scripts/pominfo.py default-line             # the dir of the default (newest) line, e.g. lines/spark4.2_2.13
    scripts/pominfo.py default-spark-version    # the Spark version of the default line, e.g. 4.2.0
    scripts/pominfo.py jar                      # the default line's jar (lines/<line>/target/...)
    scripts/pominfo.py line-jar spark3.5_2.12   # a line's jar
    scripts/pominfo.py deps-jar                 # the shared third-party jar (deps/target/...)
    scripts/pominfo.py artifacts                # the published artifactIds: the deps jar, every line's jar
    scripts/pominfo.py staging-repo             # where `mvn deploy` writes them (a Maven repository layout)
    scripts/pominfo.py write-version FILE       # generate the Python package's _version.py
    scripts/pominfo.py set-version 0.2.0        # change the version: the root pom's and each module's <parent>

Only the standard library is used, so any Python 3 can run this before a venv exists.
"""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POM = ROOT / "pom.xml"
_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def read_pom(pom: Path = POM) -> dict[str, str]:
    """Return the project coordinates and every <properties> entry of ``pom``."""
    root = ET.parse(pom).getroot()
    facts: dict[str, str] = {}
    for key in ("groupId", "artifactId", "version"):
        node = root.find(f"m:{key}", _NS)
        if node is not None and node.text:
            facts[key] = node.text.strip()
    props = root.find("m:properties", _NS)
    if props is not None:
        for child in props:
            name = child.tag.split("}", 1)[-1]
            facts[name] = (child.text or "").strip()
    return facts


def get(key: str, pom: Path = POM) -> str:
    facts = read_pom(pom)
    if key not in facts:
        raise SystemExit(f"pominfo: {key!r} is not defined in {pom}")
    value = facts[key]
    if "${" in value:
        raise SystemExit(f"pominfo: {key!r} refers to another property ({value}); not supported")
    return value


def lines(pom: Path = POM) -> list[dict[str, str]]:
    """The Spark lines: every module of the root pom under ``lines/``, with its versions.

    Each entry has ``dir`` (``lines/spark3.5_2.12``), ``name`` (``spark3.5_2.12``), ``artifactId``,
    ``spark.version``, ``scala.version`` and ``scala.binary.version``.
    """
    root = ET.parse(pom).getroot()
    found = []
    for module in root.iterfind("m:modules/m:module", _NS):
        path = (module.text or "").strip()
        if not path.startswith("lines/"):
            continue
        facts = read_pom(pom.parent / path / "pom.xml")
        found.append(
            {
                "dir": path,
                "name": path.split("/", 1)[1],
                "artifactId": facts["artifactId"],
                "spark.version": facts["spark.version"],
                "scala.version": facts["scala.version"],
                "scala.binary.version": facts["scala.binary.version"],
            }
        )
    return found


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def default_line(pom: Path = POM) -> dict[str, str]:
    """The newest Spark line (Scala 2.13 when a release has two): the demo, benchmarks and full tests use it."""
    return max(lines(pom), key=lambda line: (_version_key(line["spark.version"]), line["scala.binary.version"]))


def line_jar(name: str, pom: Path = POM) -> Path:
    """Where ``mvn package`` leaves a line's jar."""
    for line in lines(pom):
        if name in (line["name"], line["dir"], line["artifactId"]):
            return pom.parent / line["dir"] / "target" / f"{line['artifactId']}-{get('version', pom)}.jar"
    raise SystemExit(f"pominfo: no Spark line {name!r}; the lines are {[x['name'] for x in lines(pom)]}")


def deps_artifact(pom: Path = POM) -> str:
    """The artifactId of the shared, shaded third-party jar."""
    return read_pom(pom.parent / "deps" / "pom.xml")["artifactId"]


def deps_jar(pom: Path = POM) -> Path:
    """Where ``mvn package`` leaves the shared, shaded third-party jar."""
    return pom.parent / "deps" / "target" / f"{deps_artifact(pom)}-{get('version', pom)}.jar"


def published_artifacts(pom: Path = POM) -> list[str]:
    """The artifactIds ``mvn deploy`` publishes: the deps jar and every line's jar (the root pom only builds)."""
    return [deps_artifact(pom), *(line["artifactId"] for line in lines(pom))]


def staging_repository(pom: Path = POM) -> Path:
    """The folder ``mvn deploy`` writes to: the root pom's ``altDeploymentRepository`` (``id::file://path``)."""
    target = read_pom(pom).get("altDeploymentRepository", "")
    _, _, url = target.partition("::")
    prefix = "file://${maven.multiModuleProjectDirectory}/"
    if not url.startswith(prefix):
        raise SystemExit(f"pominfo: altDeploymentRepository is {target!r}; expected a file:// URL under {prefix}")
    return pom.parent / url[len(prefix) :]


def jar_path(pom: Path = POM) -> Path:
    """The default line's jar."""
    return line_jar(default_line(pom)["name"], pom)


def version_file_text(pom: Path = POM) -> str:
    default = default_line(pom)
    spark_lines = "".join(
        f'    ("{".".join(x["spark.version"].split(".")[:2])}", "{x["scala.binary.version"]}"): "{x["spark.version"]}",\n'
        for x in lines(pom)
    )
    return (
        "# Generated from the pom files by scripts/pominfo.py at build time. Do not edit.\n"
        f'__version__ = "{get("version", pom)}"\n'
        "# The project's home page and source repository.\n"
        f'PROJECT_URL = "{get("sparkkinesis.home", pom)}"\n'
        "# The default (newest) line.\n"
        f'SPARK_VERSION = "{default["spark.version"]}"\n'
        f'SCALA_BINARY_VERSION = "{default["scala.binary.version"]}"\n'
        "# Every line: (Spark major.minor, Scala binary version) -> the Spark release it is built against.\n"
        f"SPARK_LINES: dict[tuple[str, str], str] = {{\n{spark_lines}}}\n"
    )


def write_version(target: Path, pom: Path = POM) -> bool:
    """Write ``target`` unless it already has the right text; return whether it changed."""
    text = version_file_text(pom)
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return True


def _module_poms(pom: Path = POM) -> list[Path]:
    """The poms that name the root pom (or lines/pom.xml) as their parent, and so repeat its version."""
    return [pom.parent / "lines" / "pom.xml", pom.parent / "deps" / "pom.xml"] + [
        pom.parent / line["dir"] / "pom.xml" for line in lines(pom)
    ]


def parent_versions(pom: Path = POM) -> dict[Path, str]:
    """The ``<parent><version>`` of every module pom: Maven needs each to be the root pom's version."""
    found = {}
    for module in _module_poms(pom):
        node = ET.parse(module).getroot().find("m:parent/m:version", _NS)
        found[module] = (node.text or "").strip() if node is not None else ""
    return found


def set_version(new: str, pom: Path = POM) -> list[Path]:
    """Write ``new`` as the root pom's ``<version>`` and as every module pom's ``<parent><version>``.

    The version is the root pom's; Maven makes each module repeat it in its ``<parent>`` (and refuses to build
    when one differs), so this changes all of them together, as text (comments and layout are kept).
    """
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?", new):
        raise SystemExit(f"pominfo: version {new!r} is not MAJOR.MINOR.PATCH (with an optional -suffix)")
    old = get("version", pom)
    changed = []
    root_text = pom.read_text(encoding="utf-8")
    anchor = f"<artifactId>{get('artifactId', pom)}</artifactId>\n  <version>{old}</version>"
    if root_text.count(anchor) != 1:
        raise SystemExit(f"pominfo: cannot find the project's <version>{old}</version> in {pom}")
    pom.write_text(root_text.replace(anchor, anchor.replace(old, new)), encoding="utf-8")
    changed.append(pom)
    for module in _module_poms(pom):
        text = module.read_text(encoding="utf-8")
        parent = re.search(r"<parent>.*?</parent>", text, re.DOTALL)
        if parent is None or f"<version>{old}</version>" not in parent.group(0):
            raise SystemExit(f"pominfo: {module} has no <parent> of version {old}")
        block = parent.group(0).replace(f"<version>{old}</version>", f"<version>{new}</version>")
        module.write_text(text[: parent.start()] + block + text[parent.end() :], encoding="utf-8")
        changed.append(module)
    return changed


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "get":
        print(get(argv[1]))
    elif argv == ["lines"]:
        for line in lines():
            print(
                line["dir"], line["artifactId"], line["spark.version"], line["scala.version"], line["scala.binary.version"]
            )
    elif argv == ["default-line"]:
        print(default_line()["dir"])
    elif argv == ["default-spark-version"]:
        print(default_line()["spark.version"])
    elif argv == ["jar"]:
        print(jar_path())
    elif len(argv) == 2 and argv[0] == "line-jar":
        print(line_jar(argv[1]))
    elif argv == ["deps-jar"]:
        print(deps_jar())
    elif argv == ["artifacts"]:
        print("\n".join(published_artifacts()))
    elif argv == ["staging-repo"]:
        print(staging_repository())
    elif len(argv) == 2 and argv[0] == "set-version":
        for path in set_version(argv[1]):
            print(f"{path.relative_to(ROOT)}: {argv[1]}", file=sys.stderr)
    elif len(argv) == 2 and argv[0] == "write-version":
        changed = write_version(Path(argv[1]))
        print(f"{argv[1]}: {'written' if changed else 'up to date'}", file=sys.stderr)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
