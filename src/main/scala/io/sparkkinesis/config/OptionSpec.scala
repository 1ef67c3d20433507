package io.sparkkinesis.config

import java.util.Locale

import scala.concurrent.duration.FiniteDuration

import io.sparkkinesis.compat.StringNumbers

/** How the raw string of an option becomes a typed value. `describe` is what the docs and errors show. */
private[sparkkinesis] sealed abstract class OptionType[T](val describe: String) extends Serializable {
  def parse(raw: String): Either[String, T]
  def render(value: T): String = value.toString
}

private[sparkkinesis] object OptionType {

  case object Str extends OptionType[String]("string") {

    def parse(raw: String): Either[String, String] =
      if (raw.trim.isEmpty) Left("a non-empty string") else Right(raw.trim)
  }

  case object Bool extends OptionType[Boolean]("boolean") {

    def parse(raw: String): Either[String, Boolean] = raw.trim.toLowerCase(Locale.ROOT) match {
      case "true" => Right(true)
      case "false" => Right(false)
      case _ => Left("true or false")
    }
  }

  case object Integer extends OptionType[Long]("integer") {

    def parse(raw: String): Either[String, Long] =
      StringNumbers.toLongOption(raw.trim.replace("_", "")).toRight("a whole number")
  }

  /** A decimal number such as `1.5`. */
  case object Decimal extends OptionType[Double]("decimal") {

    def parse(raw: String): Either[String, Double] =
      StringNumbers
        .toDoubleOption(raw.trim)
        .filter(d => !d.isNaN && !d.isInfinite)
        .toRight("a decimal number such as 1.5")
  }

  /**
   * A duration such as `500ms`, `30s`, `2m` (or `2min`), `1h` or `1d`, held as milliseconds. A bare number, the
   * awslabs form, counts `bareUnit` (`ms` or `s`): the unit the option's name says.
   */
  final case class Duration(bareUnit: String) extends OptionType[Long]("duration") {
    private val pattern = """(?i)^\s*\+?(\d[\d_]*)\s*(ms|s|sec|m|min|h|d)?\s*$""".r
    private val factors = Map("ms" -> 1L, "s" -> 1000L, "m" -> 60000L, "h" -> 3600000L, "d" -> 86400000L)

    private val allowed = "a duration such as 500ms, 30s, 2m, 1h or 1d, or a bare number of " +
      (if (bareUnit == "s") "seconds" else "milliseconds") + ", below 2^63 ms"

    def parse(raw: String): Either[String, Long] = raw match {
      case pattern(n, unit) =>
        // `sec` and `min` are `s` and `m`. multiplyExact: a duration too large for a Long of milliseconds is
        // refused instead of wrapping around.
        val factor = factors(
          Option(unit).getOrElse(bareUnit).toLowerCase(Locale.ROOT).stripSuffix("ec").stripSuffix("in")
        )
        StringNumbers
          .toLongOption(n.replace("_", ""))
          .flatMap(v => scala.util.Try(Math.multiplyExact(v, factor)).toOption)
          .toRight(allowed)
      case _ => Left(allowed)
    }

    /** In the largest unit that counts it whole: `1500ms`, `30s`, `2m`. */
    override def render(ms: Long): String =
      Seq("d", "h", "m", "s")
        .find(u => ms != 0 && ms % factors(u) == 0)
        .fold(s"${ms}ms")(u => s"${ms / factors(u)}$u")
  }

  /** Durations whose bare number counts milliseconds, or seconds (options whose name ends in `Sec`). */
  val Millis: Duration = Duration("ms")
  val Seconds: Duration = Duration("s")

  /** One of a fixed set of choices, matched by name case-insensitively. */
  final case class OneOf[C <: Choice](choices: Seq[C])
      extends OptionType[C](choices.map(_.name).mkString("one of ", ", ", "")) {
    def names: Seq[String] = choices.map(_.name)

    def parse(raw: String): Either[String, C] =
      choices.find(_.name.equalsIgnoreCase(raw.trim)).toRight(describe)
    override def render(value: C): String = value.name
  }
}

/** A value of an option of fixed choices ([[OptionType.OneOf]]): `name` is how options write it. */
private[sparkkinesis] trait Choice extends Serializable {
  def name: String
  override def toString: String = name
}

/** Where an option applies. */
private[sparkkinesis] sealed trait OptionScope

private[sparkkinesis] object OptionScope {
  case object Source extends OptionScope
  case object Sink extends OptionScope
  case object Both extends OptionScope

  /** The payload functions (`from_glue_schema_registry`, `to_glue_schema_registry`). */
  case object Functions extends OptionScope
}

/** The default of an option: a fixed value, or a rule the docs explain (derived from other settings). */
private[sparkkinesis] sealed trait OptionDefault[+T]

