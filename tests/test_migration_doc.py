"""docs/migration.md maps the other Kinesis readers' options to options this connector really has, and says "no
equivalent" only for options this connector lacks.

The option table is read from docs/options.md, which is generated from the jar's table (and another test
fails when it is stale). No JVM is started.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "migration.md"
SECTIONS = (
    "From the awslabs `spark-sql-kinesis-connector`",
    "From the qubole `kinesis-sql` connector",
    "From the Databricks Kinesis source",
    "From Spark's DStream `KinesisInputDStream` (KCL)",
)
# An option of ours: inline code in the tables, or the key of an .option(...) call in the examples.
_OPTION = re.compile(r"""(?:`|")(kinesis\.[A-Za-z0-9_.]+)(?:`|")""")
_VALUE = re.compile(r"`(kinesis\.[A-Za-z.]+)` = `([^`]+)`")


def known_options() -> dict[str, str]:
    """Every option key of docs/options.md, with its type column."""
    table = {}
    for line in (ROOT / "docs" / "options.md").read_text(encoding="utf-8").splitlines():
        match = re.match(r"\| `(kinesis\.[A-Za-z0-9_.]+)` \| ([^|]+) \|", line)
        if match:
            table[match.group(1)] = match.group(2).strip()
    return table


def unknown_options(text: str, known: set[str]) -> list[str]:
    """The options named in ``text`` that are not in ``known``, each with the closest real one."""
    problems = []
    for name in sorted(set(_OPTION.findall(text))):
        if name in known:
            continue
        # The awslabs section shows that keys are case-insensitive on purpose.
        if name == "kinesis.startingposition":
            continue
        close = difflib.get_close_matches(name, sorted(known), n=1)
        problems.append(f"{name} (closest: {close[0] if close else 'none'})")
    return problems


def equivalents_denied(text: str, known: set[str]) -> list[str]:
    """The "no equivalent" rows of the tables whose "theirs" cell names an option that this connector has.

    A name in the "theirs" cell (inline code; a builder method such as ``.metricsLevel(l)`` counts by its name) is one
    of ours when it is one of our keys, or ``kinesis.`` followed by it is, ignoring case as the connector does.
    """
    ours_lower = {key.lower(): key for key in known}
    problems = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if not line.startswith("| ") or len(cells) < 4 or cells[2].lower() != "no equivalent":
            continue
        for name in re.findall(r"`([^`]+)`", cells[1]):
            bare = re.sub(r"\(.*\)$", "", name.strip()).lstrip(".")
            for candidate in (bare, f"kinesis.{bare}"):
                if candidate.lower() in ours_lower:
                    problems.append(f"{name}: no equivalent, but {ours_lower[candidate.lower()]} exists")
    return problems


def ours(text: str) -> str:
    """The parts of the doc that name our options: the "ours" column and the "after" examples."""
    kept = []
    in_code = after = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code, after = not in_code, False
            continue
        if in_code:
            if re.match(r"\s*(#|//) (before|after)", line):
                after = "after" in line
            elif after:
                kept.append(line)
        elif line.startswith("| "):
            cells = line.split("|")
            if len(cells) > 2:
                kept.append(cells[2])
    return "\n".join(kept)


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## ", text, flags=re.M)
    return {part.splitlines()[0].strip(): part for part in parts[1:]}


def test_every_option_the_doc_maps_to_exists() -> None:
    text = ours(DOC.read_text(encoding="utf-8"))
    known = set(known_options())
    assert len(known) > 40
    named = set(_OPTION.findall(text))
    assert len(named) >= 20, named
    assert unknown_options(text, known) == []


def test_an_unknown_option_is_reported_with_the_closest_name() -> None:
    known = {"kinesis.maxFetchRecordsPerShard", "kinesis.streamName"}
    text = (
        '| `kinesis.theirs` | `kinesis.maxFetchRecordPerShard` |\n```\n# after\n.option("kinesis.streamNam", "s")\n```'
    )
    assert unknown_options(ours(text), known) == [
        "kinesis.maxFetchRecordPerShard (closest: kinesis.maxFetchRecordsPerShard)",
        "kinesis.streamNam (closest: kinesis.streamName)",
    ]


def test_no_equivalent_rows_name_no_option_we_have() -> None:
    text = DOC.read_text(encoding="utf-8")
    denied = [line for line in text.splitlines() if "| no equivalent |" in line]
    assert len(denied) >= 5, denied
    assert equivalents_denied(text, set(known_options())) == []


def test_a_no_equivalent_row_naming_one_of_our_options_is_reported() -> None:
    known = {"kinesis.shardsPerTask", "kinesis.sink.metricsLevel", "kinesis.streamName"}
    text = (
        "| theirs | ours | note |\n|---|---|---|\n"
        "| `shardsPerTask`, `coalesceBinSize` | no equivalent | one shard per task |\n"
        "| `.metricsLevel(l)` | no equivalent | the sink's is another setting |\n"
        "| `kinesis.StreamName` | no equivalent | |\n"
        "| `shardsPerTask` | `kinesis.shardsPerTask` | |\n"
    )
    assert equivalents_denied(text, known) == [
        "shardsPerTask: no equivalent, but kinesis.shardsPerTask exists",
        "kinesis.StreamName: no equivalent, but kinesis.streamName exists",
    ]


@pytest.mark.parametrize("title", SECTIONS)
def test_each_reader_has_a_mapping_table_and_a_before_after_example(title: str) -> None:
    sections = _sections(DOC.read_text(encoding="utf-8"))
    assert title in sections, sorted(sections)
    body = sections[title]
    rows = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith("| theirs")]
    assert len([r for r in rows if not set(r) <= set("|- ")]) >= 4
    assert body.count("```") >= 2
    assert "before" in body and "after" in body


def test_values_given_for_enumerated_options_are_allowed() -> None:
    text = DOC.read_text(encoding="utf-8")
    table = known_options()
    starting = re.compile(r"^(LATEST|TRIM_HORIZON|EARLIEST|AT_TIMESTAMP \S+)$")
    checked = 0
    for key, values in _VALUE.findall(ours(text)):
        for value in (v.strip() for v in values.split("/")):
            if key == "kinesis.startingPosition":
                assert (
                    starting.match(value)
                    or value == "AT_TIMESTAMP <that instant>"
                    or value.startswith("AT_TIMESTAMP <")
                ), value
            elif table[key].startswith("one of "):
                allowed = [c.strip() for c in table[key][len("one of ") :].split(",")]
                assert value in allowed, f"{key} = {value}: allowed {allowed}"
            elif table[key] == "boolean":
                assert value in ("true", "false"), f"{key} = {value}"
            checked += 1
    assert checked >= 8
