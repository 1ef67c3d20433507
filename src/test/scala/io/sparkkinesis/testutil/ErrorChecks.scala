package io.sparkkinesis.testutil

import io.sparkkinesis.errors.{ErrorConditions, KinesisConnectorException}
import org.scalatest.Assertions._

/** Checks that an error is the connector's, of one condition, with that condition's SQLSTATE. */
object ErrorChecks {

  /** Returns `e` as the connector's error after checking its condition and SQLSTATE. */
  def assertCondition(e: Throwable, condition: String): KinesisConnectorException = e match {
    case k: KinesisConnectorException =>
      assert(k.getCondition == condition, s"${k.getCondition} instead of $condition: ${e.getMessage}")
      assert(k.getErrorClass == condition)
      assert(k.getSqlState == ErrorConditions(condition).sqlState)
      k
    case other =>
      fail(s"not a KinesisConnectorException (${other.getClass.getName}): ${other.getMessage}", other)
  }
}
