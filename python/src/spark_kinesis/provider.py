"""Which data source a format name selects, and what else on the classpath claims ours.

The jar registers the connector under two short names:

- ``spark-kinesis`` (:data:`FORMAT`): only this connector registers it, so it selects this
  connector whatever else is on the classpath. The builders and the docs use it.
- ``aws-kinesis``: the awslabs connector's name, kept for jobs written for that connector. Spark
  resolves a short name that several providers register to the one whose class is under
  ``org.apache.spark`` (only logging it), and refuses it when several outside that package share
  it. The awslabs provider's class is under ``org.apache.spark``, and Amazon EMR 7.1+ puts it on
  the classpath by default: there, ``format("aws-kinesis")`` runs that connector, not this one.

This module finds that case: by asking Spark, on a running classic session; before a session
exists, by reading the service registrations of the jars it will load (:func:`classpath_conflicts`).
"""

from __future__ import annotations

import glob
import os
import re
import warnings
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

__all__ = [
    "FORMAT",
    "PROVIDER_CLASS",
    "ProviderConflict",
    "ProviderConflictWarning",
    "classpath_conflicts",
    "resolved_provider",
]

FORMAT = "spark-kinesis"
"""The format name only this connector registers: ``spark.readStream.format(FORMAT)``."""

_COMPATIBLE_FORMAT = "aws-kinesis"
"""The format name this connector shares with the awslabs connector (see the module's text)."""

PROVIDER_CLASS = "io.sparkkinesis.SparkKinesisProvider"
"""The provider class registered as :data:`FORMAT`; also a valid ``format(...)`` argument."""

COMPATIBLE_PROVIDER_CLASS = "io.sparkkinesis.KinesisSourceProvider"
"""The provider class registered as ``aws-kinesis``."""

OUR_PROVIDERS = frozenset({PROVIDER_CLASS, COMPATIBLE_PROVIDER_CLASS})
ACCEPTED_FORMATS = (FORMAT, _COMPATIBLE_FORMAT, PROVIDER_CLASS, COMPATIBLE_PROVIDER_CLASS)

_SERVICES = "META-INF/services/org.apache.spark.sql.sources.DataSourceRegister"
_SPARK_PACKAGE = "org.apache.spark."


class ProviderConflictWarning(UserWarning):
    """Another data source claims ``aws-kinesis``, so that name does not select this connector."""


@dataclass(frozen=True)
class ProviderConflict:
    """A provider other than this connector's that registers ``aws-kinesis``.

    Attributes
    ----------
    provider_class : str
        The other provider's class name.
    location : str
        Where it comes from: a jar path, or ``"the running session"``.
    """

    provider_class: str
    location: str

    @property
    def wins(self) -> bool:
        """Whether Spark picks it over this connector (its class is under ``org.apache.spark``)."""
        return self.provider_class.startswith(_SPARK_PACKAGE)

    def message(self) -> str:
        """Explain the conflict: both classes, what Spark does, and the fix."""
        if self.wins:
            effect = (
                f"Spark resolves format({_COMPATIBLE_FORMAT!r}) to it (Spark prefers a provider "
                "under org.apache.spark), so a query using that name runs the other connector, "
                "not spark-kinesis"
            )
        else:
            effect = (
                f"Spark refuses format({_COMPATIBLE_FORMAT!r}) as ambiguous while both are on the "
                "classpath"
            )
        return (
            f"{self.provider_class} ({self.location}) also registers the data source name "
            f"{_COMPATIBLE_FORMAT!r}, as spark-kinesis's {COMPATIBLE_PROVIDER_CLASS} does: "
            f"{effect}. Use format({FORMAT!r}) (spark_kinesis.FORMAT), which only spark-kinesis "
            "registers; KinesisSource and KinesisSink use it unless told otherwise. On Amazon EMR "
            "7.1+ the other connector is on the classpath by default."
        )


def check_format(name: str, *, owner: str) -> str:
    """Return ``name``, a ``format(...)`` argument ``owner`` received, if it selects this connector.

    Otherwise a ``ValueError`` names the accepted ones: :data:`FORMAT`, ``aws-kinesis`` and their
    provider classes.
    """
    if name not in ACCEPTED_FORMATS:
        raise ValueError(
            f"{owner}(format={name!r}): not a name of this connector; use one of "
            f"{', '.join(repr(n) for n in ACCEPTED_FORMATS)} (default {FORMAT!r})"
        )
    return name


def resolved_provider(spark: Any, name: str = _COMPATIBLE_FORMAT) -> str:  # noqa: ANN401
    """Return the provider class that a classic session resolves a format name to.

    This asks Spark's own lookup (``DataSource.lookupDataSource``) through the session's JVM, so
    it sees exactly what a query would load.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession
        A classic (not Spark Connect) session.
    name : str, default "aws-kinesis"
        The format name.

    Returns
    -------
    str
        The class name, or Spark's error text when the name is ambiguous or unknown, prefixed
        with ``"error: "``.
    """
    from py4j.protocol import Py4JError  # type: ignore[import-untyped]

    jvm = spark._jvm
    try:
        lookup = jvm.org.apache.spark.sql.execution.datasources.DataSource
        found = lookup.lookupDataSource(name, spark._jsparkSession.sessionState().conf())
        return str(found.getName())
    except Py4JError as error:
        text = str(error).strip().splitlines()
        return "error: " + (text[0] if text else type(error).__name__)


