"""The Python builders and docs agree with the option table inside the built jar. No JVM is started.

The Maven build writes the Scala option table into the jar (META-INF/spark-kinesis/options.json).
Adding a Scala option without its Python argument, or changing a default, type or bound on one
side only, fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from spark_kinesis import KinesisSink, KinesisSource, jar_paths
from spark_kinesis._fields import option_fields
from spark_kinesis.cli import main
from spark_kinesis.option_table import FORMAT_VERSION, RESOURCE, load_option_table, render_markdown

ROOT = Path(__file__).resolve().parent.parent

# How the builder kinds map to the table's types ("position" is a string with a syntax of its own).
_TABLE_TYPE = {"position": "string", "end_position": "string"}


@pytest.fixture(scope="module")
def table():
    return {info.key: info for info in load_option_table()}


@pytest.mark.parametrize(("builder", "side"), [(KinesisSource, "source"), (KinesisSink, "sink")])
def test_builder_covers_exactly_the_options_of_its_side(table, builder, side):
    python_keys = {spec.key for _, spec in option_fields(builder)}
    # Options accepted only for compatibility (ignored) get no builder argument.
    table_keys = {key for key, info in table.items() if info.applies_to(side) and not info.compatibility}
    assert python_keys - table_keys == set(), "builder arguments the jar does not have"
    assert table_keys - python_keys == set(), (
        f"options of the jar's {side} with no argument in {builder.__name__}: add them to "
        "python/src/spark_kinesis/builders.py"
    )


@pytest.mark.parametrize("builder", [KinesisSource, KinesisSink])
def test_types_defaults_bounds_and_secrecy_agree(table, builder):
    for name, spec in option_fields(builder):
        info = table[spec.key]
        where = f"{builder.__name__}.{name} ({spec.full_key})"
        assert _TABLE_TYPE.get(spec.kind, spec.kind) == info.type, where
        assert spec.default == info.default, where
        assert spec.choices == info.choices, where
        assert (spec.minimum, spec.maximum) == (info.minimum, info.maximum), where
        assert spec.secret == info.secret, where


def test_time_units_follow_the_key_names(table):
    for builder in (KinesisSource, KinesisSink):
        for name, spec in option_fields(builder):
            if spec.kind != "integer":
                continue
            expected = "ms" if spec.key.endswith("Ms") else "s" if spec.key.endswith("Sec") else None
            assert spec.unit == expected, f"{builder.__name__}.{name}"


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


def test_table_of_an_unknown_format_is_a_clear_error(tmp_path):
    jar = tmp_path / "future.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr(RESOURCE, json.dumps({"formatVersion": 99, "options": []}))
    with pytest.raises(ValueError, match="format 99 is not supported"):
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
    assert listed.splitlines()[0].split() == ["NAME", "STATUS", "ARN"]
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
