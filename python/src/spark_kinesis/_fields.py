"""How a builder argument becomes a ``kinesis.*`` option string, with its validation.

A builder attribute declares only its option key (:func:`option`) and its Python type (the
annotation). All else about the option is read from the jar's option table
(:mod:`spark_kinesis.option_table`) when a builder first needs it, and the builders' ``Parameters``
sections are written from it when their class is defined (:func:`documented`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import textwrap
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, TypeVar

from spark_kinesis.option_table import (
    UNIT_WORDS,
    OptionInfo,
    PositionForms,
    bundled_option_table,
    bundled_position_grammar,
)
from spark_kinesis.types import _read_position

PREFIX = "kinesis."

Duration = int | timedelta | str
"""A time: a ``timedelta`` of whole milliseconds, an ``int`` in the unit the option's name says,
or a ``str`` as the jar reads it, such as ``"500ms"``, ``"30s"`` or ``"2m"``."""

# The jar's grammar of a duration (``OptionType.Duration``): digits, ``_`` allowed, then a unit.
_DURATION = re.compile(r"\s*\+?([0-9][0-9_]*)\s*(ms|s|sec|m|min|h|d)?\s*", re.ASCII | re.IGNORECASE)
_MS_PER = {"ms": 1, "s": 1000, "sec": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_MS_PER["d"] = 24 * _MS_PER["h"]


@dataclass(frozen=True)
class OptionField:
    """A builder argument (``name``) and the jar's row of the option it sets (``info``).

    ``forms``: the grammar of ``kinesis.startingPosition`` or ``kinesis.endingPosition``, or None.
    """

    name: str
    info: OptionInfo
    forms: PositionForms | None = None

    def shown(self, value: object) -> str:
        """Return a given value as messages and ``repr`` show it: ``<secret>`` for a credential."""
        return "<secret>" if self.info.secret and value is not None else repr(value)


def option(key: str) -> Any:  # noqa: ANN401 - dataclasses.field returns Any
    """Declare a builder attribute for option ``kinesis.<key>``: unset (``None``) by default."""
    return dataclasses.field(default=None, repr=False, metadata={"option": key})


@functools.cache
def _fields_of(cls: type) -> tuple[OptionField, ...]:
    table = bundled_option_table()
    found = []
    for f in dataclasses.fields(cls):
        key = f.metadata.get("option")
        if key is None:
            continue
        if key not in table:
            raise RuntimeError(
                f"{cls.__name__}.{f.name}: the connector jar's option table has no {PREFIX}{key}; "
                "use the jar of this package's version"
            )
        found.append(OptionField(f.name, table[key], bundled_position_grammar().forms_of(key)))
    return tuple(found)


def option_fields(cls_or_instance: object) -> tuple[OptionField, ...]:
    """Return the option arguments of a builder class or instance, in declaration order."""
    cls = cls_or_instance if isinstance(cls_or_instance, type) else type(cls_or_instance)
    return _fields_of(cls)


def _fail(owner: str, spec: OptionField, value: object, allowed: str) -> ValueError:
    shown = f"{owner}({spec.name}={spec.shown(value)})"
    return ValueError(f"{shown}: option {spec.info.full_key} must be {allowed}")


def _type_error(owner: str, spec: OptionField, value: object, allowed: str) -> TypeError:
    return TypeError(
        f"{owner}({spec.name}=...): option {spec.info.full_key} must be {allowed}, "
        f"got a value of type {type(value).__name__}"
    )


def _duration(owner: str, spec: OptionField, value: object) -> str:
    """Check a duration; return the bare number when it counts the option's unit whole, else ms."""
    unit = spec.info.unit or "ms"
    if isinstance(value, timedelta):
        if value % timedelta(milliseconds=1):
            raise _fail(owner, spec, value, "a whole number of milliseconds")
        ms = value // timedelta(milliseconds=1)
    elif isinstance(value, int) and not isinstance(value, bool):
        ms = value * _MS_PER[unit]
    elif isinstance(value, str) and (match := _DURATION.fullmatch(value)):
        ms = int(match[1].replace("_", "")) * _MS_PER[(match[2] or unit).lower()]
    elif isinstance(value, str):
        allowed = "a duration such as 500ms, 30s, 2m, 1h or 1d, or a bare number of "
        raise _fail(owner, spec, value, allowed + UNIT_WORDS[unit])
    else:
        allowed = f"a timedelta, an int (in {unit}) or a str such as 30s"
        raise _type_error(owner, spec, value, allowed)
    _check_bounds(owner, spec, value, ms)
    if not 0 <= ms < 2**63:
        raise _fail(owner, spec, value, "a duration of at least 0 and below 2^63 ms")
    per = _MS_PER[unit]
    return str(ms // per) if ms % per == 0 else f"{ms}ms"


def _check_bounds(owner: str, spec: OptionField, value: object, number: float) -> None:
    """Refuse a number outside the option's bounds in the jar's table, or outside its type."""
    info = spec.info
    if info.type == "integer" and not -(2**63) <= number < 2**63:
        raise _fail(owner, spec, value, f"a whole number from {-(2**63)} to {2**63 - 1}")
    if (
        (info.minimum is not None and number < info.minimum)
        or (info.above is not None and number <= info.above)
        or (info.maximum is not None and number > info.maximum)
    ):
        raise _fail(owner, spec, value, str(info.bounds_text))


def render(owner: str, spec: OptionField, value: object) -> str:
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
    kind = spec.info.type
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _type_error(owner, spec, value, "a bool")
        return "true" if value else "false"
    if kind == "duration":
        return _duration(owner, spec, value)
    if kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise _type_error(owner, spec, value, "an int")
        _check_bounds(owner, spec, value, value)
        return str(value)
    if kind == "decimal":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _type_error(owner, spec, value, "an int or a float")
        if not math.isfinite(value):
            raise _fail(owner, spec, value, "a finite number")
        _check_bounds(owner, spec, value, value)
        return repr(float(value))
    choices = spec.info.choices
    if kind == "choice":
        text = value.value if isinstance(value, Enum) else value
        if not isinstance(text, str):
            raise _type_error(owner, spec, value, "one of " + ", ".join(choices))
        for choice in choices:
            if choice.lower() == text.strip().lower():
                return choice
        raise _fail(owner, spec, value, "one of " + ", ".join(choices))
    if spec.forms is not None:
        try:
            return _read_position(value, spec.forms)
        except TypeError as error:
            raise _type_error(owner, spec, value, str(error)) from None
        except ValueError as error:
            shown = f"{owner}({spec.name}={value!r}): option {spec.info.full_key}"
            raise ValueError(f"{shown}: {error}") from None
    if not isinstance(value, str):
        raise _type_error(owner, spec, value, "a str")
    text = value.strip()
    if not text:
        raise _fail(owner, spec, value, "a non-empty string")
    _check_pattern(owner, spec, value, text)
    return text


def _check_pattern(owner: str, spec: OptionField, value: object, text: str) -> None:
    info = spec.info
    if info.pattern is None:
        return
    allowed = info.pattern_text or f"a match of {info.pattern}"
    if info.pattern_list_of is None:
        if re.fullmatch(info.pattern, text) is None:
            raise _fail(owner, spec, value, allowed)
        return
    items = [item.strip() for item in text.split(",")]
    for item in items:
        if re.fullmatch(info.pattern, item) is None:
            raise _fail(owner, spec, value, f"{allowed}; {item!r} is not {info.pattern_list_of}")
    for position, item in enumerate(items):
        if item in items[:position]:
            raise _fail(owner, spec, value, f"{allowed}; {item!r} is listed twice")


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


# --- the Parameters section of the builders' docstrings, written from the jar's table ------------

_EXTRA_OPTIONS_DOC = """extra_options : Mapping[str, str], optional
    Escape hatch: options passed through unchecked, for keys this builder does not know."""


def _type_text(hint: object, info: OptionInfo) -> str:
    if info.type == "duration":
        return f"int ({info.unit}), timedelta or str"
    args = [arg for arg in typing.get_args(hint) or (hint,) if arg is not type(None)]
    names = [getattr(arg, "__name__", str(arg)) for arg in args]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def parameters_section(cls: type) -> str:
    """Return the numpy-style ``Parameters`` section of a builder, from the jar's option table."""
    hints = typing.get_type_hints(cls)
    entries = []
    for spec in option_fields(cls):
        info = spec.info
        facts = [info.doc]
        bounds = info.bounds_text
        if bounds:
            facts.append(bounds[0].upper() + bounds[1:] + ".")
        if info.choices:
            facts.append(f"One of {', '.join(info.choices)}.")
        facts.append("Required." if info.required else f"Default: {info.default_text}.")
        if info.secret:
            facts.append("Secret: never shown by ``repr`` or in errors.")
        body = f"``{spec.info.full_key}``: " + " ".join(facts)
        wrapped = textwrap.fill(body, width=96, initial_indent="    ", subsequent_indent="    ")
        entries.append(f"{spec.name} : {_type_text(hints[spec.name], info)}, optional\n{wrapped}")
    entries.append(_EXTRA_OPTIONS_DOC)
    return "Parameters\n----------\n" + "\n".join(entries)


Builder = TypeVar("Builder", bound=type)


def documented(cls: Builder) -> Builder:
    """Class decorator: put the ``Parameters`` section, from the jar's table, into the docstring.

    The section goes before ``Examples`` when there is one. Without a readable jar (a source
    checkout that was not built) the docstring says where to look instead.
    """
    try:
        section = parameters_section(cls)
    except (OSError, RuntimeError, ValueError, KeyError):
        section = (
            "Parameters\n----------\n"
            "Listed from the connector jar's option table, which this installation lacks; run "
            "``spark-kinesis options`` where the package carries its jars."
        )
    doc = cls.__doc__ or ""
    head, marker, tail = doc.partition("\n    Examples\n    --------\n")
    indented = textwrap.indent(section, "    ")
    cls.__doc__ = f"{head.rstrip()}\n\n{indented}\n" + (f"{marker}{tail}" if marker else "")
    return cls
