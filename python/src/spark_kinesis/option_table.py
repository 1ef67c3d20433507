"""The connector's option table, read from the jar it is built into.

The Maven build writes the Scala option table (``KinesisOptions.scala``) as JSON into the jar at
``META-INF/spark-kinesis/options.json``. Reading it here means the reference printed by
``spark-kinesis options`` and ``docs/options.md`` are exactly what the jar accepts.
"""

from __future__ import annotations

import json
import zipfile
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["OptionInfo", "load_option_table", "render_markdown", "render_text"]

RESOURCE = "META-INF/spark-kinesis/options.json"
FORMAT_VERSION = 1

Scope = Literal["source", "sink", "both"]


@dataclass(frozen=True)
class OptionInfo:
    """One row of the option table, as the jar declares it."""

    key: str
    type: str
    choices: tuple[str, ...]
    default: str | None
    default_text: str
    required: bool
    scope: Scope
    minimum: int | None
    maximum: int | None
    secret: bool
    not_yet_supported: str | None
    doc: str

    @property
    def full_key(self) -> str:
        """The key with the ``kinesis.`` prefix."""
        return "kinesis." + self.key

    def applies_to(self, side: Literal["source", "sink"]) -> bool:
        """Whether the option is read by the source or the sink."""
        return self.scope in (side, "both")


def _info(raw: dict[str, Any]) -> OptionInfo:
    return OptionInfo(
        key=raw["key"],
        type=raw["type"],
        choices=tuple(raw["choices"]),
        default=raw["default"],
        default_text=raw["defaultText"],
        required=raw["required"],
        scope=raw["scope"],
        minimum=raw["min"],
        maximum=raw["max"],
        secret=raw["secret"],
        not_yet_supported=raw["notYetSupported"],
        doc=raw["doc"],
    )


def _default_jar() -> str:
    import os

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
        If the jar carries no option table or one of an unknown format version.

    Examples
    --------
    >>> table = load_option_table()  # doctest: +SKIP
    >>> [o.full_key for o in table][:2]  # doctest: +SKIP
    ['kinesis.endpointUrl', 'kinesis.region']
    """
    if jar is None:
        jar = _default_jar()
    with zipfile.ZipFile(jar) as archive:
        try:
            data = json.loads(archive.read(RESOURCE).decode("utf-8"))
        except KeyError:
            raise ValueError(
                f"{jar} has no {RESOURCE}; it is not a spark-kinesis jar, or one older than 0.1.0"
            ) from None
    if data.get("formatVersion") != FORMAT_VERSION:
        raise ValueError(
            f"{jar}: option table format {data.get('formatVersion')!r} is not supported by this "
            f"package (expected {FORMAT_VERSION}); use the spark-kinesis package of that version"
        )
    return [_info(raw) for raw in data["options"]]


def _type_text(info: OptionInfo) -> str:
    if info.type == "choice":
        return "one of " + ", ".join(info.choices)
    if info.minimum is not None and info.maximum is not None:
        return f"{info.type} ({info.minimum} to {info.maximum})"
    if info.minimum is not None:
        return f"{info.type} (at least {info.minimum})"
    return info.type


_SCOPE_TEXT = {"source": "source", "sink": "sink", "both": "source, sink"}


def render_markdown(table: list[OptionInfo]) -> str:
    """Render the option reference as Markdown: the content of ``docs/options.md``."""
    lines = [
        "# Options",
        "",
        "Generated from the option table in the connector jar (declared once in",
        "`src/main/scala/io/sparkkinesis/config/KinesisOptions.scala`) by",
        "`scripts/options-doc.sh`; a test fails when this file is out of date.",
        'Keys are case-insensitive. Options marked "not yet" are part of the public contract but',
        "rejected by this version with a clear error. The Python builders",
        "(`spark_kinesis.KinesisSource`, `spark_kinesis.KinesisSink`) take every option as a typed",
        "argument; `spark-kinesis options` prints this table.",
        "",
        "| option | type | default | applies to | description |",
        "|---|---|---|---|---|",
    ]
    for info in table:
        status = " (not yet)" if info.not_yet_supported else ""
        secret = " Secret: never logged or shown." if info.secret else ""
        lines.append(
            f"| `{info.full_key}`{status} | {_type_text(info)} | {info.default_text} | "
            f"{_SCOPE_TEXT[info.scope]} | {info.doc}{secret} |"
        )
    return "\n".join(lines) + "\n"


def render_text(table: list[OptionInfo], width: int = 100) -> str:
    """Render the option reference for a terminal: one block per option."""
    import textwrap

    blocks = []
    for info in table:
        flags = []
        if info.required:
            flags.append("required")
        if info.secret:
            flags.append("secret")
        if info.not_yet_supported:
            flags.append("not supported yet")
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
