"""Value types of the connector's options: the choices, and start and end positions.

The grammar of positions (names, keywords, shard-id and sequence-number patterns) is the jar's,
read from its option table (:func:`spark_kinesis.option_table.bundled_position_grammar`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from enum import Enum
from typing import Any, ClassVar, TypeVar

from spark_kinesis.option_table import PositionForms, bundled_position_grammar

__all__ = [
    "ConsumerType",
    "EndingPosition",
    "HttpProtocol",
    "MetadataCommitterType",
    "MetricsLevel",
    "ShardPositions",
    "SinkProducer",
    "StartingPosition",
    "ThreadingModel",
]


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


class MetricsLevel(str, Enum):
    """CloudWatch metrics of the sink's producer (option ``kinesis.sink.metricsLevel``).

    Examples
    --------
    >>> MetricsLevel.SUMMARY.value
    'summary'
    """

    NONE = "none"
    """No metrics (the default), so no CloudWatch access is needed."""

    SUMMARY = "summary"
    """Metrics per stream."""

    DETAILED = "detailed"
    """Metrics per stream and shard."""


class SinkProducer(str, Enum):
    """Which producer the sink writes with (option ``kinesis.sink.producer``).

    Examples
    --------
    >>> SinkProducer("JAVA") is SinkProducer.JAVA
    True
    """

    KPL = "KPL"
    """The Kinesis Producer Library and its native process (the default)."""

    JAVA = "JAVA"
    """PutRecords from the JVM, with the KPL's aggregation format: any platform the JVM runs on."""


class ThreadingModel(str, Enum):
    """How the sink's native producer runs requests (option ``kinesis.sink.threadingModel``).

    Examples
    --------
    >>> ThreadingModel("POOLED") is ThreadingModel.POOLED
    True
    """

    PER_REQUEST = "PER_REQUEST"
    """A thread per request (the default)."""

    POOLED = "POOLED"
    """A pool of threads."""


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


_P = TypeVar("_P", bound="_Position")


@dataclass(frozen=True)
class _Position:
    """What the starting and ending positions share: grammar, kind/timestamp rule, option text."""

    kind: str
    timestamp: datetime | None = None
    _side: ClassVar[str]
    """The attribute of :class:`~spark_kinesis.option_table.PositionGrammar` with the forms."""

    @classmethod
    def _forms(cls) -> PositionForms:
        forms: PositionForms = getattr(bundled_position_grammar(), cls._side)
        return forms

    def __post_init__(self) -> None:
        """Check that the kind and the timestamp fit together."""
        name = type(self).__name__
        keyword = bundled_position_grammar().at_timestamp
        kinds = (*dict.fromkeys(self._forms().names.values()), keyword)
        if self.kind not in kinds:
            raise ValueError(
                f"{name} kind {self.kind!r} is not {', '.join(kinds[:-1])} or {kinds[-1]}"
            )
        if (self.kind == keyword) != (self.timestamp is not None):
            raise ValueError(f"{name} needs a timestamp exactly when kind is {keyword}")
        if self.timestamp is not None and self.timestamp.tzinfo is None:
            raise ValueError(
                f"{name} timestamp {self.timestamp.isoformat()} has no time zone; "
                "pass an aware datetime such as datetime(2026, 11, 1, tzinfo=timezone.utc)"
            )

    @classmethod
    def at_timestamp(cls: type[_P], moment: datetime | str) -> _P:
        """Return the position of the first record that arrived at or after ``moment``.

        A start reads from that record on; an end stops before it.

        Parameters
        ----------
        moment : datetime.datetime or str
            An aware ``datetime`` or an ISO-8601 string with an offset, such as
            ``"2026-11-01T00:00:00Z"``.
        """
        if not isinstance(moment, (str, datetime)):
            raise TypeError(
                f"{cls.__name__}.at_timestamp expects a datetime or an ISO-8601 string, "
                f"got {type(moment).__name__}"
            )
        instant = _parse_instant(moment.strip()) if isinstance(moment, str) else moment
        return cls(bundled_position_grammar().at_timestamp, instant)

    @classmethod
    def parse(cls: type[_P], text: str) -> _P:
        """Read the option string as the jar does: a name, or ``AT_TIMESTAMP <instant>``.

        Raises
        ------
        ValueError
            If ``text`` is none of the option's forms.
        """
        forms = cls._forms()
        keyword = bundled_position_grammar().at_timestamp
        trimmed = text.strip()
        named = forms.names.get(trimmed.upper())
        if named is not None:
            return cls(named)
        if trimmed.upper().startswith(keyword):
            return cls(keyword, _parse_instant(trimmed[len(keyword) :].strip()))
        raise ValueError(f"{text!r} is not {forms.allowed}")

    def option_value(self) -> str:
        """Return the string Spark passes to the connector."""
        if self.timestamp is None:
            return self.kind
        return f"{self.kind} {_utc_text(self.timestamp)}"

    def __str__(self) -> str:
        """Return :meth:`option_value`."""
        return self.option_value()


