package io.sparkkinesis.config

import java.util.regex.Pattern

import io.sparkkinesis.config.OptionScope.{Both, Sink, Source}
import io.sparkkinesis.errors.KinesisIllegalArgumentException

/**
 * A condition over the user's options. It sees each option's canonical value (the parsed value in the option's
 * string form: trimmed, a choice by its declared name): the value given, or else its fixed default.
 */
private[sparkkinesis] sealed trait Condition

private[sparkkinesis] object Condition {

  /** The user gave the option. */
  final case class IsSet(option: OptionSpec[_]) extends Condition

  /** The option's value (given, else its fixed default) is `value`. */
  final case class Equals(option: OptionSpec[_], value: String) extends Condition

  /** The option's value (given, else its fixed default) matches `regex` as a whole. */
  final case class Matches(option: OptionSpec[_], regex: String) extends Condition {
    val compiled: Pattern = Pattern.compile(regex)
  }

  final case class Not(condition: Condition) extends Condition

  /** Every condition holds (true when there is none). */
  final case class All(conditions: Seq[Condition]) extends Condition

  /** At least one condition holds (false when there is none). */
  final case class AnyOf(conditions: Seq[Condition]) extends Condition

  val Always: Condition = All(Nil)
  val Never: Condition = AnyOf(Nil)
}

/**
 * A rule across options, as data: where `when` holds, `require` must hold too (the message in the second parameter
 * list, so that a rule reads as a table row followed by its text). The exported option table carries the rules (see
 * [[OptionsExport]]), and the Python builders evaluate them as this object does, so the two sides refuse the same
 * combinations with the same rule id and text. `id`: the rule's stable name, for users and tests to match on.
 * `message`: the error; `{kinesis.<key>}` stands for that option's value (never a secret option's). `unsupported`:
 * the combination is valid but not supported (yet), so its condition is `KINESIS_UNSUPPORTED_OPTION`.
 */
private[sparkkinesis] final case class OptionRule(
    id: String,
    scope: OptionScope,
    when: Condition,
    require: Condition,
    unsupported: Boolean = false
)(val message: String) {

  def appliesTo(side: OptionScope): Boolean = scope == Both || scope == side

  def options: Seq[OptionSpec[_]] = {
    def of(c: Condition): Seq[OptionSpec[_]] = c match {
      case Condition.IsSet(o) => Seq(o)
      case Condition.Equals(o, _) => Seq(o)
      case Condition.Matches(o, _) => Seq(o)
      case Condition.Not(inner) => of(inner)
      case Condition.All(cs) => cs.flatMap(of)
      case Condition.AnyOf(cs) => cs.flatMap(of)
    }
    (of(when) ++ of(require)).distinct
  }
}

/**
 * A user's options broke a rule of [[OptionRules]]; `ruleId` names it. Its condition is `KINESIS_INVALID_OPTION`, or
 * `KINESIS_UNSUPPORTED_OPTION` for a rule of a combination not supported yet.
 */
private[sparkkinesis] final class OptionRuleViolation(
    val ruleId: String,
    message: String,
    unsupported: Boolean = false
) extends KinesisIllegalArgumentException(
      if (unsupported) "KINESIS_UNSUPPORTED_OPTION.BROKEN_RULE" else "KINESIS_INVALID_OPTION.BROKEN_RULE",
      Seq(message)
    )

/**
 * Every rule that relates several options, declared once; checks of a single value live with the option in
 * [[KinesisOptions]]. Checked in Scala only, not expressible here (the Python builders leave them to the jar): stream
 * names and ARNs of a list (syntax, duplicates, one region, agreement with kinesis.region), position documents
 * against the streams read and each other, the environment's region, the sink endpoint's host, and loading
 * kinesis.credentialProviderClass.
 */
