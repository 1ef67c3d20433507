"""The connector's option table, read from the jar it is built into.

The Maven build writes the Scala option table (``KinesisOptions.scala``), the rules across
options (``OptionRules.scala``) and the grammar of positions (``ShardPositions.scala``) as JSON into
the jar at ``META-INF/spark-kinesis/options.json``, so that ``spark-kinesis options``,
``docs/options.md`` and the builders' facts, docstrings and checks are exactly what the jar accepts.
"""

from __future__ import annotations

import functools
import json
import os
import re
import textwrap
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = [
    "OptionInfo",
    "OptionRule",
    "OptionRuleError",
    "PositionForms",
    "PositionGrammar",
    "bundled_option_rules",
    "bundled_option_table",
    "bundled_position_grammar",
    "load_option_rules",
    "load_option_table",
    "load_position_grammar",
    "render_markdown",
    "render_text",
]

RESOURCE = "META-INF/spark-kinesis/options.json"
FORMAT_VERSION = 5
"""The layout of the table this package reads: that of the jar of its own version."""

Scope = Literal["source", "sink", "both", "functions"]
_Row = TypeVar("_Row")


@dataclass(frozen=True)
class OptionInfo:
    """One row of the option table, as the jar declares it."""

    key: str
    type: str
    unit: str | None
    """For a duration: what a bare number counts, ``ms`` or ``s`` (its bounds are milliseconds)."""
    choices: tuple[str, ...]
    default: str | None
    default_text: str
    required: bool
    scope: Scope
    secret: bool
    not_yet_supported: str | None
    doc: str
    compatibility: str | None
    """For an option accepted only for compatibility with the awslabs connector, and ignored: what
    the connector does instead (``None`` for every option that has an effect)."""
    minimum: int | float | None
    """The smallest value allowed (inclusive)."""
    above: int | float | None
    """A bound the value must be above (exclusive)."""
    maximum: int | float | None
    """The largest value allowed (inclusive)."""
    bounds_text: str | None
    """The bounds in words, as the jar's errors say them: ``from 1s to 1h``, ``at least 1``."""
    pattern: str | None
    """A regular expression the whole string value must match (``None``: any non-empty string)."""
    pattern_text: str | None
    """What ``pattern`` allows, in words."""
    pattern_list_of: str | None
    """When set, the value is a comma-separated list: each trimmed element matches ``pattern`` and
    none is listed twice; this names one element in words."""

    @property
    def full_key(self) -> str:
        """The key with the ``kinesis.`` prefix."""
        return "kinesis." + self.key

    def applies_to(self, side: Literal["source", "sink"]) -> bool:
        """Whether the option is read by the source or the sink."""
        return self.scope in (side, "both")


_FIELD_NAMES = {"min": "minimum", "max": "maximum"}


def _row(cls: type[_Row], raw: Mapping[str, Any]) -> _Row:
    """Make a row of the table from its JSON object: ``defaultText`` becomes ``default_text`` ..."""
    fields = {}
    for key, value in raw.items():
        name = _FIELD_NAMES.get(key) or re.sub("[A-Z]", lambda m: "_" + m[0].lower(), key)
        fields[name] = tuple(value) if isinstance(value, list) else value
    return cls(**fields)


Condition = Mapping[str, Any]
"""A condition of a rule, as the jar exports it: ``{"set": key}``, ``{"equals": [key, value]}``,
``{"matches": [key, regex]}``, ``{"not": condition}``, ``{"all": [...]}`` or ``{"any": [...]}``."""

_VALUE = re.compile(r"\{kinesis\.([A-Za-z0-9_.]+)\}")


@dataclass(frozen=True)
class OptionRule:
    """A rule across options, declared once in the jar (``OptionRules.scala``).

    Where ``when`` holds, ``require`` must hold too. Conditions see each option's canonical value:
    the value given, else its fixed default.
    """

    id: str
    scope: Scope
    when: Condition
    require: Condition
    message: str
    """The error; ``{kinesis.<key>}`` stands for that option's value."""

    def applies_to(self, side: Literal["source", "sink"]) -> bool:
        """Whether the rule checks the options of the source or of the sink."""
        return self.scope in (side, "both")

    def option_keys(self) -> list[str]:
        """Return the options the rule reads (keys without the prefix), in order of appearance."""

        def keys(condition: Condition) -> list[str]:
            ((kind, operand),) = condition.items()
            if kind in ("set", "equals", "matches"):
                return [operand if kind == "set" else operand[0]]
            inner = [operand] if kind == "not" else operand
            return [key for each in inner for key in keys(each)]

        return list(dict.fromkeys(keys(self.when) + keys(self.require)))

    def broken_by(self, given: Mapping[str, str], defaults: Mapping[str, str]) -> bool:
        """Whether options ``given`` (key without prefix to canonical value) break this rule.

        ``defaults`` holds the fixed defaults, in the same form.
        """

        def holds(condition: Condition) -> bool:
            ((kind, operand),) = condition.items()
            if kind == "set":
                return operand in given
            if kind == "not":
                return not holds(operand)
            if kind == "all":
                return all(holds(inner) for inner in operand)
            if kind == "any":
                return any(holds(inner) for inner in operand)
            key, expected = str(operand[0]), str(operand[1])
            value = given.get(key, defaults.get(key))
            if kind == "equals":
                return value == expected
            if kind == "matches":
                return value is not None and re.fullmatch(expected, value) is not None
            raise ValueError(
                f"rule {self.id}: condition {kind!r} is unknown to this spark-kinesis package; "
                "use the package of the jar's version"
            )

        return holds(self.when) and not holds(self.require)

    def render_message(self, given: Mapping[str, str], defaults: Mapping[str, str]) -> str:
        """Return the message with each ``{kinesis.<key>}`` replaced by that option's value."""
        return _VALUE.sub(lambda m: given.get(m[1], defaults.get(m[1], "")), self.message)