@dataclass(frozen=True)
class StartingPosition(_Position):
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

    _side: ClassVar[str] = "start"

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


@dataclass(frozen=True)
class EndingPosition(_Position):
    """Where a batch read ends, exclusive (option ``kinesis.endingPosition``).

    Parameters
    ----------
    kind : str
        ``"LATEST"`` or ``"AT_TIMESTAMP"``. Prefer the constructors below.
    timestamp : datetime.datetime or None
        The instant, for ``AT_TIMESTAMP`` only; it must carry a time zone.

    Examples
    --------
    >>> EndingPosition.at_timestamp("2026-11-01T00:00:00Z").option_value()
    'AT_TIMESTAMP 2026-11-01T00:00:00Z'
    """

    _side: ClassVar[str] = "end"

    @classmethod
    def latest(cls) -> EndingPosition:
        """End at the tip of every shard as of the moment the read is planned."""
        return cls("LATEST")


def _utc_text(moment: datetime | str, where: str = "") -> str:
    """Return an aware ``datetime``, or an ISO-8601 string, as the jar reads an instant (UTC)."""
    instant = _parse_instant(moment.strip()) if isinstance(moment, str) else moment
    if not isinstance(instant, datetime) or instant.tzinfo is None:
        raise ValueError(f"ShardPositions.{where}: needs an aware datetime")
    return instant.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class ShardPositions:
    """A position per shard, for ``kinesis.startingPosition`` or ``kinesis.endingPosition``.

    Each method returns a new document with one more shard placed. Shards a starting document
    does not list count as read when they are ancestors of a listed shard and start at
    TRIM_HORIZON otherwise. Shards an ending document does not list read nothing below an
    ancestor it ends by sequence number, end at an ancestor's timestamp, and otherwise at LATEST.

    A stream's object may also name the stream the positions belong to, with ``streamArn`` and
    ``streamCreationTimestamp`` (an ISO-8601 instant), as DescribeStreamSummary reports them
    (:meth:`stream_identity`). A read whose stream of that name was deleted and re-created since
    then fails (or, with ``kinesis.failOnDataLoss=false``, reads it from TRIM_HORIZON) instead of
    looking for the old stream's sequence numbers in the new one.

    Parameters
    ----------
    places : Mapping[str, Mapping[str, Mapping[str, Any]]]
        stream name -> shard id -> position object, as in the JSON form. Prefer the methods.
    identities : Mapping[str, Mapping[str, str]]
        stream name -> ``{"streamArn": ..., "streamCreationTimestamp": ...}`` (either or both).

    Examples
    --------
    >>> doc = (
    ...     ShardPositions()
    ...     .after_sequence_number("orders", "shardId-000000000000", "4959", sub_sequence_number=2)
    ...     .trim_horizon("orders", "shardId-000000000001")
    ... )
    >>> doc.places["orders"]["shardId-000000000000"]
    {'type': 'AFTER_SEQUENCE_NUMBER', 'sequenceNumber': '4959', 'subSequenceNumber': 2}
    >>> ShardPositions.from_json(doc.option_value()) == doc
    True
    """

    places: Mapping[str, Mapping[str, Mapping[str, Any]]] = field(default_factory=dict)
    identities: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Check every stream, shard and position, and every stream identity."""
        for stream, shards in self.places.items():
            if not isinstance(stream, str) or not stream.strip():
                raise ValueError(f"ShardPositions: {stream!r} is not a stream name")
            for shard, place in shards.items():
                if shard in _identity_fields():
                    raise ValueError(
                        f"ShardPositions: stream {stream!r}: {shard} is the stream's identity, "
                        "not a shard; give it in identities (or use stream_identity)"
                    )
                _check_place(stream, shard, place)
        for stream, identity in self.identities.items():
            _check_identity(stream, identity)

    def _with(self, stream: str, shard: str, kind: str, **fields: object) -> ShardPositions:
        place = {"type": kind, **{key: v for key, v in fields.items() if v is not None}}
        shards = {**self.places.get(stream, {}), shard: place}
        return ShardPositions({**self.places, stream: shards}, self.identities)

    def stream_identity(
        self, stream: str, arn: str | None = None, created: datetime | str | None = None
    ) -> ShardPositions:
        """Say which stream ``stream``'s positions belong to: its ARN and creation time.

        Give what DescribeStreamSummary reports (``StreamARN``, ``StreamCreationTimestamp``) for
        the stream the positions were taken from; place at least one of its shards too.
        """
        identity: dict[str, str] = {}
        if arn is not None:
            identity[bundled_position_grammar().arn_field] = arn
        if created is not None:
            where = f"stream_identity({stream!r})"
            identity[bundled_position_grammar().created_field] = _utc_text(created, where)
        if not identity:
            raise ValueError(
                f"ShardPositions.stream_identity({stream!r}): give arn, created or both"
            )
        places = {**self.places, stream: self.places.get(stream, {})}
        return ShardPositions(places, {**self.identities, stream: identity})

    def trim_horizon(self, stream: str, shard: str) -> ShardPositions:
        """Place ``shard`` before its oldest retained record."""
        return self._with(stream, shard, "TRIM_HORIZON")

    def latest(self, stream: str, shard: str) -> ShardPositions:
        """Place ``shard`` at its tip (when the query starts, or when a batch read is planned)."""
        return self._with(stream, shard, "LATEST")

    def shard_end(self, stream: str, shard: str) -> ShardPositions:
        """Mark ``shard`` as read to its end (starting positions only)."""
        return self._with(stream, shard, "SHARD_END")

    def at_timestamp(self, stream: str, shard: str, moment: datetime | str) -> ShardPositions:
        """Place ``shard`` before the first record that arrived at or after ``moment``."""
        instant = _utc_text(moment, f"at_timestamp({shard!r})")
        return self._with(stream, shard, "AT_TIMESTAMP", timestamp=instant)

    def at_sequence_number(
        self, stream: str, shard: str, sequence_number: str, sub_sequence_number: int | None = None
    ) -> ShardPositions:
        """Place ``shard`` before a record, or before its KPL sub-record ``sub_sequence_number``."""
        seq = {"sequenceNumber": sequence_number, "subSequenceNumber": sub_sequence_number}
        return self._with(stream, shard, "AT_SEQUENCE_NUMBER", **seq)

    def after_sequence_number(
        self, stream: str, shard: str, sequence_number: str, sub_sequence_number: int | None = None
    ) -> ShardPositions:
        """Place ``shard`` after a record, or after its KPL sub-record ``sub_sequence_number``.

        This is what a KCL checkpoint (sequence number, sub-sequence number) means.
        """
        seq = {"sequenceNumber": sequence_number, "subSequenceNumber": sub_sequence_number}
        return self._with(stream, shard, "AFTER_SEQUENCE_NUMBER", **seq)

    @classmethod
    def from_json(cls, text: str) -> ShardPositions:
        """Read the JSON form (for example the output of ``spark-kinesis positions``).

        Raises
        ------
        ValueError
            If the text is not a valid document.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"ShardPositions: not valid JSON ({error})") from None
        if not isinstance(data, dict) or not data:
            raise ValueError("ShardPositions: a JSON object of stream -> shard id -> position")
        places: dict[str, dict[str, Any]] = {}
        identities: dict[str, dict[str, str]] = {}
        fields = _identity_fields()
        for stream, shards in data.items():
            if not isinstance(shards, dict) or not set(shards) - set(fields):
                raise ValueError(f"ShardPositions: stream {stream!r} must map to shard positions")
            places[stream] = {k: v for k, v in shards.items() if k not in fields}
            identity = {k: v for k, v in shards.items() if k in fields}
            if identity:
                identities[stream] = identity
        return cls(places, identities)

    def option_value(self) -> str:
        """Return the JSON string Spark passes to the connector."""
        for stream, shards in self.places.items():
            if not shards:
                raise ValueError(
                    f"ShardPositions: stream {stream!r} has an identity but no shard positions"
                )
        merged = {s: {**self.identities.get(s, {}), **shards} for s, shards in self.places.items()}
        return json.dumps(merged)

    def __str__(self) -> str:
        """Return :meth:`option_value`."""
        return self.option_value()


