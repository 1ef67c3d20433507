package io.sparkkinesis.errors;

import java.util.Map;

import org.apache.spark.SparkThrowable;

/**
 * Every error the connector raises for a user to act on: match on this type, on {@link #getCondition()} (a stable
 * name such as {@code KINESIS_STREAM_NOT_FOUND}) and on {@link #getSqlState()}. The conditions, their SQLSTATEs and
 * their message templates are listed in {@code META-INF/spark-kinesis/error-conditions.json} and in
 * docs/errors.md.
 *
 * <p>Written in Java so that one source compiles against every Spark line: {@code SparkThrowable} names the condition
 * {@code getErrorClass()} on Spark 3.5 and {@code getCondition()} on 4.x (where {@code getErrorClass()} is a deprecated
 * alias), and 4.2 adds {@code getDefaultMessageTemplate()}. Methods declared without {@code @Override} implement
 * whichever of them the line has. The SQLSTATE and the template come from the connector's own file, because Spark's
 * defaults look the condition up in Spark's file, which does not list it.
 */
public interface KinesisConnectorException extends SparkThrowable {

  /** The condition's name, e.g. {@code KINESIS_INVALID_OPTION}. */
  String getCondition();

  /** The condition's name, as Spark 3.5 asks for it. */
  default String getErrorClass() {
    return getCondition();
  }

  String getSqlState();

  Map<String, String> getMessageParameters();

  /** The condition's message template, its parameters written {@code <name>}. */
  String getMessageTemplate();

  /** The message template, as Spark 4.2 and newer ask for it. */
  default String getDefaultMessageTemplate() {
    return getMessageTemplate();
  }
}
