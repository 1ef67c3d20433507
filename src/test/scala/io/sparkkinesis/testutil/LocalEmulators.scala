package io.sparkkinesis.testutil

import java.net.{InetSocketAddress, ServerSocket, Socket}
import java.nio.file.{Files, Path, Paths}
import java.util.concurrent.TimeUnit

/**
 * An emulator installed by scripts/setup.sh under `.tools/`, for Scala suites: the endpoint in `envVar` when set, else
 * one started here on a free loopback port, stopped when the JVM exits. A missing emulator fails the suite; it is
 * never skipped. `command` and `env` give its command line and environment for a port and a scratch directory.
 */
class LocalEmulator(
    name: String,
    envVar: String,
    bin: String,
    command: (String, Int) => Seq[String],
    env: (Int, Path) => Map[String, String]
) {

  lazy val endpoint: String = sys.env.get(envVar).map(_.stripSuffix("/")).getOrElse(start())

  private def start(): String = {
    val root = Paths.get(sys.props("user.dir"))
    val executable = root.resolve(bin)
    if (!Files.isExecutable(executable))
      throw new IllegalStateException(s"$executable is missing: run scripts/setup.sh (or set $envVar)")
    val port = {
      val s = new ServerSocket(0);
      try s.getLocalPort
      finally s.close()
    }
    val run = root.resolve(".run")
    val tmp = run.resolve(s"$name-$port-tmp")
    Files.createDirectories(tmp)
    val log = run.resolve(s"$name-$port.log").toFile
    val pb = new ProcessBuilder(command(executable.toString, port): _*)
      .directory(run.toFile)
      .redirectErrorStream(true)
    pb.redirectOutput(ProcessBuilder.Redirect.to(log))
    env(port, tmp).foreach { case (k, v) => pb.environment().put(k, v) }
    val process = pb.start()
    sys.addShutdownHook {
      process.destroy()
      if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly()
    }
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
    while (!answers(port)) {
      if (!process.isAlive)
        throw new IllegalStateException(s"$name exited with ${process.exitValue()}; see ${log.getPath}")
      if (System.nanoTime() > deadline)
        throw new IllegalStateException(s"$name did not listen on $port within 60s; see ${log.getPath}")
      Thread.sleep(200)
    }
    s"http://127.0.0.1:$port"
  }

  private def answers(port: Int): Boolean =
    try {
      val s = new Socket()
      try { s.connect(new InetSocketAddress("127.0.0.1", port), 500); true }
      finally s.close()
    } catch { case _: java.io.IOException => false }
}

/** ministack: DynamoDB, S3, STS and Kinesis on one port. */
object Ministack
    extends LocalEmulator(
      "ministack",
      "MINISTACK_ENDPOINT",
      ".tools/ministack-venv/bin/ministack",
      (bin, _) => Seq(bin),
      (port, tmp) =>
        Map(
          "GATEWAY_PORT" -> port.toString,
          "BIND_HOST" -> "127.0.0.1",
          "LOG_LEVEL" -> "WARNING",
          "MINISTACK_REGION" -> "us-east-1",
          "TMPDIR" -> tmp.toString
        )
    )

/** moto's server: the Glue Schema Registry API, which ministack lacks. */
object Moto
    extends LocalEmulator(
      "moto",
      "MOTO_ENDPOINT",
      ".tools/moto-venv/bin/moto_server",
      (bin, port) => Seq(bin, "-H", "127.0.0.1", "-p", port.toString),
      (_, tmp) => Map("TMPDIR" -> tmp.toString)
    )