private[sparkkinesis] object OptionDefault {
  final case class Fixed[T](value: T) extends OptionDefault[T]
  final case class Derived(explanation: String) extends OptionDefault[Nothing]
  case object Required extends OptionDefault[Nothing]
}

/**
 * One connector option, declared once: its key (after the `kinesis.` prefix), type, default, check and (in the second
 * parameter list, so that a declaration reads as a table row followed by its text) doc. `scope`: where it applies
 * (the source unless given). `check`: what is allowed when the parsed value is out of range, or None when it is fine.
 * `notYetSupported`: why this build cannot honour an option of the public contract yet; using it fails clearly
 * instead of being ignored. `unsupportedValues`: values it cannot honour yet, with the reason, failing the same way.
 * `secret`: a credential, never echoed in errors, logs or plan strings. `compatibility`: the option is accepted only
 * so that awslabs jobs run unchanged, and has no effect: what this connector does instead, which a warning says when
 * it is set (and `check-options` reports).
 */
private[sparkkinesis] final case class OptionSpec[T](
    key: String,
    optionType: OptionType[T],
    default: OptionDefault[T],
    scope: OptionScope = OptionScope.Source,
    check: T => Option[String] = (_: T) => None,
    notYetSupported: Option[String] = None,
    unsupportedValues: Map[T, String] = Map.empty[T, String],
    secret: Boolean = false,
    compatibility: Option[String] = None
)(val doc: String) {
  def fullKey: String = s"${OptionSpec.Prefix}$key"
  def lowerKey: String = fullKey.toLowerCase(Locale.ROOT)

  def fixedDefault: Option[T] = Some(default).collect { case OptionDefault.Fixed(v) => v }

  def defaultText: String = default match {
    case OptionDefault.Fixed(v) => optionType.render(v)
    case OptionDefault.Derived(explanation) => explanation
    case OptionDefault.Required => "required"
  }
}

private[sparkkinesis] object OptionSpec {
  val Prefix = "kinesis."

  /** A check that keeps its bounds as data, so the option table exports them; milliseconds for a duration. */
  final case class Bounds(min: Long, max: Option[Long], duration: Boolean = false)
      extends (Long => Option[String]) {
    private def show(v: Long) = if (duration) OptionType.Millis.render(v) else v.toString

    /** The bounds in words, such as `from 1 to 256` or `at least 1s`. */
    def text: String = max.fold(s"at least ${show(min)}")(upper => s"from ${show(min)} to ${show(upper)}")

    def apply(v: Long): Option[String] =
      if (v < min || max.exists(v > _)) Some((if (max.isEmpty) "a value of " else "a value ") + text)
      else None
  }

  /** Bounds of a decimal option, kept as data like [[Bounds]]: above `above` (exclusive) and at most `max`. */
  final case class DecimalBounds(above: Double, max: Double) extends (Double => Option[String]) {

    def text: String = s"above ${number(above)} and at most ${number(max)}"

    def apply(v: Double): Option[String] = if (v > above && v <= max) None else Some(s"a value $text")

    private def number(d: Double): String = if (d == Math.rint(d)) d.toLong.toString else d.toString
  }

  /**
   * A check that a string matches `regex` as a whole, kept as data like [[Bounds]]; `allowed` says it in words.
   * With `listOf` (one element in words, such as "a stream name") the value is a comma-separated list instead: each
   * element, trimmed, matches `regex`, and none is listed twice. `regex` keeps to the syntax Java and Python share.
   */
  final case class Matching(regex: String, allowed: String, listOf: Option[String] = None)
      extends (String => Option[String]) {
    private val compiled = java.util.regex.Pattern.compile(regex)
    private def matches(text: String) = compiled.matcher(text).matches()

    def apply(v: String): Option[String] = listOf match {
      case None => if (matches(v)) None else Some(allowed)
      case Some(element) =>
        val items = Matching.items(v)
        items
          .find(!matches(_))
          .map(bad => s"$allowed; '$bad' is not $element")
          .orElse(items.diff(items.distinct).headOption.map(twice => s"$allowed; '$twice' is listed twice"))
    }
  }

  object Matching {

    /** The elements of a comma-separated list, trimmed; an empty element (`a,,b`, a trailing comma) is kept. */
    def items(value: String): Seq[String] = value.split(",", -1).map(_.trim).toSeq
  }

  val HttpUrl: Matching = Matching("(?s)https?://.*", "an http:// or https:// URL")

  def atLeast(min: Long): Bounds = Bounds(min, None)

  def between(min: Long, max: Long): Bounds = Bounds(min, Some(max))

  def atLeast(min: FiniteDuration): Bounds = Bounds(min.toMillis, None, duration = true)

  def between(min: FiniteDuration, max: FiniteDuration): Bounds =
    Bounds(min.toMillis, Some(max.toMillis), duration = true)
}