class OptionRuleError(ValueError):
    """Options break a rule of the jar's option table.

    Attributes
    ----------
    rule_id : str
        The rule's stable id (see ``docs/options.md``).
    rule_message : str
        The jar's message for it, word for word.
    """

    def __init__(self, message: str, rule_id: str, rule_message: str) -> None:
        super().__init__(message)
        self.rule_id = rule_id
        self.rule_message = rule_message


@dataclass(frozen=True)
class PositionForms:
    """The forms of ``kinesis.startingPosition`` or of ``kinesis.endingPosition``."""

    option: str
    """The option's key, without the prefix."""
    names: Mapping[str, str]
    """Each single-position name (upper case) to its canonical name."""
    place_types: tuple[str, ...]
    """The ``type`` values a per-shard document may give."""
    allowed: str
    """Every accepted form, in words, as the jar's errors say it."""


@dataclass(frozen=True)
class PositionGrammar:
    """The grammar of positions, as the jar parses them (``ShardPositions.scala``)."""

    start: PositionForms
    end: PositionForms
    at_timestamp: str
    """The keyword before an ISO-8601 instant: ``AT_TIMESTAMP <instant>``."""
    shard_id_pattern: str
    shard_id_text: str
    sequence_number_pattern: str
    arn_field: str
    """The key of a stream's object that holds the stream's ARN."""
    created_field: str
    """The key of a stream's object that holds the stream's creation time."""

    def forms_of(self, key: str) -> PositionForms | None:
        """Return the forms of option ``key`` (without prefix), or ``None`` for other options."""
        return next((f for f in (self.start, self.end) if f.option == key), None)


def _default_jar() -> str:
    from spark_kinesis.lines import JAR_ENV_VAR, JarNotFoundError, built_lines, jar_paths

    if os.environ.get(JAR_ENV_VAR):
        candidates = jar_paths()
        for candidate in candidates:
            with zipfile.ZipFile(candidate) as archive:
                if RESOURCE in archive.namelist():
                    return candidate
        return candidates[0]
    lines = built_lines()
    if not lines:
        raise JarNotFoundError(
            "The spark-kinesis package carries no line jar: run scripts/build.sh in the repository "
            "(or install the published wheel)."
        )
    newest = lines[-1]
    return jar_paths(spark=f"{newest.spark[0]}.{newest.spark[1]}", scala=newest.scala)[0]


@functools.cache
def _read_bundled() -> dict[str, Any]:
    """Read the bundled jar's table once per process: the builders need it when they are defined."""
    return _read(_default_jar())


def _read(jar: str | None) -> dict[str, Any]:
    if jar is None:
        return _read_bundled()
    with zipfile.ZipFile(jar) as archive:
        try:
            data: dict[str, Any] = json.loads(archive.read(RESOURCE).decode("utf-8"))
        except KeyError:
            raise ValueError(f"{jar} has no {RESOURCE}; it is not a spark-kinesis jar") from None
    if data.get("formatVersion") != FORMAT_VERSION:
        raise ValueError(
            f"{jar}: option table format {data.get('formatVersion')!r} is not supported by this "
            f"package (expected {FORMAT_VERSION}); use the spark-kinesis package of that version"
        )
    return data


def load_option_table(jar: str | None = None) -> list[OptionInfo]:
    """Read the option table from the connector jar.

    Parameters
    ----------
    jar : str, optional
        Path of a connector jar; by default a bundled line jar (every line declares the same
        table), or the first of ``SPARK_KINESIS_JAR``'s jars that carries it.

    Returns
    -------
    list of OptionInfo
        Every option, in documentation order.

    Raises
    ------
    ValueError
        If the jar carries no option table, or one of another format version.

    Examples
    --------
    >>> table = load_option_table()  # doctest: +SKIP
    >>> [o.full_key for o in table][:2]  # doctest: +SKIP
    ['kinesis.endpointUrl', 'kinesis.region']
    """
    return [_row(OptionInfo, raw) for raw in _read(jar)["options"]]