private[sparkkinesis] object OptionRules {

  import Condition._
  import KinesisOptions._

  /** `{kinesis.<key>}` in a message: the option's value. */
  def valueOf(option: OptionSpec[_]): String = s"{${option.fullKey}}"

  private val SubscribeToShard =
    Equals(ConsumerType, io.sparkkinesis.config.ConsumerType.SubscribeToShard.name)
  private val DynamoDb = Equals(MetadataCommitterType, CommitterType.DynamoDb.name)
  private val Hdfs = Equals(MetadataCommitterType, CommitterType.Hdfs.name)
  private val proxy = anySet(ProxyAddress, ProxyPort, ProxyUsername, ProxyPassword)
  private val awslabsProxy = anySet(SinkProxyAddress, SinkProxyPort, SinkProxyUsername, SinkProxyPassword)
  private val staticKeys = allSet(AwsAccessKeyId, AwsSecretKey)
  private val SeveralItems = "(?s).*,.*"
  private val JavaProducer = Equals(SinkProducer, ProducerKind.Java.name)

  /** An option of the KPL's native process, refused when the in-JVM producer writes. */
  private def kplOnly(id: String, option: OptionSpec[_], when: Condition, what: String) =
    OptionRule(id, Sink, All(Seq(JavaProducer, when)), Never)(
      s"Option ${option.fullKey} $what, and ${SinkProducer.fullKey} is JAVA: the in-JVM producer has no such " +
        s"setting. Remove ${option.fullKey}, or write with ${SinkProducer.fullKey}=KPL."
    )

  private val (role, host, basic) =
    (" (the role to assume)", " (the proxy's host)", " (Basic authentication sends both)")
  private def anySet(options: OptionSpec[_]*): Condition = AnyOf(options.map(IsSet))
  private def allSet(options: OptionSpec[_]*): Condition = All(options.map(IsSet))

  private def nameOrArn(id: String, scope: OptionScope) =
    OptionRule(id, scope, allSet(StreamName, StreamArn), Never)(
      s"Options ${StreamName.fullKey} and ${StreamArn.fullKey} are both set; set one of them."
    )

  private def needs(
      id: String,
      scope: OptionScope,
      option: OptionSpec[_],
      needed: OptionSpec[_],
      why: String
  ) = OptionRule(id, scope, IsSet(option), IsSet(needed))(
    s"Option ${option.fullKey} needs ${needed.fullKey}$why."
  )

  /** In order: the first rule broken is the one reported. */
  val all: Seq[OptionRule] = Seq(
    OptionRule("source-stream-required", Source, Always, anySet(StreamName, StreamArn))(
      s"Option ${StreamName.fullKey} is required (for reads, ${StreamArn.fullKey} may be given instead): the " +
        "stream(s) to read."
    ),
    nameOrArn("source-stream-name-or-arn", Source),
    OptionRule(
      "avoid-empty-batches-one-key",
      Source,
      allSet(AvoidEmptyBatches, InternalAvoidEmptyBatches),
      Never
    )(
      s"Options ${AvoidEmptyBatches.fullKey} and ${InternalAvoidEmptyBatches.fullKey} (its awslabs name) are both " +
        "set; set one of them."
    ),
    OptionRule("sink-stream-required", Sink, Always, anySet(StreamName, StreamArn))(
      s"Option ${StreamName.fullKey} is required (or ${StreamArn.fullKey}): the stream to write."
    ),
    nameOrArn("sink-stream-name-or-arn", Sink),
    OptionRule("sink-one-stream-arn", Sink, IsSet(StreamArn), Not(Matches(StreamArn, SeveralItems)))(
      s"Option ${StreamArn.fullKey} '${valueOf(StreamArn)}' lists several streams; a write goes to one stream."
    ),
    OptionRule("static-keys-together", Both, anySet(AwsAccessKeyId, AwsSecretKey), staticKeys)(
      s"Options ${AwsAccessKeyId.fullKey} and ${AwsSecretKey.fullKey} go together: set both or neither."
    ),
    OptionRule("session-token-needs-keys", Both, IsSet(SessionToken), staticKeys)(
      s"Option ${SessionToken.fullKey} needs ${AwsAccessKeyId.fullKey} and ${AwsSecretKey.fullKey}."
    ),
    needs("sts-session-name-needs-role", Both, StsSessionName, StsRoleArn, role),
    needs("sts-external-id-needs-role", Both, StsExternalId, StsRoleArn, role),
    needs("sts-endpoint-url-needs-role", Both, StsEndpointUrl, StsRoleArn, role),
    needs("provider-param-needs-class", Both, CredentialProviderParam, CredentialProviderClass, ""),
    OptionRule("fan-out-needs-consumer-name", Source, SubscribeToShard, anySet(ConsumerName, ConsumerArn))(
      s"Option ${ConsumerName.fullKey} is required when ${ConsumerType.fullKey} is SubscribeToShard: name the " +
        "enhanced fan-out consumer this query reads with (1 to 128 characters of a-z, A-Z, 0-9, '_', '.' and '-'), " +
        s"or give ${ConsumerArn.fullKey}: existing consumers to read through."
    ),
    OptionRule("consumer-options-need-fan-out", Source, anySet(ConsumerArn, ConsumerTags), SubscribeToShard)(
      s"Options ${ConsumerArn.fullKey} and ${ConsumerTags.fullKey} apply only when ${ConsumerType.fullKey} is " +
        "SubscribeToShard (enhanced fan-out)."
    ),
    OptionRule("consumer-name-or-arn", Source, allSet(ConsumerName, ConsumerArn), Never)(
      s"Options ${ConsumerName.fullKey} and ${ConsumerArn.fullKey} are both set; set one: ${ConsumerName.fullKey} " +
        s"for consumers the query registers (or reuses) itself, ${ConsumerArn.fullKey} for existing consumers it " +
        "only reads through."
    ),
    OptionRule("consumer-arn-not-deregistered", Source, allSet(ConsumerArn, ConsumerDeregisterOnStop), Never)(
      s"Option ${ConsumerDeregisterOnStop.fullKey} applies to consumers the query registers " +
        s"(${ConsumerName.fullKey}); a consumer given by ${ConsumerArn.fullKey} is never deregistered by the query. " +
        s"Remove ${ConsumerDeregisterOnStop.fullKey}."
    ),
    OptionRule("consumer-tags-need-name", Source, IsSet(ConsumerTags), IsSet(ConsumerName))(
      s"Option ${ConsumerTags.fullKey} tags the consumers the query registers (${ConsumerName.fullKey}); a consumer " +
        s"given by ${ConsumerArn.fullKey} is not registered by the query: tag it where it is registered (for example " +
        s"spark-kinesis consumers register --tags), and remove ${ConsumerTags.fullKey}."
    ),
    OptionRule("fan-out-not-paced", Source, All(Seq(SubscribeToShard, IsSet(MaxFetchRate))), Never)(
      s"Option ${MaxFetchRate.fullKey} = ${valueOf(MaxFetchRate)} applies to ${ConsumerType.fullKey} = GetRecords " +
        "only: an enhanced fan-out consumer has its own 2 MB/s per shard, shared with no one, and is not paced. " +
        s"Remove ${MaxFetchRate.fullKey}, or read with ${ConsumerType.fullKey} = GetRecords."
    ),
    OptionRule("dynamodb-needs-table", Source, DynamoDb, IsSet(DynamoDbTableName))(
      s"Option ${DynamoDbTableName.fullKey} is required when ${MetadataCommitterType.fullKey} is DYNAMODB: " +
        "the table of the metadata."
    )
  ) ++ Seq(
    "dynamodb-table-needs-dynamodb" -> DynamoDbTableName,
    "dynamodb-region-needs-dynamodb" -> DynamoDbRegion,
    "dynamodb-endpoint-needs-dynamodb" -> DynamoDbEndpointUrl
  ).map { case (id, option) =>
    OptionRule(id, Source, IsSet(option), DynamoDb)(
      s"Option ${option.fullKey} applies only when ${MetadataCommitterType.fullKey} is DYNAMODB."
    )
  } ++ Seq(
    needs("proxy-port-needs-address", Both, ProxyPort, ProxyAddress, host),
    needs("proxy-username-needs-address", Both, ProxyUsername, ProxyAddress, host),
    needs("proxy-password-needs-username", Both, ProxyPassword, ProxyUsername, basic),
    needs("sink-proxy-port-needs-address", Sink, SinkProxyPort, SinkProxyAddress, host),
    needs("sink-proxy-username-needs-address", Sink, SinkProxyUsername, SinkProxyAddress, host),
    needs("sink-proxy-password-needs-username", Sink, SinkProxyPassword, SinkProxyUsername, basic),
    OptionRule("sink-one-proxy-family", Sink, All(Seq(awslabsProxy, proxy)), Never)(
      s"Options ${SinkProxyAddress.fullKey} (and the other kinesis.sink.proxy* options, the awslabs names) and " +
        s"${ProxyAddress.fullKey} (kinesis.proxy*) are both set; on a write they name the same proxy: use one family."
    ),
    OptionRule("metadata-path-needs-hdfs", Source, IsSet(MetadataPath), Hdfs)(
      s"Option ${MetadataPath.fullKey} applies only when ${MetadataCommitterType.fullKey} is HDFS."
    ),
    OptionRule(
      "sink-endpoint-https",
      Sink,
      All(Seq(IsSet(EndpointUrl), Not(JavaProducer))),
      Matches(EndpointUrl, "(?s)https://.*")
    )(
      s"Invalid value '${valueOf(EndpointUrl)}' for option ${EndpointUrl.fullKey} in a write: the sink's Kinesis " +
        "Producer Library speaks only HTTPS, so give an https:// URL (for a local emulator, its TLS port, with " +
        s"${SinkVerifyCertificate.fullKey}=false when its certificate is self-signed), or write with " +
        s"${SinkProducer.fullKey}=JAVA, which speaks HTTP too."
    ),
    kplOnly(
      "java-producer-no-threading-model",
      SinkThreadingModel,
      IsSet(SinkThreadingModel),
      "sets how the Kinesis Producer Library's native process runs requests"
    ),
    kplOnly(
      "java-producer-no-metrics",
      SinkMetricsLevel,
      All(Seq(IsSet(SinkMetricsLevel), Not(Equals(SinkMetricsLevel, MetricsLevel.NoMetrics.name)))),
      s"= ${valueOf(SinkMetricsLevel)} asks the Kinesis Producer Library for CloudWatch metrics"
    ),
    kplOnly(
      "java-producer-no-sts-endpoint",
      SinkStsEndpointUrl,
      IsSet(SinkStsEndpointUrl),
      "is the Kinesis Producer Library's own STS endpoint (the awslabs connector's KPL 0.x called it)"
    )
  )

  all.foreach { rule =>
    require(all.count(_.id == rule.id) == 1, s"rule id ${rule.id} is declared twice")
    rule.options.filter(_.secret).foreach { o =>
      require(!rule.message.contains(valueOf(o)), s"rule ${rule.id} would show the secret ${o.fullKey}")
    }
  }

  /** The first rule of `side` that `view` breaks, with its message filled in. */
  def firstBroken(view: OptionValues, side: OptionScope): Option[(OptionRule, String)] = {
    def value(option: OptionSpec[_]): Option[String] = view.canonical(option)
    def holds(c: Condition): Boolean = c match {
      case IsSet(o) => view.isSet(o)
      case Equals(o, v) => value(o).contains(v)
      case m @ Matches(o, _) => value(o).exists(m.compiled.matcher(_).matches())
      case Not(inner) => !holds(inner)
      case All(cs) => cs.forall(holds)
      case AnyOf(cs) => cs.exists(holds)
    }
    all.find(r => r.appliesTo(side) && holds(r.when) && !holds(r.require)).map { rule =>
      rule -> rule.options.foldLeft(rule.message) { (text, o) =>
        text.replace(valueOf(o), value(o).getOrElse(""))
      }
    }
  }

  /** Fails with [[OptionRuleViolation]] at the first rule of `side` that `view` breaks. */
  def check(view: OptionValues, side: OptionScope): Unit =
    firstBroken(view, side).foreach { case (rule, message) =>
      throw new OptionRuleViolation(rule.id, message, rule.unsupported)
    }
}
