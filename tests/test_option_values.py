"""Each option's single-value check is the same in the Python builders and in the jar.

For every argument of the builders, samples of its Python type are made from the jar's option
table (its bounds, choices, pattern and type): values inside and outside the allowed range, at its
edges, and of the wrong shape. Each goes, on its own beside a stream and a region, through the
builder and through the jar's option parsing (``CheckOptionsTool``, one JVM for all samples). Both
must accept it, or both refuse it; a refusal by a rule across options must name the same rule.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from harness.option_checks import check_in_jar
from spark_kinesis import KinesisSink, KinesisSource
from spark_kinesis._fields import OptionField, option_fields
from spark_kinesis.option_table import OptionRuleError, bundled_position_grammar

BUILDERS = {"source": KinesisSource, "sink": KinesisSink}

# Strings that patterns of the table tell apart: URLs, ARNs, host names, blanks.
STRINGS = [
    "orders",
    " ",
    "a b",
    "https://kinesis.us-east-1.amazonaws.com",
    "http://127.0.0.1:4566",
    "ftp://example.com",
    "arn:aws:iam::123456789012:role/reader",
    "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
    "proxy.corp",
    "[::1]",
    "proxy.corp:3128",
    "user@proxy.corp",
    "orders,clicks",
    "orders, clicks,orders",
    "orders,",
    "arn:aws:kinesis:us-east-1:123456789012:stream/orders,arn:aws:kinesis:us-east-1:123456789012:stream/x",
    "arn:aws:kinesis:us-east-1:123456789012:stream/orders/consumer/reader:1700000000",
    "team=risk,env=prod",
]

POSITIONS = [
    "LATEST",
    "trim_horizon",
    "EARLIEST",
    "SHARD_END",
    "AT_TIMESTAMP 2023-08-30T19:00:05-08:00",
    "AT_TIMESTAMP yesterday",
    "NOWHERE",
    '{"orders": {"shardId-000000000000": {"type": "TRIM_HORIZON"}}}',
    '{"orders": {"shardId-000000000000": {"type": "SHARD_END"}}}',
    '{"orders": {"shardId-000000000000": {"type": "AT_SEQUENCE_NUMBER", "sequenceNumber": "x"}}}',
]

# What a user may write for a time option, valid or not.
DURATIONS = [
    "500ms",
    "30s",
    "2m",
    "2min",
    "1h",
    "1d",
    " 3 SEC ",
    "1_000",
    "+5",
    "-1s",
    "1x",
    "1.5s",
    "",
    "s",
    "106751991167d",
    "106751991168d",
    "9223372036854775807",
    "9223372036854775808",
]

# Beyond a signed 64-bit integer, and the edges of a 32-bit one.
LARGE = [2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63]


def samples(spec: OptionField) -> list[Any]:
    """Python values for ``spec``: inside, at and past its bounds, and of the wrong shape."""
    info = spec.info
    kind = info.type
    if kind == "boolean":
        return [True, False]
    if kind == "choice":
        return [*info.choices, *(c.lower() for c in info.choices), "none-of-these"]
    if kind == "integer":
        edges = {-1, 0, 1, 2, 1000, *LARGE}
        for bound in (info.minimum, info.maximum):
            if bound is not None:
                edges |= {int(bound) - 1, int(bound), int(bound) + 1}
        return sorted(edges)
    if kind == "decimal":
        edges = {-1.0, 0.0, 1e-9, 0.5, 1.0, 1000.0, 1000.5, 5000.0, 1e300}
        for bound in (info.minimum, info.maximum):
            if bound is not None:
                edges |= {float(bound) - 0.5, float(bound), float(bound) + 0.5}
        return [*sorted(edges), 3, float("inf"), float("nan")]
    if kind == "duration":
        # Bounds are milliseconds; an int counts the option's unit.
        edges = {-1, 0, 1, 500, 2**53, 2**62, *LARGE}
        for bound in (info.minimum, info.maximum):
            if bound is not None:
                edges |= {timedelta(milliseconds=int(bound) + d) for d in (-1, 0, 1)}
        return [
            *edges,
            timedelta(minutes=2),
            timedelta(microseconds=1500),
            timedelta(milliseconds=1500),
            timedelta(seconds=-1),
            *DURATIONS,
        ]
    if spec.forms is not None:
        return list(POSITIONS)
    return list(STRINGS)


def jar_text(spec: OptionField, value: Any) -> str:
    """The string the jar gets for a sample: what a user writes in ``.option`` for that value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timedelta):
        count = value / timedelta(milliseconds=1)
        return (str(int(count)) if count.is_integer() else str(count)) + "ms"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def context(side: str, key: str) -> dict[str, str]:
    """A stream and a region, unless the sample is one of them."""
    options = {"region": "us-east-1"}
    if key not in ("streamName", "streamArn"):
        options["streamName"] = "orders"
    return {k: v for k, v in options.items() if k != key}


Case = tuple[str, OptionField, Any]
Outcome = tuple[bool, str | None]


def cases() -> list[Case]:
    found = []
    for side, builder in BUILDERS.items():
        for spec in option_fields(builder):
            if spec.info.key == "credentialProviderClass":
                continue  # the jar loads the class: a check of its classpath, which Python cannot make
            found += [(side, spec, value) for value in samples(spec)]
    return found


def python_outcome(side: str, spec: OptionField, value: Any) -> Outcome:
    given: dict[str, Any] = {BUILDER_NAMES[side][key]: text for key, text in context(side, spec.info.key).items()}
    given[spec.name] = value
    try:
        BUILDERS[side](**given)
    except OptionRuleError as error:
        return False, error.rule_id
    except (TypeError, ValueError):
        return False, None
    return True, None


BUILDER_NAMES = {side: {s.info.key: s.name for s in option_fields(b)} for side, b in BUILDERS.items()}


@pytest.fixture(scope="module")
def compared() -> list[tuple[Case, Outcome, Outcome, str | None]]:

    every = cases()
    results = check_in_jar(
        [(side, {**context(side, spec.info.key), spec.info.key: jar_text(spec, value)}) for side, spec, value in every]
    )
    return [
        (case, python_outcome(*case), (r["accepted"], r["rule"]), r["message"])
        for case, r in zip(every, results, strict=True)
    ]


def test_every_option_value_is_accepted_or_refused_alike(compared):
    differ = [
        f"{side} {spec.info.full_key}={jar_text(spec, value)!r} (python {value!r}): "
        f"python {in_python}, jar {in_jar} {message or ''}"
        for (side, spec, value), in_python, in_jar, message in compared
        if in_python != in_jar
    ]
    assert differ == []


def test_the_samples_reach_both_outcomes_for_every_checked_option(compared):
    # Each option with a bound, choice or pattern gets a value its check accepts (the options are
    # accepted, or refused by a rule across options) and one it refuses: the walk cannot pass on
    # samples that are all valid, or all wrong.
    seen: dict[str, set[bool]] = {}
    for (_, spec, _), _, (accepted, rule), _ in compared:
        seen.setdefault(spec.info.key, set()).add(accepted or rule is not None)
    checked = {
        spec.info.key
        for builder in BUILDERS.values()
        for spec in option_fields(builder)
        if spec.info.minimum is not None
        or spec.info.above is not None
        or spec.info.choices
        or spec.info.pattern
        or spec.forms
    }
    one_sided = sorted(key for key in checked if seen.get(key) != {True, False})
    assert one_sided == []
    assert bundled_position_grammar().start.option in seen
