package io.sparkkinesis

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Path, Paths}

import scala.jdk.CollectionConverters._

import org.scalatest.funsuite.AnyFunSuite

/**
 * The connector's packages depend on each other one way: [[PackageDependenciesSuite.Order]] orders them, and a
 * package may use only packages after it (the packages of one group do not use each other). docs/architecture.md
 * ("Package order") shows the same order to readers. The graph is built from the main sources (every line's shims
 * included): the `io.sparkkinesis.*` names in imports and in code, outside comments and string literals. The suites
 * run in the repository's root.
 */
class PackageDependenciesSuite extends AnyFunSuite {
  import PackageDependenciesSuite._

  private lazy val graph: Map[String, Set[String]] =
    dependencies(Seq(Paths.get("src/main/scala"), Paths.get("src/shims")))

  test("the graph is read from the sources: the read side's known dependencies are in it") {
    assert(graph.keySet.contains("source") && graph.keySet.contains("reader.efo"), graph.keySet)
    assert(graph("source").contains("reader"), graph("source"))
    assert(graph("reader.efo").contains("reader"), graph("reader.efo"))
  }

  test("no package depends on itself through others (no cycle)") {
    val found = cycles(graph)
    assert(found.isEmpty, found.map(_.mkString(" → ")).mkString("package cycles: ", "; ", ""))
  }

  test("every dependency goes the way the package order says") {
    val rank = Order.zipWithIndex.flatMap { case (group, i) => group.map(_ -> i) }.toMap
    val unplaced = graph.keySet.flatMap(p => graph(p) + p) -- rank.keySet
    assert(unplaced.isEmpty, s"packages missing from PackageDependenciesSuite.Order: $unplaced")
    val against = for {
      (from, tos) <- graph.toSeq.sortBy(_._1)
      to <- tos.toSeq.sorted
      if rank(to) <= rank(from)
    } yield s"$from → $to"
    assert(against.isEmpty, against.mkString("dependencies against the package order: ", ", ", ""))
  }

  test("the check finds a cycle, and an edge against the order") {
    assert(
      cycles(Map("a" -> Set("b"), "b" -> Set("c"), "c" -> Set("a"), "d" -> Set("a"))) == Seq(
        Seq("a", "b", "c", "a")
      )
    )
    assert(cycles(Map("a" -> Set("b"), "b" -> Set.empty)).isEmpty)
    val code =
      """package io.sparkkinesis.client
        |
        |import io.sparkkinesis.reader.{ChildShard, HashKeyRange}
        |import io.sparkkinesis.config.KinesisOptions._
        |// io.sparkkinesis.sink.Nope in a comment
        |/** [[io.sparkkinesis.source.Nope]] */
        |class A { val b = io.sparkkinesis.reader.efo.EfoFetcher; val s = "io.sparkkinesis.metadata.Nope" }
        |""".stripMargin
    assert(packageOf(code).contains("client"))
    assert(usedPackages(code) == Set("reader", "config", "reader.efo"))
  }
}

object PackageDependenciesSuite {
  private val Root = "io.sparkkinesis"

  /**
   * The packages (relative to `io.sparkkinesis`, "io.sparkkinesis" for the root), from those that may use the most to
   * those that use none of ours. A package uses only packages of later groups; one group's packages do not use each
   * other.
   */
  val Order: Seq[Set[String]] = Seq(
    Set("tools"),
    Set(Root),
    Set("source", "sink", "payload"),
    Set("reader.efo", "metadata"),
    Set("reader"),
    Set("client"),
    Set("credentials"),
    Set("config"),
    Set("resources"),
    Set("errors"),
    Set("compat")
  )

  /** Package (relative to `io.sparkkinesis`, "io.sparkkinesis" for the root) → packages it uses, itself left out. */
  def dependencies(roots: Seq[Path]): Map[String, Set[String]] = {
    val files = roots.filter(Files.isDirectory(_)).flatMap { root =>
      Files.walk(root).iterator().asScala.filter { p =>
        val n = p.toString
        Files.isRegularFile(p) && (n.endsWith(".scala") || n.endsWith(".java"))
      }
    }
    files
      .flatMap { p =>
        val code = new String(Files.readAllBytes(p), UTF_8)
        packageOf(code).map(pkg => pkg -> (usedPackages(code) - pkg))
      }
      .groupBy(_._1)
      .map { case (pkg, uses) => pkg -> uses.flatMap(_._2).toSet }
  }

  private val PackageClause = """(?m)^\s*package\s+([\w.]+)\s*;?\s*$""".r

  def packageOf(code: String): Option[String] =
    PackageClause.findFirstMatchIn(code).map(_.group(1)).collect {
      case Root => Root
      case p if p.startsWith(Root + ".") => p.stripPrefix(Root + ".")
    }

  // A use: io.sparkkinesis, lower-case segments, then a type, an import selector or a wildcard.
  private val Use = """\bio\.sparkkinesis((?:\.[a-z][a-z0-9]*)*)\.(?=[A-Z{_*])""".r

  def usedPackages(code: String): Set[String] =
    Use
      .findAllMatchIn(withoutCommentsAndStrings(code))
      .map(m => m.group(1).stripPrefix("."))
      .map {
        case "" => Root
        case p => p
      }
      .toSet

  private val CommentsAndStrings = """(?s)/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"""".r

  private def withoutCommentsAndStrings(code: String): String =
    CommentsAndStrings.replaceAllIn(code, " ")

  /** For each package that is the smallest on some cycle, one of its shortest cycles, from it back to it. */
  def cycles(graph: Map[String, Set[String]]): Seq[Seq[String]] = {
    val nodes = (graph.keySet ++ graph.values.flatten).toSeq.sorted
    def next(n: String) = graph.getOrElse(n, Set.empty).toSeq.sorted
    // Shortest way back to `start` through packages not smaller than it: each cycle is named once, from its
    // smallest package, and a package on a cycle has one through packages not smaller than the cycle's smallest.
    def backTo(start: String): Option[Seq[String]] = {
      var seen = Set(start)
      var paths = Seq(Seq(start))
      var found = Option.empty[Seq[String]]
      while (found.isEmpty && paths.nonEmpty) {
        val longer = paths.flatMap(p => next(p.last).filter(_ >= start).map(p :+ _))
        found = longer.find(_.last == start)
        paths = longer.filterNot(p => seen(p.last))
        seen ++= paths.map(_.last)
      }
      found
    }
    nodes.flatMap(backTo)
  }
}
