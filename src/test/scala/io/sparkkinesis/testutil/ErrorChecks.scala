package io.sparkkinesis.testutil

import io.sparkkinesis.errors.{ErrorConditions, KinesisConnectorException}
import org.scalatest.Assertions._

/** Checks that an error is the connector's, of one condition, with that condition's SQLSTATE. */
object ErrorChecks {

  /** Returns `e` after checking that it is the connector's error, of `condition`, with that SQLSTATE. */
  def assertCondition[E <: Throwable](e: E, condition: String): E = e match {
    case k: KinesisConnectorException =>
      assert(k.getCondition == condition, s"${k.getCondition} instead of $condition: ${e.getMessage}")
      assert(k.getErrorClass == condition)
      assert(
        ErrorConditions.all.values.filter(_.name == condition).map(_.sqlState).toSet == Set(k.getSqlState)
      )
      e
    case other =>
      fail(s"not a KinesisConnectorException (${other.getClass.getName}): ${other.getMessage}", other)
  }

  /**
   * The message of an error in the user's options, after checking its condition: KINESIS_UNSUPPORTED_OPTION when
   * it says what is not supported yet, else KINESIS_INVALID_OPTION.
   */
  def optionErrorMessage(e: Throwable): String = {
    val unsupported = e.getMessage.contains("not supported yet")
    assertCondition(e, if (unsupported) "KINESIS_UNSUPPORTED_OPTION" else "KINESIS_INVALID_OPTION")
    e.getMessage
  }
}
