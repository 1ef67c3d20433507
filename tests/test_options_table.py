"""The option table inside the built jar, and what the Python package derives from it. No JVM.

The Maven build writes the Scala option table into the jar (META-INF/spark-kinesis/options.json).
The builders take each option's type, default, bounds, choices and secrecy from it, so only the
list of arguments can disagree: adding a Scala option without its Python argument fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from spark_kinesis import KinesisSink, KinesisSource, jar_paths
from spark_kinesis._fields import option_fields, parameters_section
from spark_kinesis.cli import main
from spark_kinesis.option_table import (
    FORMAT_VERSION,
    RESOURCE,
    load_option_table,
    load_position_grammar,
    render_markdown,
)

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def table():
    return {info.key: info for info in load_option_table()}


@pytest.mark.parametrize(("builder", "side"), [(KinesisSource, "source"), (KinesisSink, "sink")])
def test_builder_covers_exactly_the_options_of_its_side(table, builder, side):
    python_keys = {spec.info.key for spec in option_fields(builder)}
    # Options accepted only for compatibility (ignored) get no builder argument.
    table_keys = {key for key, info in table.items() if info.applies_to(side) and not info.compatibility}
    assert python_keys - table_keys == set(), "builder arguments the jar does not have"
    assert table_keys - python_keys == set(), (
        f"options of the jar's {side} with no argument in {builder.__name__}: add them to "
        "python/src/spark_kinesis/builders.py"
    )


def test_every_time_option_is_a_duration_with_the_unit_its_name_says(table):
    # Each key naming a unit, and the two time options whose key names none.
    timed = {k for k in table if k.endswith(("Ms", "Sec"))} | {"describeShardInterval", "sink.recordTtl"}
    assert {k for k, info in table.items() if info.type == "duration"} == timed
    for key in timed:
        assert table[key].unit == ("s" if key.endswith("Sec") else "ms"), key
    timeout = table["subscribeToShard.timeoutSec"]
    assert (timeout.minimum, timeout.maximum, timeout.bounds_text) == (1000, 3_600_000, "from 1s to 1h")


@pytest.mark.parametrize("builder", [KinesisSource, KinesisSink])
def test_the_docstring_lists_every_argument_with_the_jars_default_and_bounds(table, builder):
    doc = builder.__doc__
    assert doc == builder.__doc__ and "Parameters\n    ----------" in doc
    # The section comes before the examples, and lists every argument in declaration order.
    assert doc.index("Parameters") < doc.index("Examples")
    section = parameters_section(builder)
    heads = [line.split(" : ")[0] for line in section.splitlines() if " : " in line]
    assert heads == [spec.name for spec in option_fields(builder)] + ["extra_options"]
    flat = " ".join(doc.split())
    for spec in option_fields(builder):
        info = table[spec.info.key]
        entry = flat[flat.index(f" {spec.name} : ") + 1 :]
        entry = entry[: entry.index(" : ", len(spec.name) + 3)]
        assert f"``{info.full_key}``" in entry, spec.name
        if info.required:
            assert "Required." in entry, spec.name
        else:
            assert f"Default: {' '.join(info.default_text.split())}" in entry, spec.name
        if info.minimum is not None:
            bounds = info.bounds_text.removeprefix("from ")
            assert f"From {bounds}." in entry or f"{bounds[0].upper()}{bounds[1:]}." in entry, spec.name
        assert ("Secret:" in entry) == info.secret, spec.name
        if info.choices:
            assert f"One of {', '.join(info.choices)}." in entry, spec.name
    # A time argument says what it accepts.
    assert "subscribe_timeout_sec : int (s), timedelta or str" in flat or builder is not KinesisSource
    assert "record_ttl : int (ms), timedelta or str" in flat or builder is not KinesisSink


def test_the_position_grammar_is_read_from_the_jar():
    grammar = load_position_grammar()
    assert grammar.start.option == "startingPosition" and grammar.end.option == "endingPosition"
    assert grammar.start.names["EARLIEST"] == "TRIM_HORIZON"
    assert "SHARD_END" in grammar.start.place_types and "SHARD_END" not in grammar.end.place_types
    assert grammar.at_timestamp == "AT_TIMESTAMP"
    assert (grammar.arn_field, grammar.created_field) == ("streamArn", "streamCreationTimestamp")


def test_every_line_jar_carries_the_table_the_package_reads():
    from spark_kinesis import built_lines

    lines = built_lines()
    assert lines
    for line in lines:
        spark = f"{line.spark[0]}.{line.spark[1]}"
        with zipfile.ZipFile(jar_paths(spark=spark, scala=line.scala)[0]) as archive:
            data = json.loads(archive.read(RESOURCE))
        assert data["formatVersion"] == FORMAT_VERSION
        assert data["prefix"] == "kinesis."
        assert [o["key"] for o in data["options"]] == [o.key for o in load_option_table()], line.name


def test_docs_options_md_is_generated_from_the_jar():
    on_disk = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    assert on_disk == render_markdown(load_option_table()), "docs/options.md is stale: run scripts/options-doc.sh"


def test_options_doc_script_check_mode_passes():
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "options-doc.sh"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_table_from_a_jar_without_it_is_a_clear_error(tmp_path):
    jar = tmp_path / "other.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    with pytest.raises(ValueError, match="not a spark-kinesis jar"):
        load_option_table(str(jar))


@pytest.mark.parametrize("version", [FORMAT_VERSION - 1, 99])
def test_table_of_another_format_is_a_clear_error(tmp_path, version):
    jar = tmp_path / "other-version.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr(RESOURCE, json.dumps({"formatVersion": version, "options": []}))
    with pytest.raises(ValueError, match=f"format {version} is not supported"):
        load_option_table(str(jar))


# --- the command line ------------------------------------------------------------------------------


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "spark-kinesis"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, check=False)


def test_console_script_prints_the_jar_paths():
    done = _console("jar")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ",".join(jar_paths())


def test_console_script_has_help():
    done = _console("--help")
    assert done.returncode == 0
    for command in ("jar", "options", "consumers"):
        assert command in done.stdout


def test_options_command_filters_by_side(capsys, table):
    assert main(["options", "--sink"]) == 0
    sink_text = capsys.readouterr().out
    assert main(["options", "--source"]) == 0
    source_text = capsys.readouterr().out
    for key, info in table.items():
        assert (f"kinesis.{key}\n" in sink_text or f"kinesis.{key}  [" in sink_text) == (info.applies_to("sink")), key
        assert (f"kinesis.{key}\n" in source_text or f"kinesis.{key}  [" in source_text) == (
            info.applies_to("source")
        ), key


def test_options_command_markdown_is_the_docs(capsys):
    assert main(["options", "--markdown"]) == 0
    assert capsys.readouterr().out == (ROOT / "docs" / "options.md").read_text(encoding="utf-8")


# --- consumers, through the jar's ConsumersTool, against the emulator -------------------------------


@pytest.mark.emulator
def test_consumers_register_list_deregister(kinesis_local, kinesis_client_factory, stream_name, stream_cleanup):
    import os

    from conftest import TEST_ENV
    from harness.kinesis import create_stream

    client = kinesis_client_factory(kinesis_local)
    stream_cleanup(client, create_stream(client, stream_name, shards=1))
    env = {**os.environ, **TEST_ENV}
    base = ["--stream", stream_name, "--endpoint-url", kinesis_local, "--region", "us-east-1"]
    exe = str(Path(sys.executable).parent / "spark-kinesis")

    def run(*args: str) -> str:
        done = subprocess.run([exe, "consumers", *args, *base], capture_output=True, text=True, env=env, check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout

    registered = run("register", "--name", "cli-app")
    assert "cli-app" in registered and "ACTIVE" in registered
    listed = run("list")
    assert listed.splitlines()[0].split() == ["NAME", "STATUS", "ARN", "TAGS"]
    assert any(line.startswith("cli-app") for line in listed.splitlines()[1:])
    arn = client.describe_stream_summary(StreamName=stream_name)["StreamDescriptionSummary"]["StreamARN"]
    names = [c["ConsumerName"] for c in client.list_stream_consumers(StreamARN=arn)["Consumers"]]
    assert names == ["cli-app"]
    run("deregister", "--name", "cli-app")
    assert client.list_stream_consumers(StreamARN=arn)["Consumers"] == []
    assert run("list").splitlines()[1:] == []


def test_consumers_errors_are_one_line_without_a_stack_trace(tmp_path):
    exe = str(Path(sys.executable).parent / "spark-kinesis")
    done = subprocess.run(
        [exe, "consumers", "register", "--stream", "s", "--region", "us-east-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "needs --name" in done.stderr
    options = tmp_path / "bad.properties"
    options.write_text("kinesis.maxFetchRecordsPerShard=0\n")
    done = subprocess.run(
        [exe, "consumers", "list", "--stream", "s", "--region", "us-east-1", "--options-file", str(options)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "kinesis.maxFetchRecordsPerShard" in done.stderr
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr
