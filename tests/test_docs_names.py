"""The README and the docs name only option keys, error conditions and commands that exist.

README.md, python/README.md and docs/**/*.md are scanned for:

- option keys ``kinesis.<key>`` (in code or prose): each must be a key of the option table of the jar bundled in the
  installed package (case-insensitive). A key followed by ``*`` or a ``<...>`` placeholder (``kinesis.sink.*``,
  ``kinesis.proxy*``) names a family: some key must start with it;
- error conditions ``KINESIS_NAME`` or ``KINESIS_NAME.SUB_CLASS``: each must be a condition (or a condition and one of
  its subclasses) of ``src/main/resources/META-INF/spark-kinesis/error-conditions.json``;
- commands ``spark-kinesis <command>`` in code (inline code spans and fenced blocks): each must be a command of the
  ``spark-kinesis`` command line (``spark_kinesis.cli``).

No JVM, Spark or emulator is needed: the option table is read from the jar file, the command line's parser is built
without running it.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
ERROR_CONDITIONS = ROOT / "src" / "main" / "resources" / "META-INF" / "spark-kinesis" / "error-conditions.json"

# `kinesis.` not inside a longer name (a URL host such as https://kinesis.<region>.amazonaws.com, a Java package
# such as software.amazon.kinesis.producer, io.sparkkinesis), then a dotted key, then maybe `*` or `<` (a family).
_OPTION = re.compile(r"(?<![\w./:-])kinesis\.([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*\.?)?(\*|<)?")
_CONDITION = re.compile(r"(?<![\w.])(KINESIS_[A-Z0-9_]*[A-Z0-9])(?:\.([A-Z][A-Z0-9_]*[A-Z0-9]))?\b(?!\.?[a-z])")
_COMMAND = re.compile(r"(?<![\w./-])spark-kinesis[ \t]+([a-z][a-z-]*)")
_INLINE_CODE = re.compile(r"`+([^`]+)`+")
_FENCE = re.compile(r"^\s*(```|~~~)")

# Keys (lower case, without `kinesis.`) and families that the docs name on purpose although the table lacks them.
NOT_OPTIONS = {
    "k": "the placeholder of `-o kinesis.K=V` in the synopsis of spark-kinesis check-options (docs/guide/cli.md)",
    "executor.": "the qubole kinesis-sql connector's reader options, mapped to ours in docs/migration.md",
    "client.": "the qubole kinesis-sql connector's client options, mapped to ours in docs/migration.md",
}

# Names of the form KINESIS_... that are not error conditions, and why they are named.
NOT_CONDITIONS = {
    "KINESIS_LOCAL_ENDPOINT": "an environment variable of the test fixtures (reuse a running kinesis-local)",
    "KINESIS_MOCK_CERT_PATH": "an environment variable of the kinesis-local emulator (docs/emulators.md)",
    "KINESIS_MOCK_PLAIN_PORT": "an environment variable of the kinesis-local emulator (docs/emulators.md)",
    "KINESIS_MOCK_TLS_PORT": "an environment variable of the kinesis-local emulator (docs/emulators.md)",
}


def _deliberately_absent(key: str) -> bool:
    """Whether a key or family (lower case) is one the docs name on purpose although the table lacks it."""
    return any(key == absent or (absent.endswith(".") and key.startswith(absent)) for absent in NOT_OPTIONS)


def documents() -> list[Path]:
    """The Markdown files whose names are checked."""
    found = [ROOT / "README.md", ROOT / "python" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return [p for p in found if p.is_file()]


def lines_of(doc: Path) -> Iterator[tuple[int, str, bool]]:
    """Each line of ``doc`` with its number and whether it lies in a fenced code block."""
    fenced = False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        yield number, line, fenced


def option_keys() -> set[str]:
    """The keys of the bundled jar's option table, without ``kinesis.``, in lower case."""
    from spark_kinesis.option_table import load_option_table

    try:
        table = load_option_table()
    except (FileNotFoundError, OSError) as e:  # the jars are copied into the package by the build
        pytest.skip(f"no bundled jar to read the option table from: {e}")
    return {info.key.lower() for info in table}


def error_conditions() -> set[str]:
    """Every condition name, and ``NAME.SUBCLASS`` for each subclass."""
    conditions = json.loads(ERROR_CONDITIONS.read_text(encoding="utf-8"))
    names = set(conditions)
    for name, body in conditions.items():
        names.update(f"{name}.{sub}" for sub in body.get("subClass", {}))
    return names


