#!/usr/bin/env python3
"""Read facts from pom.xml, the single place where versions are written down.

Usage::

    scripts/pominfo.py get spark.version        # a <properties> entry
    scripts/pominfo.py get version              # the project's own <version>
    scripts/pominfo.py get artifactId
    scripts/pominfo.py jar                      # target/<artifactId>-<version>.jar
    scripts/pominfo.py write-version FILE       # generate the Python package's _version.py

Only the standard library is used, so any Python 3 can run this before a venv exists.
"""

from __future__ import annotations

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


def jar_path(pom: Path = POM) -> Path:
    """Where ``mvn package`` leaves the shaded jar."""
    return pom.parent / "target" / f"{get('artifactId', pom)}-{get('version', pom)}.jar"


def version_file_text(pom: Path = POM) -> str:
    return (
        "# Generated from pom.xml by scripts/pominfo.py at build time. Do not edit.\n"
        f'__version__ = "{get("version", pom)}"\n'
        f'SPARK_VERSION = "{get("spark.version", pom)}"\n'
        f'SCALA_BINARY_VERSION = "{get("scala.binary.version", pom)}"\n'
    )


def write_version(target: Path, pom: Path = POM) -> bool:
    """Write ``target`` unless it already has the right text; return whether it changed."""
    text = version_file_text(pom)
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return True


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "get":
        print(get(argv[1]))
    elif len(argv) == 1 and argv[0] == "jar":
        print(jar_path())
    elif len(argv) == 2 and argv[0] == "write-version":
        changed = write_version(Path(argv[1]))
        print(f"{argv[1]}: {'written' if changed else 'up to date'}", file=sys.stderr)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