def warn_if_taken(spark: Any, *, stacklevel: int = 3) -> ProviderConflict | None:  # noqa: ANN401
    """Warn when ``aws-kinesis`` does not select this connector on a running classic session.

    The :class:`ProviderConflictWarning` goes to ``stacklevel``; the conflict found is returned,
    ``None`` when ``aws-kinesis`` resolves to this connector.
    """
    found = resolved_provider(spark, _COMPATIBLE_FORMAT)
    if found in OUR_PROVIDERS:
        return None
    if found.startswith("error: "):
        # Spark's text says which providers it found; the fix is the same.
        conflict = ProviderConflict("another provider", f"the running session: {found[7:]}")
    else:
        conflict = ProviderConflict(found, "the running session")
    warnings.warn(conflict.message(), ProviderConflictWarning, stacklevel=stacklevel)
    return conflict


def _jar_candidates(entry: str) -> Iterable[Path]:
    """Return the local jar files that one classpath or ``spark.jars`` entry names."""
    entry = entry.strip()
    if not entry:
        return []
    if "://" in entry or entry.startswith(("file:", "local:")):
        parsed = urlparse(entry)
        if parsed.scheme not in ("file", "local"):
            return []  # remote (s3://, hdfs://, https://): not readable here
        entry = unquote(parsed.path)
    if entry.endswith("*"):
        return [Path(p) for p in sorted(glob.glob(entry + ".jar") + glob.glob(entry + ".JAR"))]
    path = Path(entry)
    if path.is_dir():
        return sorted(path.glob("*.jar"))
    return [path] if path.suffix.lower() == ".jar" and path.is_file() else []


def _spark_defaults() -> dict[str, str]:
    """Return the settings in ``spark-defaults.conf`` of ``$SPARK_CONF_DIR`` or ``$SPARK_HOME``."""
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if not conf_dir and os.environ.get("SPARK_HOME"):
        conf_dir = os.path.join(os.environ["SPARK_HOME"], "conf")
    if not conf_dir:
        return {}
    path = Path(conf_dir) / "spark-defaults.conf"
    settings: dict[str, str] = {}
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        # Java properties syntax, as Spark reads the file: "key value", "key=value" or "key: value".
        match = re.match(r"\s*([^\s=:#!][^\s=:]*)\s*[\s=:]\s*(.*)", line)
        if match:
            settings[match.group(1)] = match.group(2).strip()
    return settings


def _classpath_entries(settings: Mapping[str, object]) -> list[str]:
    """Return the jars and folders a new session's driver loads, besides the connector's.

    They come from the builder's settings, ``spark-defaults.conf``, ``SPARK_DIST_CLASSPATH`` and
    ``$SPARK_HOME/jars``.
    """
    entries: list[str] = []
    for source in (settings, _spark_defaults()):
        entries += str(source.get("spark.jars") or "").split(",")
        entries += str(source.get("spark.driver.extraClassPath") or "").split(os.pathsep)
    entries += os.environ.get("SPARK_DIST_CLASSPATH", "").split(os.pathsep)
    if os.environ.get("SPARK_HOME"):
        entries.append(os.path.join(os.environ["SPARK_HOME"], "jars", "*"))
    return [entry for entry in entries if entry.strip()]


def _registers_compatible_name(jar: zipfile.ZipFile, provider: str) -> bool:
    """Whether a provider class (or its Scala companion) holds the string ``aws-kinesis``.

    A ``DataSourceRegister`` returns its short name as a string constant, which the compiler keeps
    in the class file of the class or of the object that declares it.
    """
    base, present = provider.replace(".", "/"), set(jar.namelist())
    classes = [name for name in (base + ".class", base + "$.class") if name in present]
    return any(_COMPATIBLE_FORMAT.encode() in jar.read(name) for name in classes)


def classpath_conflicts(settings: Mapping[str, object]) -> list[ProviderConflict]:
    """Find jars that a new session would load and that register ``aws-kinesis`` as well.

    Reads each jar's ``META-INF/services`` registration of Spark data sources, and looks for the
    name in each registered class (other than this connector's). Jars given by URL other than
    ``file:``/``local:`` cannot be read here and are not checked; the builders check exactly once
    a session runs.

    Parameters
    ----------
    settings : Mapping of str to object
        The session builder's settings (``spark.jars``, ``spark.driver.extraClassPath``).

    Returns
    -------
    list of ProviderConflict
        One per other provider found, in classpath order.
    """
    found: list[ProviderConflict] = []
    seen: set[Path] = set()
    for entry in _classpath_entries(settings):
        for jar_path in _jar_candidates(entry):
            if jar_path in seen:
                continue
            seen.add(jar_path)
            try:
                with zipfile.ZipFile(jar_path) as jar:
                    if _SERVICES not in jar.namelist():
                        continue
                    listed = jar.read(_SERVICES).decode("utf-8", errors="replace").splitlines()
                    providers = [line.split("#", 1)[0].strip() for line in listed]
                    found += [
                        ProviderConflict(provider, str(jar_path))
                        for provider in providers
                        if provider not in ("", *OUR_PROVIDERS)
                        and _registers_compatible_name(jar, provider)
                    ]
            except (OSError, zipfile.BadZipFile):
                continue
    return found
