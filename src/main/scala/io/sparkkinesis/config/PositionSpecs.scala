package io.sparkkinesis.config

import java.time.{Instant, OffsetDateTime}
import java.time.format.DateTimeParseException
import java.util.Locale

import scala.util.Try

/** Where a query with no checkpoint starts reading. */
private[sparkkinesis] sealed trait StartingPositionSpec

private[sparkkinesis] object StartingPositionSpec {
  case object Latest extends StartingPositionSpec
  case object TrimHorizon extends StartingPositionSpec
  final case class AtTimestamp(instant: Instant) extends StartingPositionSpec

  /** Per-shard places; shards the document does not list start as [[ShardPositions]] states. */
  final case class PerShard(positions: ShardPositions) extends StartingPositionSpec

  /** Every accepted form, in words (error messages; exported in the option table). */
  val allowed: String =
    "LATEST, TRIM_HORIZON, EARLIEST, 'AT_TIMESTAMP <ISO-8601 instant with offset, e.g. 2023-08-30T19:00:05Z>' or " +
      "a JSON document of per-shard positions"

  /** The names of single positions, matched in upper case; the first name of a position is its canonical one. */
  val Names: Seq[(String, StartingPositionSpec)] =
    Seq("LATEST" -> Latest, "TRIM_HORIZON" -> TrimHorizon, "EARLIEST" -> TrimHorizon)

  def parse(raw: String): Either[String, StartingPositionSpec] =
    PositionText.parse(raw, allowed, ShardPositions.StartTypes, Names.toMap, AtTimestamp, PerShard)
}

/** The text forms shared by `kinesis.startingPosition` and `kinesis.endingPosition`. */
private[config] object PositionText {

  /** The keyword of `AT_TIMESTAMP <instant>`. */
  val AtTimestamp = "AT_TIMESTAMP"

  /**
   * A per-shard document (of `documentTypes`), `AT_TIMESTAMP <instant>`, or one of the names `named` knows (matched
   * in upper case). `allowed` describes every accepted form, for the message.
   */
  def parse[T](
      raw: String,
      allowed: String,
      documentTypes: Seq[String],
      named: PartialFunction[String, T],
      atTimestamp: Instant => T,
      perShard: ShardPositions => T
  ): Either[String, T] = {
    val trimmed = raw.trim
    val upper = trimmed.toUpperCase(Locale.ROOT)
    if (trimmed.startsWith("{")) {
      ShardPositions
        .parse(trimmed, documentTypes)
        .map(perShard)
        .left
        .map(problem => s"a per-shard positions document; $problem")
    } else if (named.isDefinedAt(upper)) Right(named(upper))
    else if (upper.startsWith(AtTimestamp)) {
      val text = trimmed.substring(AtTimestamp.length).trim
      parseInstant(text)
        .map(atTimestamp)
        .toRight(s"$allowed; '$text' is not an ISO-8601 instant with an offset")
    } else Left(allowed)
  }

  def parseInstant(text: String): Option[Instant] =
    try Some(OffsetDateTime.parse(text).toInstant)
    catch { case _: DateTimeParseException => Try(Instant.parse(text)).toOption }
}

/** Where a batch read ends (exclusive): it reads the records before this place. */
private[sparkkinesis] sealed trait EndingPositionSpec

private[sparkkinesis] object EndingPositionSpec {

  /** The tip of each shard when the read is planned. */
  case object Latest extends EndingPositionSpec

  /** Before the first record that arrived at or after `instant`, in every shard. */
  final case class AtTimestamp(instant: Instant) extends EndingPositionSpec

  /** Per-shard places; for shards the document does not list, see the batch planner. */
  final case class PerShard(positions: ShardPositions) extends EndingPositionSpec

  /** Every accepted form, in words (error messages; exported in the option table). */
  val allowed: String =
    "LATEST, 'AT_TIMESTAMP <ISO-8601 instant with offset, e.g. 2023-08-30T19:00:05Z>' or a JSON document of " +
      "per-shard positions"

  /** The names of single positions, as for [[StartingPositionSpec.Names]]. */
  val Names: Seq[(String, EndingPositionSpec)] = Seq("LATEST" -> Latest)

  def parse(raw: String): Either[String, EndingPositionSpec] =
    PositionText.parse(raw, allowed, ShardPositions.EndTypes, Names.toMap, AtTimestamp, PerShard)
}