def load_option_rules(jar: str | None = None) -> list[OptionRule]:
    """Read the rules across options from the connector jar, in the order the jar checks them.

    Parameters
    ----------
    jar : str, optional
        Path of a connector jar, chosen as by :func:`load_option_table` when not given.

    Returns
    -------
    list of OptionRule
        Every rule; the first one that options break is the one reported.

    Raises
    ------
    ValueError
        If the jar carries no option table, or one of another format version.
    """
    return [_row(OptionRule, raw) for raw in _read(jar)["rules"]]


def load_position_grammar(jar: str | None = None) -> PositionGrammar:
    """Read the grammar of positions from a connector jar (chosen as by :func:`load_option_table`).

    Raises
    ------
    ValueError
        If the jar carries no option table, or one of another format version.
    """
    raw = dict(_read(jar)["positions"])
    identity = raw.pop("identityFields")
    raw.update(arnField=identity["arn"], createdField=identity["created"])
    raw.update(start=_row(PositionForms, raw["start"]), end=_row(PositionForms, raw["end"]))
    return _row(PositionGrammar, raw)


@functools.cache
def bundled_position_grammar() -> PositionGrammar:
    """Return the bundled jar's grammar of positions, read once per process."""
    return load_position_grammar()


@functools.cache
def bundled_option_table() -> Mapping[str, OptionInfo]:
    """Return the bundled jar's option table by key (without prefix), read once per process."""
    return {info.key: info for info in load_option_table()}


@functools.cache
def bundled_option_rules() -> tuple[OptionRule, ...]:
    """Return the bundled jar's rules, read once per process (see :func:`load_option_rules`)."""
    return tuple(load_option_rules())


UNIT_WORDS = {"ms": "milliseconds", "s": "seconds"}
"""What a bare number of a duration counts, by the option's ``unit``."""


def _type_text(info: OptionInfo) -> str:
    if info.type == "choice":
        return "one of " + ", ".join(info.choices)
    kind = f"duration, bare number in {UNIT_WORDS[info.unit]}" if info.unit else info.type
    bounds = info.bounds_text
    return f"{kind} ({bounds.removeprefix('from ')})" if bounds else kind


_SCOPE_TEXT = {
    "source": "source",
    "sink": "sink",
    "both": "source, sink",
    "functions": "Glue Schema Registry functions",
}


def render_markdown(table: list[OptionInfo]) -> str:
    """Render the option reference as Markdown: the content of ``docs/options.md``."""
    lines = [
        "# Options",
        "",
        "Generated from the option table in the connector jar (declared once in",
        "`src/main/scala/io/sparkkinesis/config/KinesisOptions.scala`) by",
        "`scripts/options-doc.sh`; a test fails when this file is out of date.",
        'Keys are case-insensitive. Options marked "not yet" are part of the public contract but',
        'rejected by this version with a clear error. Options marked "compatibility: ignored"',
        "are accepted so that jobs written for the awslabs connector run unchanged, have no",
        "effect, and log a warning that says what the connector does instead. The Python builders",
        "(`spark_kinesis.KinesisSource`, `spark_kinesis.KinesisSink`) take every other option as a",
        "typed argument; `spark-kinesis options` prints this table. Every time option takes a",
        "duration such as 500ms, 30s, 2m, 1h or 1d, or a bare number in the unit its name says",
        "(milliseconds, or seconds for a name ending in Sec), as its type says.",
        "",
        "| option | type | default | applies to | description |",
        "|---|---|---|---|---|",
    ]
    for info in table:
        status = (
            " (not yet)"
            if info.not_yet_supported
            else " (compatibility: ignored)"
            if info.compatibility
            else ""
        )
        secret = " Secret: never logged or shown." if info.secret else ""
        lines.append(
            f"| `{info.full_key}`{status} | {_type_text(info)} | {info.default_text} | "
            f"{_SCOPE_TEXT[info.scope]} | {info.doc}{secret} |"
        )
    return "\n".join(lines) + "\n"


def render_text(table: list[OptionInfo], width: int = 100) -> str:
    """Render the option reference for a terminal: one block per option."""
    blocks = []
    for info in table:
        named = {
            "required": info.required,
            "secret": info.secret,
            "not supported yet": info.not_yet_supported,
            "compatibility: ignored": info.compatibility,
        }
        flags = [flag for flag, on in named.items() if on]
        head = info.full_key + (f"  [{', '.join(flags)}]" if flags else "")
        body = [
            f"type: {_type_text(info)}; default: {info.default_text}; "
            f"applies to: {_SCOPE_TEXT[info.scope]}",
            info.doc,
        ]
        wrapped = [
            textwrap.fill(line, width=width, initial_indent="    ", subsequent_indent="    ")
            for line in body
        ]
        blocks.append("\n".join([head, *wrapped]))
    return "\n\n".join(blocks) + "\n"
