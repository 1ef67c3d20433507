package io.sparkkinesis.errors

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._
import scala.reflect.runtime.{universe => ru}

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

  /** The condition names (`KINESIS_...`) that the main source names. */
  private lazy val namesInSource: Set[String] =
    mainSources.values.flatMap("KINESIS_[A-Z_]*[A-Z]".r.findAllMatchIn(_).map(_.group(0))).toSet

  /** The parameter names of each public method of [[KinesisErrors]]. */
  private lazy val parameterNames: Map[String, List[String]] = ru
    .typeOf[KinesisErrors.type]
    .decls
    .filter(d => d.isMethod && d.isPublic)
    .map(d => d.name.decodedName.toString -> d.asMethod.paramLists.flatten.map(_.name.decodedName.toString))
    .toMap

  /** A sample value of a factory's parameter that shows where it lands: its name, or a number of its own. */
  private def sample(t: Class[_], name: String, i: Int): AnyRef = t match {
    case c if c == classOf[String] => s"@$name@"
    case c if c == java.lang.Long.TYPE => Long.box(1000L + i)
    case c if c == java.lang.Integer.TYPE => Int.box(100 + i)
    case c if c == java.lang.Boolean.TYPE => Boolean.box(false)
    case c if c == classOf[Throwable] => new RuntimeException("cause")
    case c if c == classOf[Seq[_]] => Seq(s"@$name@1", s"@$name@2")
    case c => fail(s"no sample value of $c for a factory parameter")
  }

  /** Each public factory of [[KinesisErrors]], called with sample values: its error and the values it was given. */
  private lazy val fromFactories: Seq[(String, KinesisError, Seq[(String, String)])] =
    KinesisErrors.getClass.getMethods.toSeq
      .filter(m => classOf[KinesisError].isAssignableFrom(m.getReturnType))
      .map { m =>
        val names = parameterNames(m.getName)
        val args =
          m.getParameterTypes.toSeq.zip(names).zipWithIndex.map { case ((t, n), i) => sample(t, n, i) }
        val given = names.zip(args).collect {
          case (n, v @ (_: String | _: java.lang.Long | _: java.lang.Integer)) => n -> v.toString
          case (n, v: Seq[_]) => n -> v.head.toString
        }
        (m.getName, m.invoke(KinesisErrors, args: _*).asInstanceOf[KinesisError], given)
      }

  /** The errors of the exception classes that callers catch by type, built with sample values. */
  private lazy val fromClasses: Seq[(String, KinesisError)] = Seq(
    "DataLossException" -> new DataLossException("@shard@", "@stream@", "@position@", "@why@"),
    "LostToOtherAttempt" ->
      new EndRecording.LostToOtherAttempt(
        "@task@",
        ShardKey("@stream@", "@shard@"),
        1,
        "@recordedEnd@",
        "@attemptEnd@"
      ),
    "ProxyRefused" -> new ProxyRefused("@proxy@", "@problem@", null),
    "OptionRuleViolation" -> new OptionRuleViolation("rule", "@ruleMessage@"),
    "OptionRuleViolation (unsupported)" -> new OptionRuleViolation(
      "rule",
      "@ruleMessage@",
      unsupported = true
    )
  )

  private def all = fromFactories.map(f => f._1 -> f._2) ++ fromClasses

  test(
    "each factory and exception class fills exactly its template, each parameter with the value of its name"
  ) {
    assert(fromFactories.size >= 40)
    all.foreach { case (name, e) =>
      assert(e.parameters.keySet == e.condition.parameterNames.toSet, s"$name: ${e.condition.template}")
      assert(!e.getMessage.matches("(?s).*<[a-zA-Z0-9_]+>.*"), s"$name: unfilled in ${e.getMessage}")
      e.parameters.foreach { case (p, v) =>
        val token = "@([a-zA-Z]+)@".r.findFirstMatchIn(v).map(_.group(1))
        assert(token.forall(_ == p), s"$name gives <$p> the value of its parameter ${token.mkString}")
      }
    }
    fromFactories.foreach { case (name, e, given) =>
      given.foreach { case (p, v) =>
        assert(e.parameters.get(p).exists(_.contains(v)), s"$name: its parameter $p does not fill <$p>")
      }
    }
  }

  test("every condition and sub-condition in the file has a factory or an exception class") {
    assert((ErrorConditions.all.keySet -- all.map(_._2.key)).isEmpty, "conditions no factory raises")
  }

  test(
    "the main source calls every factory and builds every exception class, and names only conditions of the file"
  ) {
    val others = mainSources.collect { case (p, text) if !p.endsWith("KinesisErrors.scala") => text }.mkString
    val called = "KinesisErrors\\s*\\.\\s*(\\w+)".r.findAllMatchIn(others).map(_.group(1)).toSet
    assert((fromFactories.map(_._1).toSet -- called).isEmpty, "factories that the main source never calls")
    val classes = fromClasses.map(_._1.takeWhile(_ != ' ')).toSet
    assert(
      classes.filterNot(c => others.contains(s"new $c(")).isEmpty,
      "exception classes the main source never throws"
    )
    val names = ErrorConditions.all.values.map(_.name).toSet
    assert(
      (namesInSource -- names).isEmpty,
      s"conditions named in the source but not in ${ErrorConditions.ResourcePath}"
    )
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

  test("each condition and sub-condition that docs/errors.md names exists") {
    val rows = read(Paths.get("docs/errors.md")).linesIterator.filter(_.startsWith("| `KINESIS_")).toSeq
    assert(rows.nonEmpty)
    val known = ErrorConditions.all.keySet ++ ErrorConditions.all.values.map(_.name)
    rows.foreach { row =>
      val name = row.drop(3).takeWhile(_ != '`')
      // Every upper-case name in backquotes in the row's "When" column is one of the condition's sub-conditions.
      val subs = "`([A-Z][A-Z0-9_]+)`".r.findAllMatchIn(row.split('|')(3)).map(_.group(1)).toSeq
      (name +: subs.map(s"$name." + _)).foreach { key =>
        val exists = known.contains(key)
        assert(exists, s"docs/errors.md names $key, which is not a condition")
      }
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
