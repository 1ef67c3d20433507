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

  private def mainSources: Seq[Path] = Files.walk(Paths.get("src/main")).iterator().asScala.toList.filter { p =>
    Files.isRegularFile(p) && p.toString.endsWith(".scala")
  }

  /** The names of the conditions (a condition with sub-conditions once). */
  private def conditionNames = ErrorConditions.all.values.map(_.name).toSet

  /** The index just past the `close` that matches the `open` at `start`, skipping string literals. */
  private def pastMatching(text: String, start: Int, open: Char, close: Char): Int = {
    var (i, depth) = (start + 1, 1)
    while (depth > 0) {
      text(i) match {
        case '"' => i = pastString(text, i) - 1
        case c if c == open => depth += 1
        case c if c == close => depth -= 1
        case _ =>
      }
      i += 1
    }
    i
  }

  /** The index just past the string literal that opens at `start` (interpolated `${...}` included). */
  private def pastString(text: String, start: Int): Int =
    if (text.startsWith("\"\"\"", start)) text.indexOf("\"\"\"", start + 3) + 3
    else {
      var i = start + 1
      while (text(i) != '"')
        if (text(i) == '\\') i += 2
        else if (text.startsWith("${", i)) i = pastMatching(text, i + 1, '{', '}')
        else i += 1
      i + 1
    }

  test("the file lists conditions, and the source raises each of them") {
    assert(ErrorConditions.all.size >= 10)
    val unused = conditionNames -- namesInSource
    assert(unused.isEmpty, s"conditions in ${ErrorConditions.ResourcePath} that nothing raises")
  }

  test("every condition the source names is in the file") {
    val missing = namesInSource -- conditionNames
    assert(missing.isEmpty, s"conditions raised but not in ${ErrorConditions.ResourcePath}")
  }

  test("each SQLSTATE is five digits or capital letters, of a class the connector uses") {
    // 0A: feature not supported; 22: data exception; 40: transaction rollback; 42: syntax error or access rule
    // violation (bad options, missing objects); 58: system error (outside the connector).
    val classes = Set("0A", "22", "40", "42", "58")
    ErrorConditions.all.values.foreach { c =>
      assert(c.sqlState.matches("[0-9A-Z]{5}"), c)
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

  test(
    "each call of a KinesisErrors factory passes exactly its template's parameters, and each shape is raised"
  ) {
    // The factories that take the values as (name -> value) pairs: the condition each raises, and its fixed
    // sub-condition, or None when the first argument names it (`shape`).
    val factory =
      """def (\w+)\(\s*(shape: String,\s*)?\w+: \(String, String\)\*\s*\)[^=]*=\s*new \w+\(\s*""" +
        """ErrorConditions\("(KINESIS_[A-Z_]+)"(?:, "([A-Z0-9_]+)")?"""
    val factories = factory.r
      .findAllMatchIn(read(Paths.get("src/main/scala/io/sparkkinesis/errors/KinesisErrors.scala")))
      .map(m =>
        m.group(1) -> (m.group(3), if (m.group(2) != null) None else Some(Option(m.group(4)).getOrElse("")))
      )
      .toMap
    assert(factories.size >= 7, factories)
    val call = """KinesisErrors\s*\.\s*(\w+)\(""".r
    val shapeArgument = "^\\s*\"([A-Z0-9_]+)\"".r
    val key = "\"(\\w+)\"\\s*->".r
    val calls = for {
      file <- mainSources
      text = read(file)
      m <- call.findAllMatchIn(text).toList if factories.contains(m.group(1))
    } yield {
      val (name, fixed) = factories(m.group(1))
      val arguments = text.substring(m.end, pastMatching(text, m.end - 1, '(', ')') - 1)
      val where = s"${file.getFileName}: KinesisErrors.${m.group(1)}(${arguments.take(60)}"
      val shape = fixed.getOrElse(
        shapeArgument.findFirstMatchIn(arguments).map(_.group(1)).getOrElse(fail(s"$where: no literal shape"))
      )
      val condition = ErrorConditions(name, shape)
      val passed = key.findAllMatchIn(arguments).map(_.group(1)).toSet
      val names = ErrorCondition.Parameter.findAllMatchIn(condition.template).map(_.group(1)).toSet
      assert(
        passed == names,
        s"$where: passes $passed for the template ${condition.template}"
      )
      if (shape.isEmpty) name else s"$name.$shape"
    }
    // Every shape of a condition whose factory takes the shape is raised by some call (the others are raised by
    // exception classes: OptionRuleViolation, ProxyRefused, DataLossException, the sink's and the reader's).
    val shaped = factories.values.collect { case (name, None) => name }.toSet
    val unraised = ErrorConditions.all.keySet.filter(k => shaped(k.takeWhile(_ != '.'))) -- calls.toSet --
      Set(
        "KINESIS_INVALID_OPTION.BROKEN_RULE",
        "KINESIS_UNSUPPORTED_OPTION.BROKEN_RULE",
        "KINESIS_INVALID_OPTION.PROXY_REFUSED"
      )
    assert(unraised.isEmpty, "shapes in the file that no call raises")
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

  test("templated conditions render the sentences users saw when the text was built at the error site") {
    def render(name: String, parameters: (String, String)*) = ErrorConditions(name).render(parameters.toMap)
    assert(
      KinesisErrors.consumerNotActive("app", "arn:aws:kinesis:s", 300, "still CREATING").getMessage ==
        "The enhanced fan-out consumer app of arn:aws:kinesis:s did not become ACTIVE within 300 s (still CREATING). " +
        "Kinesis allows 5 consumers in CREATING at once per account and 20 registered consumers per stream (50 on " +
        "an On-demand Advantage stream); check for leftover consumers (aws kinesis list-stream-consumers)."
    )
    val timeout = Seq("pending" -> "2", "sent" -> "9", "partition" -> "3", "timeoutMs" -> "60000")
    assert(
      render(
        "KINESIS_SINK_ACK_TIMEOUT",
        timeout: _*
      ) == "2 of 9 rows of partition 3 were still unacknowledged " +
        "60000 ms after the task finished writing (kinesis.sink.recordTtl plus request timeouts); the producer " +
        "seems stuck"
    )
    val failed =
      Seq(
        "row" -> "4",
        "partition" -> "1",
        "key" -> "partition key 'k'",
        "stream" -> "s",
        "producerError" -> "x"
      )
    assert(
      render("KINESIS_SINK_RECORD_FAILED", failed: _*) ==
        "Row 4 of partition 1 (partition key 'k') was not written to stream s: x"
    )
    val mismatch = Seq(
      "task" -> "task",
      "shard" -> "shardId-1",
      "stream" -> "s",
      "batch" -> "7",
      "recordedEnd" -> "AT 1",
      "attemptEnd" -> "none"
    )
    assert(
      render("KINESIS_RECORDED_END_MISMATCH", mismatch: _*) == "Another attempt of the task reading shard " +
        "shardId-1 of stream s in batch 7 recorded a different end first (AT 1; this attempt: none). This " +
        "attempt's rows are not the batch's, so it fails; the batch reads exactly to the recorded end."
    )
  }

  test("sub-conditions keep the condition's name and SQLSTATE and render the sentence users saw") {
    val e = KinesisErrors.invalidOption(
      "EXPECTED_VALUE",
      "value" -> "'x'",
      "option" -> "kinesis.a",
      "allowed" -> "a number"
    )
    assertCondition(e, "KINESIS_INVALID_OPTION")
    assert(e.getMessage == "Invalid value 'x' for option kinesis.a: expected a number.")
    assert(e.getMessageTemplate == "Invalid value <value> for option <option>: expected <allowed>.")
    assert(
      e.getMessageParameters.asScala == Map(
        "value" -> "'x'",
        "option" -> "kinesis.a",
        "allowed" -> "a number"
      )
    )
    assertCondition(KinesisErrors.unsupportedOperation("BATCH_READ_FAN_OUT"), "KINESIS_UNSUPPORTED_OPTION")
    assert(
      ErrorConditions.all.values.filter(_.name == "KINESIS_INVALID_OPTION").map(_.sqlState).toSet == Set(
        "42616"
      )
    )
    assert(
      KinesisErrors.sinkInvalidRow(3, 1, "data is null").getMessage ==
        "Row 3 of partition 1 cannot be written to Kinesis: data is null."
    )
    // No template is a bare "<reason>": each says its sentence, with values for what varies. The one exception is
    // a broken option rule, whose sentence is declared with the rule (OptionRules, exported to options.json).
    val bare = ErrorConditions.all.filter(_._2.template.replaceAll("<[a-zA-Z]+>", "").trim.length < 20).keySet
    assert(bare == Set("KINESIS_INVALID_OPTION.BROKEN_RULE", "KINESIS_UNSUPPORTED_OPTION.BROKEN_RULE"))
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
