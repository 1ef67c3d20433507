"""How a builder argument becomes a ``kinesis.*`` option string, with its validation.

Each builder attribute carries an :class:`OptionField` in its dataclass metadata. The field says
which option it sets and what the Scala option table says about it (type, default, bounds), so that
a test can compare the two tables. Value patterns and the rules across options are not repeated
here: they are read from the jar's table (:mod:`spark_kinesis.option_table`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, Literal

from spark_kinesis.option_table import bundled_option_table
from spark_kinesis.types import EndingPosition, ShardPositions, StartingPosition

PREFIX = "kinesis."

Kind = Literal[
    "string", "boolean", "integer", "decimal", "duration", "choice", "position", "end_position"
]
"""``position`` and ``end_position`` are string options with the starting- and ending-position
syntax (a single position or a per-shard JSON document); the others match the table."""


@dataclass(frozen=True)
class OptionField:
    """What the builders know about one option.

    Parameters
    ----------
    key : str
        The option key without the ``kinesis.`` prefix.
    kind : Kind
        How the value is typed and rendered.
    default : str or None
        The default in the option's string form, ``None`` when derived or required.
    unit : {"ms", "s"} or None
        For integer options that hold a time: the unit, so a ``timedelta`` can be given.
    minimum, maximum : int or None
        Inclusive bounds of an integer option.
    choices : tuple of str
        The allowed names of a choice option.
    secret : bool
        The value is a credential; builders never show it.
    """

    key: str
    kind: Kind
    default: str | None = None
    unit: Literal["ms", "s"] | None = None
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    secret: bool = False

    @property
    def full_key(self) -> str:
        """The key with the ``kinesis.`` prefix."""
        return PREFIX + self.key


def option(spec: OptionField, doc: str = "") -> Any:  # noqa: ANN401 - dataclasses.field returns Any
    """Declare a builder attribute: unset (``None``) by default, carrying ``spec``."""
    return dataclasses.field(default=None, repr=False, metadata={"option": spec, "doc": doc})


def option_fields(cls_or_instance: Any) -> list[tuple[str, OptionField]]:  # noqa: ANN401
    """Return the (attribute name, field) pairs of a builder, in declaration order."""
    return [
        (f.name, f.metadata["option"])
        for f in dataclasses.fields(cls_or_instance)
        if "option" in f.metadata
    ]


def _fail(owner: str, name: str, spec: OptionField, value: object, allowed: str) -> ValueError:
    shown = "<secret>" if spec.secret else repr(value)
    return ValueError(f"{owner}({name}={shown}): option {spec.full_key} must be {allowed}")


def _type_error(owner: str, name: str, spec: OptionField, value: object, allowed: str) -> TypeError:
    return TypeError(
        f"{owner}({name}=...): option {spec.full_key} must be {allowed}, "
        f"got a value of type {type(value).__name__}"
    )


def _whole_units(
    owner: str, name: str, spec: OptionField, value: timedelta, unit: Literal["ms", "s"]
) -> int:
    micros = (value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds
    per_unit = 1_000 if unit == "ms" else 1_000_000
    if micros % per_unit:
        word = "milliseconds" if unit == "ms" else "seconds"
        raise _fail(owner, name, spec, value, f"a whole number of {word}")
    return micros // per_unit


def _integer(owner: str, name: str, spec: OptionField, value: object) -> int:
    if isinstance(value, bool):
        raise _type_error(owner, name, spec, value, "an int")
    if isinstance(value, timedelta) and spec.unit is not None:
        number = _whole_units(owner, name, spec, value, spec.unit)
    elif isinstance(value, int):
        number = value
    else:
        allowed = f"an int (in {spec.unit}) or a timedelta" if spec.unit else "an int"
        raise _type_error(owner, name, spec, value, allowed)
    low, high = spec.minimum, spec.maximum
    if low is not None and high is not None and not low <= number <= high:
        raise _fail(owner, name, spec, value, f"from {low} to {high}")
    if low is not None and high is None and number < low:
        raise _fail(owner, name, spec, value, f"at least {low}")
    return number


def render(owner: str, name: str, spec: OptionField, value: object) -> str:
    """Check ``value`` for ``spec`` and return the option's string form.

    Raises
    ------
    TypeError
        If the Python type is wrong.
    ValueError
        If the value is out of range, not an allowed choice, or malformed (for strings: not
        matching the option's pattern in the jar's table). The message names the argument, the
        option key, the value (unless secret) and what is allowed.
    """
    if spec.kind == "boolean":
        if not isinstance(value, bool):
            raise _type_error(owner, name, spec, value, "a bool")
        return "true" if value else "false"
    if spec.kind == "integer":
        return str(_integer(owner, name, spec, value))
    if spec.kind == "decimal":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(owner, name, spec, value, "an int or a float")
        if not math.isfinite(value) or value <= 0:
            raise _fail(owner, name, spec, value, "a number above 0")
        return repr(float(value))
    if spec.kind == "duration":
        if isinstance(value, timedelta):
            millis = _whole_units(owner, name, spec, value, "ms")
        elif isinstance(value, int) and not isinstance(value, bool):
            millis = value
        else:
            raise _type_error(owner, name, spec, value, "a timedelta or an int of milliseconds")
        if millis < 0:
            raise _fail(owner, name, spec, value, "a duration of zero or more")
        return f"{millis}ms"
    if spec.kind == "choice":
        text = value.value if isinstance(value, Enum) else value
        if not isinstance(text, str):
            raise _type_error(owner, name, spec, value, "one of " + ", ".join(spec.choices))
        for choice in spec.choices:
            if choice.lower() == text.strip().lower():
                return choice
        raise _fail(owner, name, spec, value, "one of " + ", ".join(spec.choices))
    if spec.kind in ("position", "end_position"):
        return _position_value(owner, name, spec, value)
    if not isinstance(value, str):
        raise _type_error(owner, name, spec, value, "a str")
    text = value.strip()
    if not text:
        raise _fail(owner, name, spec, value, "a non-empty string")
    info = bundled_option_table().get(spec.key)
    if info is not None and info.pattern is not None and re.fullmatch(info.pattern, text) is None:
        raise _fail(owner, name, spec, value, info.pattern_text or f"a match of {info.pattern}")
    return text


def _position_value(owner: str, name: str, spec: OptionField, value: object) -> str:
    single: type[StartingPosition] | type[EndingPosition] = (
        StartingPosition if spec.kind == "position" else EndingPosition
    )
    if isinstance(value, (single, ShardPositions)):
        document = value
    elif isinstance(value, str):
        try:
            if value.strip().startswith("{"):
                document = ShardPositions.from_json(value)
            else:
                return single.parse(value).option_value()
        except ValueError as error:
            message = f"{owner}({name}={value!r}): option {spec.full_key}: {error}"
            raise ValueError(message) from None
    else:
        raise _type_error(
            owner, name, spec, value, f"a {single.__name__}, a ShardPositions or their string form"
        )
    if isinstance(document, ShardPositions) and spec.kind == "end_position":
        for stream, shards in document.places.items():
            for shard, place in shards.items():
                if place.get("type") == "SHARD_END":
                    raise _fail(
                        owner,
                        name,
                        spec,
                        value,
                        f"positions other than SHARD_END (stream {stream!r}, shard {shard!r})",
                    )
    return document.option_value()


def check_extra_options(
    owner: str, extra: Mapping[str, str], known: Mapping[str, str]
) -> dict[str, str]:
    """Validate the escape hatch: string keys and values, none of them a key a typed argument sets.

    ``known`` maps each lower-cased full key to the name of the argument that sets it.
    """
    checked: dict[str, str] = {}
    for key, value in extra.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"{owner}(extra_options=...): keys and values must be str, "
                f"got {type(key).__name__} -> {type(value).__name__} for key {key!r}"
            )
        argument = known.get(key.lower()) or known.get((PREFIX + key).lower())
        if argument is not None:
            raise ValueError(
                f"{owner}(extra_options={{{key!r}: ...}}): this option has the typed argument "
                f"{argument}=...; use that instead"
            )
        checked[key] = value
    return checked
