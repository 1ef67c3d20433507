package io.sparkkinesis.config

import java.util.Locale

import io.sparkkinesis.errors.KinesisErrors

/**
 * The user's options checked against the option table when the query is defined: unknown `kinesis.*` keys, bad
 * values, options this build does not support yet and breaks of an [[OptionRules]] rule of `scope` all fail here.
 */
private[sparkkinesis] final class OptionValues(raw: Map[String, String], scope: OptionScope) {

  private val values: Map[OptionSpec[_], String] = raw.iterator
    .filter { case (key, _) => key.toLowerCase(Locale.ROOT).startsWith(OptionSpec.Prefix) }
    .map { case (key, value) =>
      val spec = KinesisOptions.lookup(key).getOrElse {
        val hint = KinesisOptions.closestKey(key).map(k => s" Did you mean '$k'?").getOrElse("")
        throw KinesisErrors.unknownOption(key, hint)
      }
      spec -> value
    }
    .toMap

  private val parsed: Map[OptionSpec[_], Any] = values.keys.map { spec =>
    // Scope first: an option of the other side is wrong here whether or not that side is supported yet.
    if (spec.scope != scope && spec.scope != OptionScope.Both && scope != OptionScope.Both) {
      val where = spec.scope match {
        case OptionScope.Sink => "writes (the sink)"
        case OptionScope.Functions => "the functions from_glue_schema_registry and to_glue_schema_registry"
        case _ => "reads (the source)"
      }
      throw KinesisErrors.optionOfOtherSide(spec.fullKey, where)
    }
    spec.notYetSupported.foreach(reason => throw KinesisErrors.optionNotYetSupported(spec.fullKey, reason))
    spec -> parseChecked(spec)
  }.toMap
  OptionRules.check(this, scope)
  OptionValues.warnOnce(KinesisOptions.compatibilityWarnings(values.keys.map(_.fullKey)))

  private def parseChecked[T](spec: OptionSpec[T]): T = {
    val text = values(spec)
    def invalid(allowed: String) = KinesisErrors.expectedValue(spec.fullKey, text, allowed, spec.secret)
    val parsed = spec.optionType.parse(text).fold(allowed => throw invalid(allowed), identity)
    spec.check(parsed).foreach(allowed => throw invalid(allowed))
    spec.unsupportedValues.get(parsed).foreach { reason =>
      throw KinesisErrors.valueNotYetSupported(spec.fullKey, spec.optionType.render(parsed), reason)
    }
    parsed
  }

  /** Whether the user gave the option. */
  def isSet(spec: OptionSpec[_]): Boolean = values.contains(spec)

  /** The option's value in its canonical string form: the value given, else its fixed default. */
  def canonical[T](spec: OptionSpec[T]): Option[String] =
    get(spec).orElse(spec.fixedDefault).map(spec.optionType.render)

  def get[T](spec: OptionSpec[T]): Option[T] = parsed.get(spec).map(_.asInstanceOf[T])

  def getOrDefault[T](spec: OptionSpec[T]): T = get(spec).orElse(spec.fixedDefault).getOrElse {
    throw KinesisErrors.internal(s"${spec.fullKey} has no fixed default (${spec.default})")
  }

  def required[T](spec: OptionSpec[T]): T = get(spec).getOrElse(
    throw KinesisErrors.requiredOption(spec.fullKey, spec.doc)
  )
}

private[sparkkinesis] object OptionValues {
  private val log = org.slf4j.LoggerFactory.getLogger(classOf[OptionValues])
  private val warned = java.util.concurrent.ConcurrentHashMap.newKeySet[String]()

  /** Logs each warning once per JVM (a query's options are parsed several times while it is defined). */
  private def warnOnce(warnings: Seq[String]): Unit = warnings.foreach(w => if (warned.add(w)) log.warn(w))
}
