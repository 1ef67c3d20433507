"""Spark Connect sessions (``SparkSession.builder.remote("sc://...")``) and the connector's secrets.

A Connect server writes the text of each plan it receives, options included, into places that
outlive the query: the operation's statement in the UI's Connect tab and in the event log
(``SparkListenerConnectOperationStarted``), and the description and call site of each job and SQL
execution. A static credential given as an option (``kinesis.awsSecretKey`` ...) would be shown
there in clear.

The server redacts that text with the *session's* ``spark.sql.redaction.string.regex``, which a
client may change. Before the builders hand secret options to a Connect session,
:func:`protect_secrets` adds to it a pattern matching the values of the options the jar's table
marks ``secret``, keeping what the session or the server already redacts. If the session refuses
the setting, the builders refuse the secret options, naming the ways to give credentials that
never travel in a plan. A classic session is left as it is: there the jar redacts plan strings
itself (``spark.sql.redaction.options.regex``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from spark_kinesis.option_table import bundled_option_table

__all__ = [
    "CORE_REDACTION_CONF",
    "REDACTION_CONF",
    "ConnectSecretError",
    "is_classic_session",
    "is_connect_session",
    "protect_secrets",
    "secret_option_keys",
    "secret_redaction_pattern",
    "session_of",
]

REDACTION_CONF = "spark.sql.redaction.string.regex"
"""The session setting with which a Connect server redacts the text of the plans it records."""

CORE_REDACTION_CONF = "spark.redaction.string.regex"
"""The server-wide setting that :data:`REDACTION_CONF` falls back to when a session leaves it
unset."""

_SAFE_WAYS = (
    "give the credentials to the Connect server instead: an IAM role (instance profile, or the "
    "server's AWS default credential chain), kinesis.stsRoleArn (sts_role_arn=...) to assume a "
    "role, kinesis.credentialProviderClass (credential_provider_class=...) naming a provider on "
    "the server's classpath, or the environment of the server (AWS_ACCESS_KEY_ID, "
    "AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN)"
)


class ConnectSecretError(ValueError):
    """Secret options cannot be sent on this Spark Connect session without being shown in clear."""


def is_connect_session(spark: object) -> bool:
    """Tell whether ``spark`` belongs to the Spark Connect client (``builder.remote(...)``).

    It looks at the class only, so it imports nothing. Databricks Connect sessions (their class
    derives from pyspark's) and the Connect session's own builder count too.

    Parameters
    ----------
    spark : object
        A ``SparkSession`` or session builder of either kind, or anything else.

    Returns
    -------
    bool
        ``True`` for an object of the Spark Connect client.
    """
    return any(cls.__module__.startswith("pyspark.sql.connect.") for cls in type(spark).__mro__)


def is_classic_session(spark: object) -> bool:
    """Tell whether ``spark`` (anything) is a classic (py4j) session, whose JVM can be asked."""
    return hasattr(spark, "_jsparkSession")


def session_of(reader_or_writer: object) -> object | None:
    """Return the session of a reader or writer (``spark.readStream``, ``df.write``, ...).

    Parameters
    ----------
    reader_or_writer : object
        A ``DataStreamReader``, ``DataFrameReader``, ``DataStreamWriter`` or ``DataFrameWriter``,
        classic or Connect.

    Returns
    -------
    object or None
        Its ``SparkSession``, or ``None`` when it has none that this function knows of.
    """
    # Classic readers and writers, and Connect's DataFrameWriter, keep it in `_spark`; Connect's
    # DataStreamWriter in `_session`; Connect's readers in `_client` (a SparkSession, whatever
    # the name says).
    for attribute in ("_spark", "_session", "_client"):
        value: object = getattr(reader_or_writer, attribute, None)
        if value is not None and hasattr(value, "conf"):
            return value
    return None


@functools.cache
def secret_option_keys() -> tuple[str, ...]:
    """Return, sorted, the full keys (``kinesis.<key>``) of the options the jar marks secret."""
    return tuple(sorted(info.full_key for info in bundled_option_table().values() if info.secret))


@functools.cache
def secret_redaction_pattern() -> str:
    """Return a Java regular expression matching the value of every secret option in a plan's text.

    A Connect server records a plan as the text of its protobuf message, where an option is a map
    entry: ``key: "kinesis.awsSecretKey"`` then ``value: "..."``. The pattern matches that whole
    entry (key and quoted value, escapes included), and also the forms ``key -> value``,
    ``key=value`` and ``"key": "value"`` of Spark's other plan strings. Keys match in any case.

    Returns
    -------
    str
        The pattern, for ``spark.sql.redaction.string.regex``.
    """
    keys = "|".join(key.replace(".", r"\.") for key in secret_option_keys())
    in_proto = rf'key: "(?:{keys})"\s*value: "(?:[^"\\]|\\.)*"'
    in_text = rf'(?:{keys})"?\s*(?:->|=|:)\s*"?(?:[^\s",)}}\]\\]|\\.)*'
    return f"(?i)(?:{in_proto}|{in_text})"


def _conf_value(spark: object, key: str) -> str | None:
    conf = getattr(spark, "conf")  # noqa: B009 - a SparkSession of either kind
    value = conf.get(key, None)
    return None if value is None or str(value).strip() == "" else str(value)


def _refusal(owner: str, secrets: list[str], why: str) -> ConnectSecretError:
    return ConnectSecretError(
        f"{owner}: the secret option(s) {', '.join(secrets)} would be shown in clear in the Spark "
        "Connect server's UI and event log (they travel in the plan's text, which the server "
        f"records), and this session cannot redact them: {why}. Do not pass static credentials on "
        f"a Connect session; {_SAFE_WAYS}."
    )


def protect_secrets(spark: object, options: Mapping[str, str], owner: str) -> None:
    """Make a Connect session redact the connector's secret options before they are sent to it.

    Does nothing on a classic session, or when ``options`` hold no secret option. Otherwise adds
    :func:`secret_redaction_pattern` to the session's ``spark.sql.redaction.string.regex`` (after
    what it already holds, or else after the server's ``spark.redaction.string.regex``, so that both
    keep applying), and reads the setting back.

    Parameters
    ----------
    spark : object
        The session the options go to (``None`` when unknown: treated as classic).
    options : Mapping[str, str]
        The options about to be set on a reader or writer (``kinesis.*`` keys and values).
    owner : str
        The builder, for messages (``"KinesisSource"`` ...).

    Raises
    ------
    ConnectSecretError
        If ``spark`` is a Connect session, secret options are given, and the session does not take
        the setting; the message names the options (never their values) and the safe ways.
    """
    if spark is None or not is_connect_session(spark):
        return
    secret_keys = {key.lower() for key in secret_option_keys()}
    secrets = sorted(key for key in options if key.lower() in secret_keys)
    if not secrets:
        return
    pattern = secret_redaction_pattern()
    try:
        current = _conf_value(spark, REDACTION_CONF) or _conf_value(spark, CORE_REDACTION_CONF)
        if current is not None and pattern in current:
            return
        wanted = pattern if current is None else f"{current}|{pattern}"
        getattr(spark, "conf").set(REDACTION_CONF, wanted)  # noqa: B009
        now = _conf_value(spark, REDACTION_CONF)
    except Exception as error:  # any refusal of the server means: it cannot redact
        raise _refusal(owner, secrets, f"setting {REDACTION_CONF} failed ({error})") from None
    if now is None or pattern not in now:
        raise _refusal(owner, secrets, f"{REDACTION_CONF} did not keep the value set")
