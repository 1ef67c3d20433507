package io.sparkkinesis.errors

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.apache.spark.SparkThrowable
import org.scalatest.funsuite.AnyFunSuite

/**
 * The error conditions file against the source and the docs: every condition is raised somewhere, every condition
 * raised is in the file, each SQLSTATE is well formed and of a class the connector uses, and docs/errors.md lists
 * each condition with its SQLSTATE. The suites run in the repository's root.
 */
class ErrorConditionsSuite extends AnyFunSuite {

  /** The condition names written in the connector's main source (Scala and Java). */
  private lazy val namesInSource: Set[String] = {
    val files = Files.walk(Paths.get("src/main")).iterator().asScala.filter { p =>
      val n = p.toString
      Files.isRegularFile(p) && (n.endsWith(".scala") || n.endsWith(".java"))
    }
    val quoted = "\"(KINESIS_[A-Z_]+)\"".r
    files.flatMap(p => quoted.findAllMatchIn(read(p)).map(_.group(1))).toSet
  }

  private def read(p: Path) = new String(Files.readAllBytes(p), UTF_8)

  test("the file lists conditions, and the source raises each of them") {
    assert(ErrorConditions.all.size >= 10)
    val unused = ErrorConditions.all.keySet -- namesInSource
    assert(unused.isEmpty, s"conditions in ${ErrorConditions.ResourcePath} that nothing raises")
  }

  test("every condition the source names is in the file") {
    val missing = namesInSource -- ErrorConditions.all.keySet
    assert(missing.isEmpty, s"conditions raised but not in ${ErrorConditions.ResourcePath}")
  }

  test("each SQLSTATE is five digits or capital letters, of a class the connector uses") {
    // 0A: feature not supported; 22: data exception; 40: transaction rollback; 42: syntax error or access rule
    // violation (bad options, missing objects); 58: system error (outside the connector).
    val classes = Set("0A", "22", "40", "42", "58")
    ErrorConditions.all.values.foreach { c =>
      assert(ErrorCondition.SqlStatePattern.pattern.matcher(c.sqlState).matches(), c)
      assert(classes.contains(c.sqlState.take(2)), c)
      assert(c.name.startsWith("KINESIS_") && c.name.matches("[A-Z_]+"), c)
    }
  }

  test("docs/errors.md has a row for each condition with its SQLSTATE") {
    val doc = read(Paths.get("docs/errors.md"))
    ErrorConditions.all.values.foreach { c =>
      assert(doc.contains(s"| `${c.name}` | `${c.sqlState}` |"), s"docs/errors.md: no row for $c")
    }
  }

  test("an error renders its template and answers as a SparkThrowable") {
    val e = KinesisErrors.streamNotFound(
      "orders",
      "eu-west-1",
      "http://localhost:4566",
      "DescribeStreamSummary",
      null
    )
    assertCondition(e, "KINESIS_STREAM_NOT_FOUND")
    assert(e.isInstanceOf[SparkThrowable] && e.isInstanceOf[IllegalArgumentException])
    assert(e.getSqlState == "42704")
    assert(
      e.getMessage.startsWith(
        "Stream orders does not exist in region eu-west-1 at endpoint http://localhost:4566"
      )
    )
    assert(e.getMessageParameters.asScala("stream") == "orders")
    assert(e.getMessageTemplate.contains("<stream>") && !e.isInternalError)
  }

  test("a template parameter without a value, and an unknown condition, are the connector's own bugs") {
    assert(
      intercept[IllegalStateException](
        ErrorConditions("KINESIS_STREAM_NOT_FOUND").render(Map.empty)
      ).getMessage.contains("<stream>")
    )
    assert(
      intercept[IllegalStateException](ErrorConditions("KINESIS_NO_SUCH_THING")).getMessage
        .contains("Unknown")
    )
  }
}
