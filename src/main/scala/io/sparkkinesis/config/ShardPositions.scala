package io.sparkkinesis.config

import java.time.Instant

import scala.jdk.CollectionConverters._
import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}

/** One shard's place in a per-shard positions document (see [[ShardPositions]]). */
private[sparkkinesis] sealed trait ShardPlace

private[sparkkinesis] object ShardPlace {

  /** Before the oldest record still retained. */
  case object TrimHorizon extends ShardPlace

  /** The tip: after the last record put when the query starts (or, for an end, when the read is planned). */
  case object Latest extends ShardPlace

  /** Before the first record that arrived at or after `instant`. */
  final case class AtTimestamp(instant: Instant) extends ShardPlace

  /** Before the record `sequenceNumber`; with `subSequenceNumber` k, before its KPL sub-record k. */
  final case class AtSequence(sequenceNumber: String, subSequenceNumber: Option[Int]) extends ShardPlace

  /**
   * After the record `sequenceNumber`; with `subSequenceNumber` k, after its KPL sub-record k (the rest of the
   * aggregate lies after the place). For a record that is no aggregate, any k means after the whole record: this is
   * what a KCL checkpoint (sequence number, sub-sequence number) means.
   */
  final case class AfterSequence(sequenceNumber: String, subSequenceNumber: Option[Int]) extends ShardPlace

  /** The shard was read to its end (starting positions only): nothing of it is read, its children are. */
  case object ShardEnd extends ShardPlace

  /** Where `place` lies among the places of one shard, when it is fixed by a sequence number. */
  def sequenceKey(place: ShardPlace): Option[(BigInt, Long)] = place match {
    case AtSequence(seq, sub) => Some(BigInt(seq) -> sub.getOrElse(0).toLong)
    case AfterSequence(seq, None) => Some(BigInt(seq) -> Long.MaxValue)
    case AfterSequence(seq, Some(k)) => Some(BigInt(seq) -> (k.toLong + 1L))
    case _ => None
  }
}

/**
 * A per-shard positions document: for each stream, the place of each listed shard. Given as JSON in
 * `kinesis.startingPosition` or `kinesis.endingPosition`:
 * {{{
 * {"orders": {"shardId-000000000000": {"type": "AFTER_SEQUENCE_NUMBER", "sequenceNumber": "4959...", "subSequenceNumber": 2},
 *             "shardId-000000000001": {"type": "TRIM_HORIZON"}}}
 * }}}
 *
 * A stream's object may also say which stream the positions belong to, with `"streamArn"` (its ARN) and
 * `"streamCreationTimestamp"` (when it was created, an ISO-8601 instant), as DescribeStreamSummary reports them
 * (`identities`). Then a read whose stream of that name is another one (deleted and re-created since) fails, or with
 * `kinesis.failOnDataLoss=false` reads it from TRIM_HORIZON, instead of reading the old stream's sequence numbers in
 * the new one. Those two keys are never taken for shard ids.
 */
private[sparkkinesis] final case class ShardPositions(
    streams: Map[String, Map[String, ShardPlace]],
    identities: Map[String, StreamIdentity] = Map.empty
) {

  def placeOf(streamName: String, shardId: String): Option[ShardPlace] =
    streams.get(streamName).flatMap(_.get(shardId))

  /** The document as JSON, keys sorted, in the form [[ShardPositions.parse]] reads. */
  def toJson: String = {
    val root = ShardPositions.mapper.createObjectNode()
    streams.toSeq.sortBy(_._1).foreach { case (stream, shards) =>
      val node = root.putObject(stream)
      identities.get(stream).foreach(_.writeTo(node))
      shards.toSeq.sortBy(_._1).foreach { case (shard, place) =>
        val p = node.putObject(shard)
        place match {
          case ShardPlace.TrimHorizon => p.put("type", "TRIM_HORIZON")
          case ShardPlace.Latest => p.put("type", "LATEST")
          case ShardPlace.ShardEnd => p.put("type", "SHARD_END")
          case ShardPlace.AtTimestamp(i) => p.put("type", "AT_TIMESTAMP").put("timestamp", i.toString)
          case ShardPlace.AtSequence(seq, sub) =>
            p.put("type", "AT_SEQUENCE_NUMBER").put("sequenceNumber", seq)
            sub.foreach(p.put("subSequenceNumber", _))
          case ShardPlace.AfterSequence(seq, sub) =>
            p.put("type", "AFTER_SEQUENCE_NUMBER").put("sequenceNumber", seq)
            sub.foreach(p.put("subSequenceNumber", _))
        }
      }
    }
    ShardPositions.mapper.writeValueAsString(root)
  }
}

