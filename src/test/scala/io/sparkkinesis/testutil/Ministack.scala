package io.sparkkinesis.testutil

import java.net.{InetSocketAddress, ServerSocket, Socket}
import java.nio.file.{Files, Paths}
import java.util.concurrent.TimeUnit

/**
 * The ministack emulator (DynamoDB, S3, STS, Kinesis on one port) for Scala suites: the endpoint in
 * `MINISTACK_ENDPOINT` when set, else one started here from `.tools/ministack-venv` (installed by scripts/setup.sh) on
 * a free loopback port, stopped when the JVM exits. A missing emulator fails the suite; it is never skipped.
 */
object Ministack {

  lazy val endpoint: String = sys.env.get("MINISTACK_ENDPOINT").map(_.stripSuffix("/")).getOrElse(start())

  private def start(): String = {
    val root = Paths.get(sys.props("user.dir"))
    val bin = root.resolve(".tools/ministack-venv/bin/ministack")
    if (!Files.isExecutable(bin))
      throw new IllegalStateException(s"$bin is missing: run scripts/setup.sh (or set MINISTACK_ENDPOINT)")
    val port = {
      val s = new ServerSocket(0);
      try s.getLocalPort
      finally s.close()
    }
    val run = root.resolve(".run")
    val tmp = run.resolve(s"ministack-$port-tmp")
    Files.createDirectories(tmp)
    val log = run.resolve(s"ministack-$port.log").toFile
    val pb = new ProcessBuilder(bin.toString).directory(run.toFile).redirectErrorStream(true)
    pb.redirectOutput(ProcessBuilder.Redirect.to(log))
    val env = pb.environment()
    env.put("GATEWAY_PORT", port.toString)
    env.put("BIND_HOST", "127.0.0.1")
    env.put("LOG_LEVEL", "WARNING")
    env.put("MINISTACK_REGION", "us-east-1")
    env.put("TMPDIR", tmp.toString)
    val process = pb.start()
    sys.addShutdownHook {
      process.destroy()
      if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly()
    }
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
    while (!answers(port)) {
      if (!process.isAlive)
        throw new IllegalStateException(s"ministack exited with ${process.exitValue()}; see ${log.getPath}")
      if (System.nanoTime() > deadline)
        throw new IllegalStateException(s"ministack did not listen on $port within 60s; see ${log.getPath}")
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
