"""Value types of the connector's options: consumer type, committer type, starting position."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum

__all__ = ["ConsumerType", "HttpProtocol", "MetadataCommitterType", "StartingPosition"]


class ConsumerType(str, Enum):
    """How the source reads a shard (option ``kinesis.consumerType``).

    Examples
    --------
    >>> ConsumerType.SUBSCRIBE_TO_SHARD.value
    'SubscribeToShard'
    """

    GET_RECORDS = "GetRecords"
    """Polling with GetRecords on the shard's shared throughput (2 MB/s and 5 calls/s per shard)."""

    SUBSCRIBE_TO_SHARD = "SubscribeToShard"
    """Enhanced fan-out: a registered consumer with its own 2 MB/s per shard, pushed over HTTP/2."""


class HttpProtocol(str, Enum):
    """HTTP protocol of SubscribeToShard (option ``kinesis.subscribeToShard.httpProtocol``).

    Examples
    --------
    >>> HttpProtocol.HTTP1_1.value
    'HTTP1_1'
    """

    HTTP2 = "HTTP2"
    """HTTP/2, as Kinesis requires for enhanced fan-out (the default)."""

    HTTP2_ALPN = "HTTP2_ALPN"
    """HTTP/2 negotiated with TLS ALPN."""

    HTTP1_1 = "HTTP1_1"
    """HTTP/1.1, for emulators that do not speak HTTP/2; never works against AWS."""


class MetadataCommitterType(str, Enum):
    """Where the source keeps per-batch shard metadata (option ``kinesis.metadataCommitterType``).

    Examples
    --------
    >>> MetadataCommitterType("DYNAMODB") is MetadataCommitterType.DYNAMODB
    True
    """

    HDFS = "HDFS"
    """Files under a Hadoop path (local, HDFS, S3A); by default inside the query's checkpoint."""

    DYNAMODB = "DYNAMODB"
    """Items in a DynamoDB table (option ``kinesis.dynamodb.tableName``)."""


_AT_TIMESTAMP = re.compile(r"^\s*AT_TIMESTAMP\s+(\S.*?)\s*$", re.IGNORECASE)
_NAMED = {"LATEST": "LATEST", "TRIM_HORIZON": "TRIM_HORIZON", "EARLIEST": "TRIM_HORIZON"}


def _parse_instant(text: str) -> datetime:
    # datetime.fromisoformat accepts a trailing "Z" only from Python 3.11 on.
    normalized = text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text
    try:
        moment = datetime.fromisoformat(normalized)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO-8601 instant; use a form such as 2026-11-01T00:00:00Z"
        ) from None
    if moment.tzinfo is None:
        raise ValueError(
            f"{text!r} has no time zone offset, so the instant is ambiguous; "
            "add one, such as 2026-11-01T00:00:00Z or 2026-11-01T01:00:00+01:00"
        )
    return moment


@dataclass(frozen=True)
class StartingPosition:
    """Where a new query starts reading (option ``kinesis.startingPosition``).

    It only matters for a query without a checkpoint; a restarted query continues where its
    checkpoint says.

    Parameters
    ----------
    kind : str
        ``"LATEST"``, ``"TRIM_HORIZON"`` or ``"AT_TIMESTAMP"``. Prefer the constructors below.
    timestamp : datetime.datetime or None
        The instant, for ``AT_TIMESTAMP`` only; it must carry a time zone.

    Examples
    --------
    >>> StartingPosition.latest().option_value()
    'LATEST'
    >>> StartingPosition.at_timestamp("2026-11-01T00:00:00Z").option_value()
    'AT_TIMESTAMP 2026-11-01T00:00:00Z'
    >>> StartingPosition.parse("earliest") == StartingPosition.trim_horizon()
    True
    """

    kind: str
    timestamp: datetime | None = None

    def __post_init__(self) -> None:
        """Check that the kind and the timestamp fit together."""
        if self.kind not in ("LATEST", "TRIM_HORIZON", "AT_TIMESTAMP"):
            raise ValueError(
                f"StartingPosition kind {self.kind!r} is not LATEST, TRIM_HORIZON or AT_TIMESTAMP"
            )
        if (self.kind == "AT_TIMESTAMP") != (self.timestamp is not None):
            raise ValueError("StartingPosition needs a timestamp exactly when kind is AT_TIMESTAMP")
        if self.timestamp is not None and self.timestamp.tzinfo is None:
            raise ValueError(
                f"StartingPosition timestamp {self.timestamp.isoformat()} has no time zone; "
                "pass an aware datetime such as datetime(2026, 11, 1, tzinfo=timezone.utc)"
            )

    @classmethod
    def latest(cls) -> StartingPosition:
        """Start after the records that are in the stream when the query starts."""
        return cls("LATEST")

    @classmethod
    def trim_horizon(cls) -> StartingPosition:
        """Start at the oldest record still retained in each shard."""
        return cls("TRIM_HORIZON")

    @classmethod
    def earliest(cls) -> StartingPosition:
        """Alias of :meth:`trim_horizon`."""
        return cls("TRIM_HORIZON")

    @classmethod
    def at_timestamp(cls, moment: datetime | str) -> StartingPosition:
        """Start at the first record that arrived at or after ``moment``.

        Parameters
        ----------
        moment : datetime.datetime or str
            An aware ``datetime`` or an ISO-8601 string with an offset, such as
            ``"2026-11-01T00:00:00Z"``.
        """
        if isinstance(moment, str):
            return cls("AT_TIMESTAMP", _parse_instant(moment.strip()))
        if isinstance(moment, datetime):
            return cls("AT_TIMESTAMP", moment)
        raise TypeError(
            f"StartingPosition.at_timestamp expects a datetime or an ISO-8601 string, "
            f"got {type(moment).__name__}"
        )

    @classmethod
    def parse(cls, text: str) -> StartingPosition:
        """Read the option string: LATEST, TRIM_HORIZON, EARLIEST or ``AT_TIMESTAMP <instant>``.

        Raises
        ------
        ValueError
            If ``text`` is none of those forms.
        """
        named = _NAMED.get(text.strip().upper())
        if named is not None:
            return cls(named)
        match = _AT_TIMESTAMP.match(text)
        if match is None:
            raise ValueError(
                f"{text!r} is not a starting position; use LATEST, TRIM_HORIZON, EARLIEST or "
                "'AT_TIMESTAMP <ISO-8601 instant>' such as 'AT_TIMESTAMP 2026-11-01T00:00:00Z'"
            )
        return cls.at_timestamp(match.group(1))

    def option_value(self) -> str:
        """Return the string Spark passes to the connector."""
        if self.timestamp is None:
            return self.kind
        utc = self.timestamp.astimezone(timezone.utc).isoformat()
        return f"AT_TIMESTAMP {utc.replace('+00:00', 'Z')}"

    def __str__(self) -> str:
        """Return :meth:`option_value`."""
        return self.option_value()