def _read_position(value: object, forms: PositionForms) -> str:
    """Check a value of the option of ``forms`` and return its option string.

    A ``TypeError`` or ``ValueError`` says what is allowed, for the builders to put in context.
    """
    single = StartingPosition if forms == bundled_position_grammar().start else EndingPosition
    if isinstance(value, str):
        document = value.strip().startswith("{")
        value = ShardPositions.from_json(value) if document else single.parse(value)
    if isinstance(value, ShardPositions):
        for stream, shards in value.places.items():
            for shard, place in shards.items():
                if place["type"] not in forms.place_types:
                    raise ValueError(
                        f"must be positions other than {place['type']} "
                        f"(stream {stream!r}, shard {shard!r})"
                    )
    elif not isinstance(value, single):
        raise TypeError(f"a {single.__name__}, a ShardPositions or their string form")
    return value.option_value()


def _identity_fields() -> tuple[str, str]:
    grammar = bundled_position_grammar()
    return grammar.arn_field, grammar.created_field


def _check_identity(stream: str, identity: Mapping[str, str]) -> None:
    where = f"ShardPositions: stream {stream!r}"
    arn_field, created_field = _identity_fields()
    unknown = sorted(set(identity) - {arn_field, created_field})
    if unknown:
        allowed = f"{arn_field}, {created_field}"
        raise ValueError(f"{where}: unknown identity field {unknown[0]!r}; one of {allowed}")
    for key, value in identity.items():
        if not isinstance(value, str):
            raise ValueError(f"{where}: {key} must be a string, not {value!r}")
    arn = identity.get(arn_field)
    if arn is not None and not (arn.startswith("arn:") and arn.endswith(f":stream/{stream}")):
        raise ValueError(
            f"{where}: {arn_field} {arn!r} is not the ARN of stream {stream!r} "
            f"(arn:<partition>:kinesis:<region>:<account>:stream/{stream})"
        )
    created = identity.get(created_field)
    if created is not None:
        _parse_instant(created)


