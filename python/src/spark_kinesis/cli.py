"""The ``spark-kinesis`` command line.

::

    spark-kinesis jar [--spark 3.5] [--scala 2.12]   # the jars for spark-submit --jars
    spark-kinesis jar --list            # the bundled Spark lines
    spark-kinesis options [--sink | --source] [--markdown]
    spark-kinesis consumers list --stream S [connection options]
    spark-kinesis consumers register --stream S --name N [--tags k=v,...] [connection options]
    spark-kinesis consumers describe|deregister (--stream S --name N | --arn A) [connection]
    spark-kinesis positions --from-kcl-table T --stream S [--initial-timestamp ISO] [connection]
    spark-kinesis check-options [--source | --sink] [--option KEY=VALUE ...] [--options-file F]

``consumers``, ``positions`` and ``check-options`` run the connector's own Java code
(``io.sparkkinesis.tools.*`` in the jar) with the installed pyspark's jars, so they resolve the
stream, region, endpoints and credentials exactly as a query with the same options would.
Secrets are never taken as command-line arguments: use the AWS environment variables or profiles
(the default chain), or ``--options-file`` with ``kinesis.*`` keys (``-``: standard input); the
options reach the Java process on its standard input.

Each command's ``--help`` says what it does and prints, and its exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from spark_kinesis.option_table import load_option_table, render_markdown, render_text

__all__ = ["main"]

_CONSUMERS_MAIN = "io.sparkkinesis.tools.ConsumersTool"
_KCL_LEASES_MAIN = "io.sparkkinesis.tools.KclLeasesTool"
_CHECK_OPTIONS_MAIN = "io.sparkkinesis.tools.CheckOptionsTool"


def _cmd_jar(args: argparse.Namespace) -> int:
    from spark_kinesis.lines import SparkVersionMismatchError, built_lines, jar_paths

    if args.list:
        rows = [["line", "Spark", "Scala", "built against", "jar"]]
        for line in built_lines():
            spark = f"{line.spark[0]}.{line.spark[1]}"
            rows.append([line.name, spark, line.scala, line.built_against, line.jar_name])
        sys.stdout.write(_columns(rows))
        return 0
    if args.scala is not None and args.spark is None:
        return _usage_error("jar", "--scala needs --spark (the Spark line, such as 3.5)")
    try:
        print(",".join(jar_paths(spark=args.spark, scala=args.scala)))
    except SparkVersionMismatchError as error:
        return _usage_error("jar", str(error))
    return 0


def _usage_error(command: str, message: str) -> int:
    print(f"spark-kinesis {command}: {message}", file=sys.stderr)
    return 2


def _columns(rows: list[list[str]]) -> str:
    """Align rows of cells in columns, the first row being the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    aligned = ("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows)
    return "".join(line.rstrip() + "\n" for line in aligned)


def _cmd_options(args: argparse.Namespace) -> int:
    table = load_option_table(args.jar)
    if args.sink:
        table = [o for o in table if o.applies_to("sink")]
    elif args.source:
        table = [o for o in table if o.applies_to("source")]
    sys.stdout.write(render_markdown(table) if args.markdown else render_text(table))
    return 0


def _read_options_file(path: str) -> dict[str, str]:
    """Read ``kinesis.*`` options from a file, or from standard input when ``path`` is ``-``.

    The text is key=value lines, or a JSON object of strings (a ``.json`` file, or standard input
    that starts with ``{``).
    """
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    if path.endswith(".json") or (path == "-" and text.lstrip().startswith("{")):
        loaded = json.loads(text)
        if not isinstance(loaded, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in loaded.items()
        ):
            raise SystemExit(f"--options-file {path}: expected a JSON object of strings")
        return dict(loaded)
    options: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.partition("=")
        if not sep:
            raise SystemExit(f"--options-file {path}, line {number}: expected key=value")
        options[key.strip()] = value.strip()
    return options


def _connection_options(args: argparse.Namespace) -> dict[str, str]:
    """Return the ``--options-file`` options, overridden by the connection flags given."""
    options = _read_options_file(args.options_file) if args.options_file else {}
    flags = {
        "kinesis.streamName": args.stream,
        "kinesis.region": args.region,
        "kinesis.endpointUrl": args.endpoint_url,
        "kinesis.stsRoleArn": args.role_arn,
        "kinesis.stsSessionName": args.role_session_name,
        "kinesis.stsEndpointUrl": args.sts_endpoint_url,
        "kinesis.dynamodb.region": getattr(args, "dynamodb_region", None),
        "kinesis.dynamodb.endpointUrl": getattr(args, "dynamodb_endpoint_url", None),
    }
    options.update({key: value for key, value in flags.items() if value is not None})
    return options


# The tools run for seconds and make a few calls: the JIT's first tier and the serial collector
# start them with half the CPU of the JVM's defaults, which matters on small, busy machines.
_TOOL_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def _java(command: str) -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise SystemExit(f"spark-kinesis {command} needs Java 17 or newer: set JAVA_HOME or PATH")
    return found


def _spark_jars(command: str) -> str:
    try:
        import pyspark
    except ImportError:
        raise SystemExit(
            f"spark-kinesis {command} needs pyspark (for Scala and logging jars): "
            "pip install 'spark-kinesis[spark]'"
        ) from None
    return str(Path(pyspark.__file__).parent / "jars" / "*")


def run_tool(
    main_class: str, request: dict[str, Any], command: str, extra_classpath: Sequence[str] = ()
) -> dict[str, Any]:
    """Run one of the jar's tools (a Java main class) on a JSON request and return its JSON answer.

    The request, secrets included, travels on the child's standard input, never on its command
    line. The tool's ``warning:`` and ``note:`` lines on standard error are passed on to ours.

    Parameters
    ----------
    main_class : str
        The tool's class, such as ``io.sparkkinesis.tools.ConsumersTool``.
    request : dict
        The request, sent as JSON.
    command : str
        The command that runs the tool (``consumers list``), named in messages.
    extra_classpath : sequence of str, optional
        More jars or class directories for the tool, such as a custom credentials provider's.

    Returns
    -------
    dict
        The tool's standard output, a JSON object.

    Raises
    ------
    SystemExit
        If Java or pyspark is missing, or the tool fails; the message is the tool's last error line.
    """
    from spark_kinesis.lines import jar_paths

    name = command.split()[0]
    classpath = os.pathsep.join([*jar_paths(), *extra_classpath, _spark_jars(name)])
    done = subprocess.run(
        [_java(name), *_TOOL_JVM_OPTIONS, "-cp", classpath, main_class],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.strip().splitlines()
        raise SystemExit(
            f"spark-kinesis {command} failed: "
            + (message[-1] if message else f"exit {done.returncode}")
        )
    for line in done.stderr.splitlines():
        if line.startswith(("warning:", "note:")):
            print(f"spark-kinesis {command}: {line}", file=sys.stderr)
    reply: dict[str, Any] = json.loads(done.stdout)
    return reply


def _cmd_check_options(args: argparse.Namespace) -> int:
    from spark_kinesis.connect import secret_option_keys

    options = _read_options_file(args.options_file) if args.options_file else {}
    secret = {key.lower() for key in secret_option_keys()}
    for pair in args.option:
        key, sep, value = pair.partition("=")
        if not sep:
            return _usage_error("check-options", f"--option {pair!r}: expected KEY=VALUE")
        if key.strip().lower() in secret:
            return _usage_error(
                "check-options",
                f"{key.strip()} is secret: give it in --options-file (or on standard input with "
                "--options-file -), not on the command line",
            )
        options[key.strip()] = value.strip()
    sides = ["source"] if args.source else ["sink"] if args.sink else ["source", "sink"]
    request: dict[str, Any] = {"cases": [{"side": side, "options": options} for side in sides]}
    if args.default_region is not None:
        request["region"] = args.default_region
    jars = [j for j in (args.jars or "").split(",") if j]
    reply = run_tool(_CHECK_OPTIONS_MAIN, request, "check-options", jars)
    # Per side: {"accepted": bool, "rule": id or None, "message": text or None}, with "warnings"
    # (a list of texts) when options accepted only for compatibility were given.
    results: dict[str, dict[str, Any]] = dict(zip(sides, reply["results"], strict=True))
    if args.json:
        print(json.dumps(results))
    else:
        for side, result in results.items():
            rule = f" (rule {result['rule']})" if result["rule"] else ""
            refused = f"refused{rule}: {result['message']}"
            print(f"{side}: {'accepted' if result['accepted'] else refused}")
            for warning in result.get("warnings", []):
                print(f"{side}: warning: {warning}")
    return 0 if all(result["accepted"] for result in results.values()) else 1


def _table(consumers: list[dict[str, Any]]) -> str:
    columns = ["name", "status", "arn", "tags"]
    rows = [[c.upper() for c in columns]]
    for consumer in consumers:
        tags = ",".join(f"{k}={v}" for k, v in consumer.get("tags", {}).items())
        rows.append([str({**consumer, "tags": tags}.get(c, "")) for c in columns])
    return _columns(rows)


def _cmd_consumers(args: argparse.Namespace) -> int:
    if args.action == "register" and not args.name:
        raise SystemExit("spark-kinesis consumers register needs --name")
    if args.action in ("describe", "deregister") and not (args.name or args.arn):
        raise SystemExit(f"spark-kinesis consumers {args.action} needs --name or --arn")
    if args.action != "register" and args.tags:
        raise SystemExit("spark-kinesis consumers: --tags go with register only")
    if not args.stream and not (args.arn and args.action in ("describe", "deregister")):
        raise SystemExit(f"spark-kinesis consumers {args.action} needs --stream")
    request = {"action": args.action, "consumerName": args.name, "consumerArn": args.arn}
    request.update(tags=args.tags, options=_connection_options(args))
    # Each consumer reported has a name, arn, status and tags (a dict).
    reply = run_tool(_CONSUMERS_MAIN, request, f"consumers {args.action}")
    sys.stdout.write(_table(reply["consumers"]))
    return 0


def _cmd_positions(args: argparse.Namespace) -> int:
    # The table's leases become {stream: {shardId: {"type": ..., ...}}}, shards sorted by id.
    request = {"table": args.from_kcl_table, "initialTimestamp": args.initial_timestamp}
    document = run_tool(
        _KCL_LEASES_MAIN, {**request, "options": _connection_options(args)}, "positions"
    )
    print(json.dumps(document))
    return 0


def _add_connection_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--region", help="kinesis.region")
    parser.add_argument("--endpoint-url", help="kinesis.endpointUrl")
    parser.add_argument("--role-arn", help="kinesis.stsRoleArn: a role to assume")
    parser.add_argument("--role-session-name", help="kinesis.stsSessionName")
    parser.add_argument("--sts-endpoint-url", help="kinesis.stsEndpointUrl")
    parser.add_argument(
        "--options-file",
        help="a key=value (or .json) file of kinesis.* options, for keys and other secrets",
    )


_NO_SECRET_ARGUMENTS = (
    "Secrets are not accepted as arguments: use the AWS default credentials chain "
    "(environment, profile, instance role) or --options-file."
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="spark-kinesis",
        description="Helpers for the spark-kinesis connector (Kinesis Data Streams for Spark).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    jar = commands.add_parser(
        "jar",
        help="print the jars for spark-submit --jars (comma-separated)",
        description=(
            "Print, on one line and comma-separated, the jars a Spark needs: its line's jar and "
            "the shared third-party jar. By default for the installed pyspark (its version and "
            "the Scala version of its jars); --spark/--scala ask for another line, such as a "
            "cluster's."
        ),
    )
    jar.add_argument(
        "--spark", help="the Spark version to serve, such as 3.5 (default: the installed pyspark's)"
    )
    jar.add_argument("--scala", help="the Scala binary version, 2.12 or 2.13 (default: the line's)")
    jar.add_argument("--list", action="store_true", help="list the bundled Spark lines instead")
    jar.set_defaults(run=_cmd_jar)

    options = commands.add_parser("options", help="print the option reference")
    side = options.add_mutually_exclusive_group()
    side.add_argument("--sink", action="store_true", help="only the options the sink reads")
    side.add_argument("--source", action="store_true", help="only the options the source reads")
    options.add_argument("--markdown", action="store_true", help="print docs/options.md")
    options.add_argument("--jar", help="read the table from this jar instead of the bundled one")
    options.set_defaults(run=_cmd_options)

    consumers = commands.add_parser(
        "consumers",
        help="list, describe, register or deregister enhanced fan-out consumers of a stream",
        description=(
            "Manage enhanced fan-out consumers with the connector's own AWS code and options. "
            "Each consumer is shown with its ARN (for kinesis.consumerArn) and its tags. "
            + _NO_SECRET_ARGUMENTS
        ),
    )
    consumers.add_argument("action", choices=["list", "describe", "register", "deregister"])
    consumers.add_argument("--stream", help="stream name (kinesis.streamName)")
    consumers.add_argument("--name", help="consumer name (kinesis.consumerName)")
    consumers.add_argument(
        "--arn", help="consumer ARN (kinesis.consumerArn), instead of --stream and --name"
    )
    consumers.add_argument(
        "--tags",
        help="register with these tags: key=value pairs, comma-separated (as kinesis.consumerTags)",
    )
    _add_connection_flags(consumers)
    consumers.set_defaults(run=_cmd_consumers)

    positions = commands.add_parser(
        "positions",
        help="print a kinesis.startingPosition document from a KCL application's lease table",
        description=(
            "Read the DynamoDB lease table of a stopped KCL 1.x, 2.x or 3.x application (such as a "
            "Spark DStream Kinesis receiver) and print, as one line of JSON, the per-shard "
            "positions document for kinesis.startingPosition: each shard starts after its last "
            "checkpoint (AFTER_SEQUENCE_NUMBER, with its subSequenceNumber); the sentinels "
            "TRIM_HORIZON, LATEST and SHARD_END stay as they are, and AT_TIMESTAMP takes "
            "--initial-timestamp. Items of a KCL 3.x table that are not leases (the migration "
            "state Migration3.0, the leader lock, worker metrics) are told apart by their "
            "entityType and skipped, as the KCL does, and counted in a note: line on standard "
            "error. " + _NO_SECRET_ARGUMENTS
        ),
    )
    positions.add_argument(
        "--from-kcl-table",
        required=True,
        metavar="TABLE",
        help="the KCL lease table (by default the KCL application name)",
    )
    positions.add_argument("--stream", required=True, help="stream name (kinesis.streamName)")
    positions.add_argument(
        "--initial-timestamp",
        metavar="ISO",
        help=(
            "the KCL application's initial timestamp (ISO-8601 with an offset), for leases whose "
            "checkpoint is AT_TIMESTAMP"
        ),
    )
    positions.add_argument(
        "--dynamodb-region", help="kinesis.dynamodb.region (default: the stream's region)"
    )
    positions.add_argument(
        "--dynamodb-endpoint-url",
        help="kinesis.dynamodb.endpointUrl (default: the regional DynamoDB endpoint)",
    )
    _add_connection_flags(positions)
    positions.set_defaults(run=_cmd_positions)

    check = commands.add_parser(
        "check-options",
        help="check kinesis.* options as a read's or a write's definition does",
        description=(
            "Check kinesis.* options with the connector's own option parsing, as defining a read "
            "(the source) or a write (the sink) does: every option's value, the rules across "
            "options, a custom credentials class loaded. Calls no AWS service. Prints, per side, "
            "'accepted' or the rule id and message that refused the options; exits with 0 when "
            "every side checked accepts them, 1 otherwise. Secret options are not accepted as "
            "arguments: give them in --options-file (- for standard input)."
        ),
    )
    check_side = check.add_mutually_exclusive_group()
    check_side.add_argument("--source", action="store_true", help="check for a read only")
    check_side.add_argument("--sink", action="store_true", help="check for a write only")
    check.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one option, such as kinesis.streamName=orders (repeat for more)",
    )
    check.add_argument(
        "--options-file",
        metavar="FILE",
        help="key=value lines or a .json object of options; - reads standard input (either form)",
    )
    check.add_argument(
        "--default-region",
        metavar="REGION",
        help="stands in for the environment's region (default: the AWS SDK's default region chain)",
    )
    check.add_argument(
        "--jars", help="comma-separated jars that hold a custom credentials provider class"
    )
    check.add_argument(
        "--json", action="store_true", help="print the outcome per side as one line of JSON"
    )
    check.set_defaults(run=_cmd_check_options)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
