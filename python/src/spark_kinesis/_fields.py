"""How a builder argument becomes a ``kinesis.*`` option string, with its validation.

A builder attribute declares only its name, its option key (:func:`option`) and its Python type
(the annotation; :data:`Millis` and :data:`Seconds` say the unit of a time). Everything else about
the option, its type, default, bounds, choices, secrecy, pattern and text, is read from the jar's
option table (:mod:`spark_kinesis.option_table`) when a builder first needs it, and the builders'
``Parameters`` sections are written from it when their class is defined (:func:`documented`).
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
from typing import Annotated, Any, Literal, TypeVar

from spark_kinesis.option_table import (
    OptionInfo,
    PositionForms,
    bounds_text,
    bundled_option_table,
    bundled_position_grammar,
)
from spark_kinesis.types import _read_position

PREFIX = "kinesis."

Millis = Annotated[int | timedelta, "ms"]
"""A time: a ``timedelta``, or an ``int`` of milliseconds."""

Seconds = Annotated[int | timedelta, "s"]
"""A time: a ``timedelta`` of whole seconds, or an ``int`` of seconds."""

Unit = Literal["ms", "s"]


@dataclass(frozen=True)
class OptionField:
    """A builder argument and the jar's row of the option it sets.

    Parameters
    ----------
    name : str
        The argument's name.
    info : OptionInfo
        The option, as the jar's table declares it.
    unit : {"ms", "s"} or None
        For a time given as an ``int``: its unit (from the argument's type), so that a
        ``timedelta`` can be given too.
    forms : PositionForms or None
        For ``kinesis.startingPosition`` and ``kinesis.endingPosition``: their grammar.
    """

    name: str
    info: OptionInfo
    unit: Unit | None = None
    forms: PositionForms | None = None

    def shown(self, value: object) -> str:
        """Return a given value as messages and ``repr`` show it: ``<secret>`` for a credential."""
        return "<secret>" if self.info.secret and value is not None else repr(value)


def option(key: str) -> Any:  # noqa: ANN401 - dataclasses.field returns Any
    """Declare a builder attribute for option ``kinesis.<key>``: unset (``None``) by default."""
    return dataclasses.field(default=None, repr=False, metadata={"option": key})


def _unit(hint: object) -> Unit | None:
    for arg in typing.get_args(hint):
        if typing.get_origin(arg) is Annotated:
            unit: Unit = arg.__metadata__[0]
            return unit
    return None


@functools.cache
def _fields_of(cls: type) -> tuple[OptionField, ...]:
    table = bundled_option_table()
    hints = typing.get_type_hints(cls, include_extras=True)
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
        forms = bundled_position_grammar().forms_of(key) if table[key].type == "string" else None
        found.append(OptionField(f.name, table[key], _unit(hints[f.name]), forms))
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


def _integer(owner: str, spec: OptionField, value: object) -> int:
    if isinstance(value, timedelta) and spec.unit is not None:
        step = timedelta(milliseconds=1) if spec.unit == "ms" else timedelta(seconds=1)
        if value % step:
            word = "milliseconds" if spec.unit == "ms" else "seconds"
            raise _fail(owner, spec, value, f"a whole number of {word}")
        number = value // step
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        allowed = f"an int (in {spec.unit}) or a timedelta" if spec.unit else "an int"
        raise _type_error(owner, spec, value, allowed)
    _check_bounds(owner, spec, value, number)
    return number


# The jar holds an integer, and a duration in milliseconds, as a signed 64-bit number.
_LONG_RANGE = (-(2**63), 2**63 - 1)


def _check_bounds(owner: str, spec: OptionField, value: object, number: float) -> None:
    """Refuse a number outside the option's bounds in the jar's table, or outside its type."""
    info = spec.info
    if info.type in ("integer", "duration") and not _LONG_RANGE[0] <= number <= _LONG_RANGE[1]:
        raise _fail(owner, spec, value, "a whole number from {} to {}".format(*_LONG_RANGE))
    if (
        (info.minimum is not None and number < info.minimum)
        or (info.above is not None and number <= info.above)
        or (info.maximum is not None and number > info.maximum)
    ):
        raise _fail(owner, spec, value, str(bounds_text(info)))


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
    if kind in ("integer", "duration"):
        # A duration is an integer of milliseconds (its argument's type is Millis).
        number = _integer(owner, spec, value)
        return f"{number}ms" if kind == "duration" else str(number)
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


def _type_text(hint: object) -> str:
    names = []
    for arg in typing.get_args(hint) or (hint,):
        if arg is type(None):
            continue
        if typing.get_origin(arg) is Annotated:
            names.append(f"int ({arg.__metadata__[0]}) or timedelta")
        else:
            names.append(getattr(arg, "__name__", str(arg)))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def parameters_section(cls: type) -> str:
    """Return the numpy-style ``Parameters`` section of a builder, from the jar's option table."""
    hints = typing.get_type_hints(cls, include_extras=True)
    entries = []
    for spec in option_fields(cls):
        info = spec.info
        facts = [info.doc]
        bounds = bounds_text(info)
        if bounds:
            facts.append(bounds[0].upper() + bounds[1:] + ".")
        if info.choices:
            facts.append(f"One of {', '.join(info.choices)}.")
        unit = f" {spec.unit}" if spec.unit and (info.default or "").isdigit() else ""
        facts.append("Required." if info.required else f"Default: {info.default_text}{unit}.")
        if info.secret:
            facts.append("Secret: never shown by ``repr`` or in errors.")
        body = f"``{spec.info.full_key}``: " + " ".join(facts)
        wrapped = textwrap.fill(body, width=96, initial_indent="    ", subsequent_indent="    ")
        entries.append(f"{spec.name} : {_type_text(hints[spec.name])}, optional\n{wrapped}")
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