def _check_place(stream: str, shard: str, place: Mapping[str, Any]) -> None:
    where = f"ShardPositions: stream {stream!r}, shard {shard!r}"
    grammar = bundled_position_grammar()
    if not isinstance(shard, str) or re.fullmatch(grammar.shard_id_pattern, shard) is None:
        raise ValueError(f"{where}: not a shard id ({grammar.shard_id_text})")
    if not isinstance(place, Mapping):
        raise ValueError(
            f"{where}: a position must be an object such as {{'type': 'TRIM_HORIZON'}}"
        )
    kind = place.get("type")
    if kind not in grammar.start.place_types:
        types = ", ".join(grammar.start.place_types)
        raise ValueError(f"{where}: type {kind!r} is not one of {types}")
    allowed = {"type"}
    if kind in ("AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER"):
        allowed |= {"sequenceNumber", "subSequenceNumber"}
        seq = place.get("sequenceNumber")
        if not isinstance(seq, str) or re.fullmatch(grammar.sequence_number_pattern, seq) is None:
            raise ValueError(
                f"{where}: sequenceNumber {seq!r} is not a Kinesis sequence number "
                "(a string of decimal digits)"
            )
        sub = place.get("subSequenceNumber")
        if sub is not None and (isinstance(sub, bool) or not isinstance(sub, int) or sub < 0):
            raise ValueError(
                f"{where}: subSequenceNumber {sub!r} is not a whole number of at least 0"
            )
    if kind == "AT_TIMESTAMP":
        allowed |= {"timestamp"}
        moment = place.get("timestamp")
        if not isinstance(moment, str):
            raise ValueError(f"{where}: AT_TIMESTAMP needs a timestamp, an ISO-8601 instant")
        _parse_instant(moment)
    extra = sorted(set(place) - allowed)
    if extra:
        raise ValueError(f"{where}: {kind} takes no {extra[0]}")