private[sparkkinesis] object ShardPositions {
  private val mapper = new ObjectMapper()

  /** What a shard id may be, as a regular expression and in words (exported in the option table). */
  val ShardIdPattern = "[a-zA-Z0-9_.-]{1,128}"
  val ShardIdText = "1 to 128 letters, digits, '_', '.' or '-'"
  // Kinesis sequence numbers: decimal, at most 129 digits (the API's pattern is 0|([1-9]\d{0,128})).
  val SequenceNumberPattern = "0|[1-9][0-9]{0,128}"
  private val shardIdPattern = ShardIdPattern.r
  private val sequencePattern = SequenceNumberPattern.r

  val StartTypes: Seq[String] =
    Seq("TRIM_HORIZON", "LATEST", "AT_TIMESTAMP", "AT_SEQUENCE_NUMBER", "AFTER_SEQUENCE_NUMBER", "SHARD_END")
  val EndTypes: Seq[String] = StartTypes.filterNot(_ == "SHARD_END")

  /**
   * Reads a document. `types` are the place types allowed (starting positions allow SHARD_END, ends do not).
   * Errors name the stream, the shard and what is wrong.
   */
  def parse(raw: String, types: Seq[String]): Either[String, ShardPositions] = {
    val root =
      try mapper.readTree(raw)
      catch {
        case e: Exception =>
          return Left(
            s"not valid JSON (${Option(e.getMessage).flatMap(_.split("\n").headOption).getOrElse("")})"
          )
      }
    if (root == null || !root.isObject || root.size == 0)
      return Left("a JSON object mapping stream names to objects of shard id -> position")
    val identities = Map.newBuilder[String, StreamIdentity]
    val streams = root.properties().asScala.toList.map { entry =>
      val (stream, shards) = (entry.getKey, entry.getValue)
      val identityKeys = Set(StreamIdentity.ArnField, StreamIdentity.CreatedField)
      if (!shards.isObject || shards.fieldNames().asScala.forall(identityKeys))
        return Left(s"stream '$stream' must map to a non-empty object of shard id -> position")
      identity(stream, shards) match {
        case Left(problem) => return Left(problem)
        case Right(id) => id.foreach(identities += stream -> _)
      }
      val places = shards.properties().asScala.toList.filterNot(s => identityKeys(s.getKey)).map { s =>
        place(stream, s.getKey, s.getValue, types) match {
          case Right(p) => s.getKey -> p
          case Left(problem) => return Left(problem)
        }
      }
      stream -> places.toMap
    }
    Right(ShardPositions(streams.toMap, identities.result()))
  }

  /** The stream's identity from its `streamArn` and `streamCreationTimestamp`, when it has either. */
  private def identity(stream: String, node: JsonNode): Either[String, Option[StreamIdentity]] = {
    def text(field: String): Either[String, Option[String]] = Option(node.get(field)) match {
      case None => Right(None)
      case Some(v) if v.isTextual => Right(Some(v.asText))
      case Some(v) => Left(s"stream '$stream': $field must be a string, not ${v.toString}")
    }
    for {
      arn <- text(StreamIdentity.ArnField)
      _ <- arn match {
        case Some(a) if !(a.startsWith("arn:") && a.endsWith(s":stream/$stream")) =>
          Left(
            s"stream '$stream': ${StreamIdentity.ArnField} '$a' is not the ARN of stream '$stream' " +
              s"(arn:<partition>:kinesis:<region>:<account>:stream/$stream)"
          )
        case _ => Right(())
      }
      createdText <- text(StreamIdentity.CreatedField)
      created <- createdText match {
        case None => Right(None)
        case Some(t) =>
          StreamIdentity
            .parseInstant(t)
            .map(Some(_))
            .toRight(
              s"stream '$stream': ${StreamIdentity.CreatedField} '$t' is not an ISO-8601 instant with an offset " +
                "(such as 2026-11-26T17:13:22.126Z)"
            )
      }
    } yield Some(StreamIdentity(arn, created)).filterNot(_.isEmpty)
  }

  private def place(
      stream: String,
      shard: String,
      node: JsonNode,
      types: Seq[String]
  ): Either[String, ShardPlace] = {
    val where = s"stream '$stream', shard '$shard'"
    if (!shardIdPattern.pattern.matcher(shard).matches())
      return Left(s"$where: '$shard' is not a shard id ($ShardIdText)")
    if (!node.isObject)
      return Left(where + """: the position must be an object such as {"type": "TRIM_HORIZON"}""")
    val known = Set("type", "sequenceNumber", "subSequenceNumber", "timestamp")
    val unknown = node.fieldNames().asScala.filterNot(known).toList
    if (unknown.nonEmpty)
      return Left(
        s"$where: unknown field '${unknown.head}'; a position has ${known.toSeq.sorted.mkString(", ")}"
      )
    val tpe = Option(node.get("type")).filter(_.isTextual).map(_.asText).getOrElse("")
    if (!types.contains(tpe)) return Left(s"$where: type '$tpe' is not one of ${types.mkString(", ")}")
    def seq: Either[String, String] = Option(node.get("sequenceNumber")) match {
      case Some(v) if v.isTextual && sequencePattern.pattern.matcher(v.asText).matches() => Right(v.asText)
      case Some(v) =>
        Left(
          s"$where: sequenceNumber ${v.toString} is not a Kinesis sequence number (a string of decimal digits)"
        )
      case None => Left(s"$where: $tpe needs a sequenceNumber")
    }
    def sub: Either[String, Option[Int]] = Option(node.get("subSequenceNumber")) match {
      case None => Right(None)
      case Some(v) if v.isInt && v.asInt >= 0 => Right(Some(v.asInt))
      case Some(v) => Left(s"$where: subSequenceNumber ${v.toString} is not a whole number of at least 0")
    }
    def only(field: String*): Either[String, Unit] =
      node.fieldNames().asScala.find(f => f != "type" && !field.contains(f)) match {
        case Some(extra) => Left(s"$where: $tpe takes no $extra")
        case None => Right(())
      }
    tpe match {
      case "TRIM_HORIZON" => only().map(_ => ShardPlace.TrimHorizon)
      case "LATEST" => only().map(_ => ShardPlace.Latest)
      case "SHARD_END" => only().map(_ => ShardPlace.ShardEnd)
      case "AT_TIMESTAMP" =>
        val missing =
          s"$where: AT_TIMESTAMP needs a timestamp, an ISO-8601 instant such as 2023-08-30T19:00:05Z"
        for {
          _ <- only("timestamp")
          text <- Option(node.get("timestamp")).filter(_.isTextual).map(_.asText).toRight(missing)
          instant <- PositionText
            .parseInstant(text)
            .toRight(s"$where: timestamp '$text' is not an ISO-8601 instant with an offset")
        } yield ShardPlace.AtTimestamp(instant)
      case _ =>
        for { _ <- only("sequenceNumber", "subSequenceNumber"); s <- seq; k <- sub } yield
          if (tpe == "AT_SEQUENCE_NUMBER") ShardPlace.AtSequence(s, k) else ShardPlace.AfterSequence(s, k)
    }
  }

  /** Where a start and an end document both fix a shard by sequence number, the end must not lie before the start. */
  def checkRange(start: ShardPositions, end: ShardPositions): Either[String, Unit] = {
    val bad = for {
      (stream, shards) <- end.streams.toSeq.sortBy(_._1)
      (shard, endPlace) <- shards.toSeq.sortBy(_._1)
      startPlace <- start.placeOf(stream, shard)
      e <- ShardPlace.sequenceKey(endPlace)
      s <- ShardPlace.sequenceKey(startPlace)
      if Ordering[(BigInt, Long)].lt(e, s)
    } yield s"stream '$stream', shard '$shard': the ending position lies before the starting position"
    bad.headOption.toLeft(())
  }
}
