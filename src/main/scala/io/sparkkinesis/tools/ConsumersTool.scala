package io.sparkkinesis.tools

import io.sparkkinesis.client.{SdkKinesisClient, StreamConsumer}
import io.sparkkinesis.config.{AwsClientConfig, KinesisOptions, SourceConfig}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.source.ConsumerLifecycle
import software.amazon.awssdk.services.kinesis.model.ResourceNotFoundException

/**
 * Lists, describes, registers or deregisters the enhanced fan-out consumers of a stream, with the connector's own
 * option parsing, endpoint, region and credentials (`spark-kinesis consumers`). The request, on standard input:
 * `{"action": "list" | "describe" | "register" | "deregister", "consumerName": "...", "consumerArn": "...",
 * "tags": "k=v,...", "options": {"kinesis.streamName": ...}}` (tags as `kinesis.consumerTags` takes them). A
 * consumer is named by `consumerName` (on the stream of the options) or by `consumerArn` (which names its stream: no
 * stream option is needed then); `tags` go with `register`. The answer is `{"consumers": [{"name", "arn", "status", "tags"}, ...]}` on standard output: every
 * consumer for `list`, the one consumer for `describe`, the ACTIVE consumer for `register`, nothing for
 * `deregister` (it returns once the consumer is gone). Errors go to standard error, one line, with exit code 1.
 */
object ConsumersTool {
  import ToolMain.{mapper, textMap}

  final case class Request(
      action: String,
      consumerName: Option[String],
      options: Map[String, String],
      consumerArn: Option[String] = None,
      tags: Map[String, String] = Map.empty
  )

  private val Command = "consumers"

  private def check(holds: Boolean, problem: => String): Unit =
    if (!holds) throw KinesisErrors.toolRequestInvalid(Command, problem)

  def parseRequest(json: String): Request = {
    val root = mapper.readTree(json)
    def text(name: String) = ToolMain.text(root, name).filter(_.nonEmpty)
    val action = text("action").getOrElse("")
    check(
      Set("list", "describe", "register", "deregister").contains(action),
      s"action '$action' is not one of list, describe, register, deregister"
    )
    val (name, arn) = (text("consumerName"), text("consumerArn"))
    check(
      arn.forall(_.matches(KinesisOptions.ConsumerArnForm)),
      s"'${arn.get}' is not a consumer ARN (arn:<partition>:kinesis:<region>:<account>:stream/<stream>/consumer/<name>:<n>)"
    )
    check(action == "list" || name.isDefined || arn.isDefined, s"$action needs a consumer name or ARN")
    check(
      action != "register" || name.isDefined,
      "register needs a consumer name (the ARN is Kinesis' answer)"
    )
    check(text("tags").isEmpty || action == "register", "tags go with register only")
    val tags = text("tags").map { raw =>
      val problem = KinesisOptions.ConsumerTags.check(raw)
      check(problem.isEmpty, s"tags '$raw': ${problem.get}")
      SourceConfig.consumerTags(raw)
    }
    val options = textMap(root.get("options"))
    // A consumer ARN names its stream: the stream options may be left out.
    val stream = arn.filterNot(_ => options.keys.exists(_.toLowerCase.matches("kinesis\\.stream(name|arn)")))
    val withStream =
      options ++ stream.map(a => KinesisOptions.StreamArn.fullKey -> SourceConfig.streamArnOf(a))
    Request(action, name, withStream, arn, tags.getOrElse(Map.empty))
  }

  def render(consumers: Seq[(StreamConsumer, Map[String, String])]): String = {
    val root = mapper.createObjectNode()
    val list = root.putArray("consumers")
    consumers.foreach { case (c, tags) =>
      val node = list.addObject().put("name", c.name).put("arn", c.arn).put("status", c.status)
      tags.toSeq.sorted.foldLeft(node.putObject("tags")) { case (t, (k, v)) => t.put(k, v) }
    }
    mapper.writeValueAsString(root)
  }

  def run(
      request: Request,
      pollMs: Long = 1000L,
      timeoutMs: Long = 120000L
  ): Seq[(StreamConsumer, Map[String, String])] = {
    val config = SourceConfig.parse(request.options, AwsClientConfig.environmentRegion)
    val client = new SdkKinesisClient(config.client)
    try {
      val streamArn =
        request.consumerArn.fold(client.describeStream(config.streamName).streamArn)(SourceConfig.streamArnOf)
      lazy val name = request.consumerName.getOrElse {
        val arn = request.consumerArn.get
        arn.substring(arn.indexOf("/consumer/") + 10, arn.lastIndexOf(':'))
      }
      val consumers = request.action match {
        case "list" => client.listConsumers(streamArn).sortBy(_.name)
        case "describe" =>
          val found =
            client.describeConsumer(streamArn, name).filter(c => request.consumerArn.forall(_ == c.arn))
          Seq(found.getOrElse {
            throw KinesisErrors.toolFailed(Command, s"no consumer ${request.consumerArn.getOrElse(name)}")
          })
        case "register" =>
          val lifecycle =
            new ConsumerLifecycle(client, streamArn, name, deregisterOnStop = false, tags = request.tags)
          Seq(StreamConsumer(name, lifecycle.activate(), "ACTIVE"))
        case _ =>
          client.deregisterConsumer(streamArn, name)
          val deadline = System.currentTimeMillis() + timeoutMs
          while (client.describeConsumer(streamArn, name).isDefined) {
            if (System.currentTimeMillis() > deadline)
              throw KinesisErrors.toolFailed(
                Command,
                s"consumer $name is still registered after ${timeoutMs / 1000} s"
              )
            Thread.sleep(pollMs)
          }
          Nil
      }
      consumers.map { c =>
        c -> (try client.consumerTags(c.arn)
        catch { case _: ResourceNotFoundException => Map.empty[String, String] }) // deleted meanwhile
      }
    } finally client.close()
  }

  def main(args: Array[String]): Unit =
    ToolMain.serve(request => ToolAnswer(render(run(parseRequest(request)))))
}
