package io.sparkkinesis.config

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import org.scalatest.funsuite.AnyFunSuite

class OptionsDocSuite extends AnyFunSuite {
  private val path = Paths.get("docs", "options.md")

  test("docs/options.md is the reference generated from the option table") {
    if (sys.env.get("SPARK_KINESIS_WRITE_DOCS").contains("1"))
      Files.write(path, OptionsDoc.markdown.getBytes(UTF_8))
    val onDisk = new String(Files.readAllBytes(path), UTF_8)
    assert(onDisk == OptionsDoc.markdown, "docs/options.md is out of date: regenerate it (see its header)")
  }

  test("every option appears once in the reference") {
    KinesisOptions.all.foreach(o =>
      assert(OptionsDoc.markdown.split(s"`${o.fullKey}`", -1).length == 2, o.fullKey)
    )
  }
}