def cli_commands() -> set[str]:
    """The commands of ``spark-kinesis``, from its argparse parser."""
    from spark_kinesis import cli

    parser = cli._parser()
    return {
        name for action in parser._actions if isinstance(action, argparse._SubParsersAction) for name in action.choices
    }


def unknown_options(doc: Path, keys: set[str]) -> list[str]:
    """The option keys ``doc`` names that the option table lacks, as ``file:line: kinesis.<key>``."""
    problems = []
    for number, line, _ in lines_of(doc):
        for match in _OPTION.finditer(line):
            key, family = match.group(1) or "", match.group(2)
            if _deliberately_absent(key.rstrip(".").lower()) or _deliberately_absent(key.lower()):
                continue
            if family:
                prefix = key.lower()
                if prefix and not any(k.startswith(prefix) for k in keys):
                    problems.append(f"{_where(doc, number)}: no option of the family kinesis.{key}{family}")
            elif key.rstrip(".") and key.rstrip(".").lower() not in keys:
                problems.append(f"{_where(doc, number)}: unknown option kinesis.{key.rstrip('.')}")
    return problems


def unknown_conditions(doc: Path, conditions: set[str]) -> list[str]:
    """The error conditions ``doc`` names that error-conditions.json lacks, as ``file:line: NAME``."""
    problems = []
    for number, line, _ in lines_of(doc):
        for match in _CONDITION.finditer(line):
            name, sub = match.group(1), match.group(2)
            if name in NOT_CONDITIONS:
                continue
            full = f"{name}.{sub}" if sub else name
            if full not in conditions:
                problems.append(f"{_where(doc, number)}: unknown error condition {full}")
    return problems


def unknown_commands(doc: Path, commands: set[str]) -> list[str]:
    """The ``spark-kinesis <command>`` of ``doc``'s code that the command line lacks, as ``file:line: command``."""
    problems = []
    for number, line, fenced in lines_of(doc):
        code = [line] if fenced else _INLINE_CODE.findall(line)
        for span in code:
            for match in _COMMAND.finditer(span):
                if match.group(1) not in commands:
                    problems.append(f"{_where(doc, number)}: unknown command spark-kinesis {match.group(1)}")
    return problems


def _where(doc: Path, number: int) -> str:
    return f"{doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc.name}:{number}"


def test_documents_are_found() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in documents()}
    assert {"README.md", "python/README.md", "docs/options.md", "docs/guide/api-calls.md"} <= names


def test_docs_name_only_existing_options() -> None:
    keys = option_keys()
    problems = [p for doc in documents() for p in unknown_options(doc, keys)]
    assert not problems, "\n".join(problems)


def test_docs_name_only_existing_error_conditions() -> None:
    conditions = error_conditions()
    problems = [p for doc in documents() for p in unknown_conditions(doc, conditions)]
    assert not problems, "\n".join(problems)


def test_docs_name_only_existing_commands() -> None:
    commands = cli_commands()
    problems = [p for doc in documents() for p in unknown_commands(doc, commands)]
    assert not problems, "\n".join(problems)


def test_the_checks_find_wrong_names(tmp_path: Path) -> None:
    doc = tmp_path / "probe.md"
    doc.write_text(
        "Set `kinesis.noSuchOption`, or kinesis.sink.* and kinesis.nosuch.*; a failure is KINESIS_NO_SUCH_ERROR or\n"
        "KINESIS_DATA_LOSS.NO_SUCH_SUBCLASS; run `spark-kinesis frobnicate`.\n"
        "Fine: `kinesis.streamName`, kinesis.STREAMNAME, https://kinesis.us-east-1.amazonaws.com, KINESIS_DATA_LOSS.\n",
        encoding="utf-8",
    )
    options = unknown_options(doc, option_keys())
    conditions = unknown_conditions(doc, error_conditions())
    commands = unknown_commands(doc, cli_commands())
    assert options == [
        "probe.md:1: unknown option kinesis.noSuchOption",
        "probe.md:1: no option of the family kinesis.nosuch.*",
    ]
    assert conditions == [
        "probe.md:1: unknown error condition KINESIS_NO_SUCH_ERROR",
        "probe.md:2: unknown error condition KINESIS_DATA_LOSS.NO_SUCH_SUBCLASS",
    ]
    assert commands == ["probe.md:2: unknown command spark-kinesis frobnicate"]
