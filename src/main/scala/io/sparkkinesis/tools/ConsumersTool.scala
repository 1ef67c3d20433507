package io.sparkkinesis.tools

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import io.sparkkinesis.KinesisSourceProvider
import io.sparkkinesis.client.{SdkKinesisClient, StreamConsumer}
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.source.ConsumerLifecycle

/**
 * Lists, registers or deregisters the enhanced fan-out consumers of a stream, with the connector's own option
 * parsing, endpoint, region and credentials. Run by the Python command `spark-kinesis consumers`.
 *
 * The request arrives as JSON on standard input, so that no option (secrets included) is on the command line:
 * `{"action": "list" | "register" | "deregister", "consumerName": "...", "options": {"kinesis.streamName": ...}}`.
 * The answer is `{"consumers": [{"name", "arn", "status"}, ...]}` on standard output: every consumer for `list`,
 * the ACTIVE consumer for `register`, nothing for `deregister` (it returns once the consumer is gone). Errors go to
 * standard error, one line, with exit code 1.
 */
object ConsumersTool {
  private val mapper = new ObjectMapper()

  final case class Request(action: String, consumerName: Option[String], options: Map[String, String])

  def parseRequest(json: String): Request = {
    val root = mapper.readTree(json)
    val action = Option(root.get("action")).map(_.asText).getOrElse("")
    require(
      Set("list", "register", "deregister").contains(action),
      s"action '$action' is not one of list, register, deregister"
    )
    val name = Option(root.get("consumerName")).filterNot(_.isNull).map(_.asText)
    require(action == "list" || name.exists(_.nonEmpty), s"$action needs a consumer name")
    val options =
      Option(root.get("options")).toSeq.flatMap(_.fields().asScala.map(e => e.getKey -> e.getValue.asText))
    Request(action, name, options.toMap)
  }

  def render(consumers: Seq[StreamConsumer]): String = {
    val root = mapper.createObjectNode()
    val list = root.putArray("consumers")
    consumers.foreach(c => list.addObject().put("name", c.name).put("arn", c.arn).put("status", c.status))
    mapper.writeValueAsString(root)
  }

  def run(request: Request, pollMs: Long = 1000L, timeoutMs: Long = 120000L): Seq[StreamConsumer] = {
    val config = SourceConfig.parse(request.options, KinesisSourceProvider.awsDefaultRegion)
    val client = new SdkKinesisClient(config.client)
    try {
      val streamArn = client.describeStream(config.streamName).streamArn
      request.action match {
        case "list" => client.listConsumers(streamArn).sortBy(_.name)
        case "register" =>
          val name = request.consumerName.get
          val arn = new ConsumerLifecycle(client, streamArn, name, deregisterOnStop = false).activate()
          Seq(StreamConsumer(name, arn, "ACTIVE"))
        case _ =>
          val name = request.consumerName.get
          client.deregisterConsumer(streamArn, name)
          val deadline = System.currentTimeMillis() + timeoutMs
          while (client.describeConsumer(streamArn, name).isDefined) {
            if (System.currentTimeMillis() > deadline)
              throw new IllegalStateException(
                s"consumer $name is still registered after ${timeoutMs / 1000} s"
              )
            Thread.sleep(pollMs)
          }
          Nil
      }
    } finally client.close()
  }

  def main(args: Array[String]): Unit = {
    val outcome =
      try Right(render(run(parseRequest(new String(System.in.readAllBytes(), "UTF-8")))))
      catch { case NonFatal(e) => Left(Option(e.getMessage).getOrElse(e.getClass.getSimpleName)) }
    outcome match {
      case Right(json) => println(json)
      case Left(message) =>
        System.err.println(s"error: $message")
        System.exit(1)
    }
  }
}
