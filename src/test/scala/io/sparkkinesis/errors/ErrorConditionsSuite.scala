package io.sparkkinesis.errors

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client.ProxyRefused
import io.sparkkinesis.config.OptionRuleViolation
import io.sparkkinesis.reader.DataLossException
import io.sparkkinesis.source.{EndRecording, ShardKey}
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.apache.spark.SparkThrowable
import org.scalatest.funsuite.AnyFunSuite

/**
 * The error conditions file against the source and the docs: every condition is raised somewhere, every condition
 * raised is in the file, every factory fills exactly its template, each SQLSTATE is well formed and of a class the
 * connector uses, and docs/errors.md lists each condition with its SQLSTATE and sub-conditions. The suites run in
 * the repository's root.
 */
class ErrorConditionsSuite extends AnyFunSuite {

  private def read(p: Path) = new String(Files.readAllBytes(p), UTF_8)

  /** The connector's main source files (Scala and Java, shims included) and their text. */
  private lazy val mainSources: Map[Path, String] =
    Seq("src/main", "src/shims")
      .flatMap { root =>
        Files.walk(Paths.get(root)).iterator().asScala.filter { p =>
          val n = p.toString
          Files.isRegularFile(p) && (n.endsWith(".scala") || n.endsWith(".java"))
        }
      }
      .map(p => p -> read(p))
      .toMap

  /** The condition keys (`NAME` or `NAME.SUB`) written as string literals in the main source. */
  private lazy val keysInSource: Set[String] =
    mainSources.values
      .flatMap("\"(KINESIS_[A-Z_]+(?:\\.[A-Z0-9_]+)?)\"".r.findAllMatchIn(_).map(_.group(1)))
      .toSet

  /** A value of each parameter type the factories take. */
  private def sample(t: Class[_]): AnyRef = t match {
    case c if c == classOf[String] => "v"
    case c if c == java.lang.Long.TYPE => Long.box(7L)
    case c if c == java.lang.Integer.TYPE => Int.box(3)
    case c if c == java.lang.Boolean.TYPE => Boolean.box(false)
    case c if c == classOf[Throwable] => new RuntimeException("cause")
    case c if c == classOf[Seq[_]] => Seq("a", "b")
    case c => fail(s"no sample value of $c for a factory parameter")
  }

  /** Each public factory of [[KinesisErrors]], called with sample values. */
  private lazy val fromFactories: Seq[(String, KinesisError)] =
    KinesisErrors.getClass.getMethods.toSeq
      .filter(m => classOf[KinesisError].isAssignableFrom(m.getReturnType))
      .map(m =>
        m.getName -> m.invoke(KinesisErrors, m.getParameterTypes.map(sample): _*).asInstanceOf[KinesisError]
      )

  /** The errors of the exception classes that callers catch by type, built with sample values. */
  private lazy val fromClasses: Seq[(String, KinesisError)] = Seq(
    "DataLossException" -> new DataLossException("s", "t", "p", "w"),
    "LostToOtherAttempt" -> new EndRecording.LostToOtherAttempt("t", ShardKey("s", "h"), 1, "a", "b"),
    "ProxyRefused" -> new ProxyRefused("p:1", "refused", null),
    "OptionRuleViolation" -> new OptionRuleViolation("rule", "m"),
    "OptionRuleViolation (unsupported)" -> new OptionRuleViolation("rule", "m", unsupported = true)
  )

  /** The key (`NAME` or `NAME.SUB`) of an error's condition. */
  private def keyOf(e: KinesisError): String =
    ErrorConditions.all
      .collectFirst { case (k, c) if c == e.condition => k }
      .getOrElse(fail(s"${e.condition}"))

  test("each factory and exception class fills exactly the parameters of its template") {
    assert(fromFactories.size >= 40)
    (fromFactories ++ fromClasses).foreach { case (name, e) =>
      val names = ErrorCondition.Parameter.findAllMatchIn(e.condition.template).map(_.group(1)).toSet
      assert(e.parameters.keySet == names, s"$name passes ${e.parameters.keySet} for ${e.condition.template}")
      assert(!e.asInstanceOf[Throwable].getMessage.matches("(?s).*<[a-zA-Z0-9_]+>.*"), s"$name: unfilled")
    }
  }

  test("every condition and sub-condition in the file has a factory or an exception class") {
    val made = (fromFactories ++ fromClasses).map(e => keyOf(e._2)).toSet
    assert((ErrorConditions.all.keySet -- made).isEmpty, "conditions no factory raises")
  }

  test("the main source raises every condition, and names only conditions of the file") {
    assert((ErrorConditions.all.keySet -- keysInSource).isEmpty, "conditions the source never names")
    assert((keysInSource -- ErrorConditions.all.keySet).isEmpty, s"not in ${ErrorConditions.ResourcePath}")
    val others = mainSources.collect { case (p, text) if !p.endsWith("KinesisErrors.scala") => text }.mkString
    val called = "KinesisErrors\\s*\\.\\s*(\\w+)".r.findAllMatchIn(others).map(_.group(1)).toSet
    assert((fromFactories.map(_._1).toSet -- called).isEmpty, "factories that the main source never calls")
  }

  test("each SQLSTATE is five digits or capital letters, of a class the connector uses") {
    // 0A: feature not supported; 22: data exception; 40: transaction rollback; 42: syntax error or access rule
    // violation (bad options, missing objects); 53: insufficient resources; 58: system error (outside the connector).
    val classes = Set("0A", "22", "40", "42", "53", "58")
    ErrorConditions.all.values.foreach { c =>
      assert(c.sqlState.matches("[0-9A-Z]{5}"), c)
      assert(classes.contains(c.sqlState.take(2)), c)
      assert(c.name.startsWith("KINESIS_") && c.name.matches("[A-Z_]+"), c)
    }
  }

  test("docs/errors.md has a row for each condition with its SQLSTATE, naming each of its sub-conditions") {
    val rows = read(Paths.get("docs/errors.md")).linesIterator.toSeq
    ErrorConditions.all.foreach { case (key, c) =>
      val row = rows.find(_.startsWith(s"| `${c.name}` | `${c.sqlState}` |"))
      assert(row.isDefined, s"docs/errors.md: no row for $c")
      val sub = key.drop(c.name.length + 1)
      assert(sub.isEmpty || row.get.contains(s"`$sub`"), s"docs/errors.md: the row of ${c.name} lacks `$sub`")
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
    val e = KinesisErrors.expectedValue("kinesis.a", "x", "a number")
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
    assertCondition(KinesisErrors.batchReadFanOut(), "KINESIS_UNSUPPORTED_OPTION")
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
        .contains("Internal error of spark-kinesis (a bug in the connector, please report it): unknown error")
    )
  }
}
