package io.sparkkinesis.compat

import scala.util.Try

/**
 * Number parsing that never throws: `None` for anything that is not a number. Accepts what Scala 2.13's
 * `toLongOption` / `toDoubleOption` accept; the JDK parser alone would also take `1.5d` or hexadecimal floats.
 */
private[sparkkinesis] object StringNumbers {

  private val decimal = """[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:NaN|Infinity)""".r

  def toLongOption(s: String): Option[Long] = Try(java.lang.Long.parseLong(s)).toOption

  def toDoubleOption(s: String): Option[Double] =
    if (decimal.pattern.matcher(s).matches()) Try(java.lang.Double.parseDouble(s)).toOption else None
}
