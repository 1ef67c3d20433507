package io.sparkkinesis.compat

/** Number parsing that never throws: `None` for anything that is not a number (Scala 2.13 has it built in). */
private[sparkkinesis] object StringNumbers {

  def toLongOption(s: String): Option[Long] = s.toLongOption

  def toDoubleOption(s: String): Option[Double] = s.toDoubleOption
}
