package io.sparkkinesis.payload

import java.util.Locale

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.analysis.FunctionRegistry
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodeGenerator, CodegenContext, ExprCode}
import org.apache.spark.sql.catalyst.util.MapData
import org.apache.spark.sql.types.{MapType, StringType}

import io.sparkkinesis.errors.KinesisErrors

/** One SQL function of the connector: its name, its usage text and how it is built from its arguments. */
private[sparkkinesis] final case class PayloadFunction(
    name: String,
    usage: String,
    build: Seq[Expression] => Expression
) {

  private def info = new ExpressionInfo(getClass.getName, null, name, usage, "", "", "", "", "", "", "")

  /** The form `SparkSessionExtensions.injectFunction` and a session's function registry take. */
  def description: (FunctionIdentifier, ExpressionInfo, Seq[Expression] => Expression) =
    (FunctionIdentifier(name), info, build)
}

/** The payload functions, and how their arguments are read. */
private[sparkkinesis] object PayloadFunctions {

  def all: Seq[PayloadFunction] =
    Seq(GlueSchemaRegistryFunctions.Decode, GlueSchemaRegistryFunctions.Encode, DynamoDbChanges.function)

  /**
   * Registers every function in a running classic session (for sessions built without
   * `spark.sql.extensions=io.sparkkinesis.KinesisSqlExtensions`). Spark 4 keeps the session state on the classic
   * session class only, and moved its class, hence the reflective calls.
   */
  def register(spark: SparkSession): Unit = {
    val state = spark.getClass.getMethod("sessionState").invoke(spark)
    val registry = state.getClass.getMethod("functionRegistry").invoke(state).asInstanceOf[FunctionRegistry]
    all.foreach { f =>
      val (id, info, build) = f.description
      registry.registerFunction(builtin(id), info, build)
    }
  }

  /**
   * The name a session's registry takes for a function without a database: Spark 4.2's registry asserts a
   * three-part (system.builtin) name and builds it with `FunctionRegistry.builtinFunctionIdentifier`, as its
   * `SparkSessionExtensions` does; older lines have no such method and take the bare name.
   */
  private def builtin(id: FunctionIdentifier): FunctionIdentifier =
    try
      FunctionRegistry.getClass
        .getMethod("builtinFunctionIdentifier", classOf[String])
        .invoke(FunctionRegistry, id.funcName)
        .asInstanceOf[FunctionIdentifier]
    catch { case _: NoSuchMethodException => id }

  /** The arguments of `function` when it takes `min` to `max` of them; fails naming the function and its usage. */
  def arity(function: PayloadFunction, args: Seq[Expression], min: Int, max: Int): Unit =
    if (args.size < min || args.size > max)
      throw KinesisErrors.functionArgument(
        function.name,
        s"takes ${if (min == max) s"$min" else s"$min to $max"} arguments, got ${args.size}. Usage: ${function.usage}"
      )

  /**
   * The options argument of `function`: a constant map of strings, such as `map('kinesis.region', 'us-east-1')`;
   * keys keep their case (options match keys without case).
   */
  def options(function: String, arg: Expression): Map[String, String] = {
    def invalid(problem: String) = KinesisErrors.functionArgument(function, problem)
    arg.dataType match {
      case MapType(StringType, StringType, _) if arg.foldable =>
        Option(arg.eval()).fold(Map.empty[String, String]) { case m: MapData =>
          val keys = m.keyArray().toSeq[Any](StringType).map(String.valueOf)
          val values = m.valueArray().toSeq[Any](StringType).map(v => if (v == null) null else v.toString)
          keys
            .zip(values)
            .map { case (k, v) =>
              if (v == null) throw invalid(s"option $k has a null value")
              k -> v
            }
            .toMap
        }
      case MapType(StringType, StringType, _) =>
        throw invalid("the options must be a constant map, such as map('kinesis.region', 'us-east-1')")
      case other =>
        throw invalid(
          s"the options must be a map of strings to strings, got ${other.simpleString.toLowerCase(Locale.ROOT)}"
        )
    }
  }
}

/**
 * A function of one value whose generated code calls its `evalValue` with the child's value (a null result is
 * null). Spark's CodegenFallback would instead evaluate the whole expression from a materialized input row: a struct
 * read from a columnar cache, for one, would be copied into a row first, per record.
 */
private[sparkkinesis] trait EvalInGeneratedCode extends UnaryExpression {

  // A record a function cannot read may give null (PERMISSIVE), whatever the child's nullability.
  override def nullable: Boolean = true

  /** The function of a non-null value; generated code calls it. */
  def evalValue(input: Any): Any

  override protected def nullSafeEval(input: Any): Any = evalValue(input)

  override protected def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    val function = ctx.addReferenceObj("payloadFunction", this)
    val boxed = CodeGenerator.boxedType(dataType)
    nullSafeCodeGen(
      ctx,
      ev,
      value => {
        val result = ctx.freshName("result")
        s"""$boxed $result = ($boxed) $function.evalValue($value);
           |if ($result == null) { ${ev.isNull} = true; } else { ${ev.value} = $result; }""".stripMargin
      }
    )
  }
}
