package io.sparkkinesis.config

/** The option reference in Markdown, generated from [[KinesisOptions]]; docs/options.md is checked against it. */
object OptionsDoc {

  private def scopeName(scope: OptionScope): String = scope match {
    case OptionScope.Source => "source"
    case OptionScope.Sink => "sink"
    case OptionScope.Both => "source, sink"
  }

  def markdown: String = {
    val header =
      """# Options
        |
        |Generated from `src/main/scala/io/sparkkinesis/config/KinesisOptions.scala` (a unit test keeps this file in
        |step; regenerate with `SPARK_KINESIS_WRITE_DOCS=1 mvn test -Dsuites=io.sparkkinesis.config.OptionsDocSuite`).
        |Keys are case-insensitive. Options marked "not yet" are part of the public contract but rejected by this
        |version with a clear error.
        |
        || option | type | default | applies to | description |
        ||---|---|---|---|---|
        |""".stripMargin
    val rows = KinesisOptions.all.map { o =>
      val status = o.notYetSupported.map(_ => " (not yet)").getOrElse("")
      val secret = if (o.secret) " Secret: never logged or shown." else ""
      s"| `${o.fullKey}`$status | ${o.optionType.describe} | ${o.defaultText} | ${scopeName(o.scope)} | ${o.doc}$secret |"
    }
    header + rows.mkString("\n") + "\n"
  }
}
