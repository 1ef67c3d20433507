package io.sparkkinesis.config

import io.sparkkinesis.errors.KinesisErrors

/** A Kinesis stream ARN: `arn:<partition>:kinesis:<region>:<account>:stream/<name>`. */
private[sparkkinesis] final case class StreamArn(
    arn: String,
    partition: String,
    region: String,
    account: String,
    streamName: String
)

private[sparkkinesis] object StreamArns {

  /** A stream name, as Kinesis allows it. */
  val NamePattern = "[a-zA-Z0-9_.-]{1,128}"

  /** A stream ARN; its groups are the partition, region, account and stream name. */
  val ArnPattern: String =
    s"arn:(aws|aws-cn|aws-us-gov|aws-iso|aws-iso-[a-z]|aws-eusc):kinesis:([a-z]{2}(?:-[a-z]+)+-\\d):(\\d{12}):stream/($NamePattern)"

  private val pattern = ArnPattern.r

  /** Parses one ARN or a comma-separated list; a malformed list, or two ARNs of one stream name, fail naming both. */
  def parse(option: String, raw: String): List[StreamArn] = {
    KinesisOptions.StreamArn.check(raw).foreach { allowed =>
      throw KinesisErrors.expectedValue(option, raw, allowed)
    }
    // Each element matches the pattern: the check above has accepted the list.
    val arns =
      OptionSpec.Matching.items(raw).toList.map { case text @ pattern(partition, region, account, name) =>
        StreamArn(text, partition, region, account, name)
      }
    val names = arns.map(_.streamName)
    names.diff(names.distinct).headOption.foreach { name =>
      throw KinesisErrors.badValue(
        option,
        raw,
        s"two ARNs name stream '$name'; one source reads each stream name once"
      )
    }
    arns
  }

  /** The one region of the ARNs; fails when they differ or disagree with an explicitly set region. */
  def region(arns: Seq[StreamArn], explicit: Option[String]): Option[String] = {
    val regions = arns.map(_.region).distinct
    if (regions.size > 1) throw KinesisErrors.arnRegionsDiffer("kinesis.streamArn", regions)
    (regions.headOption, explicit) match {
      case (Some(fromArn), Some(set)) if fromArn != set =>
        throw KinesisErrors.arnRegionConflict("kinesis.streamArn", fromArn, set)
      case (fromArn, _) => fromArn
    }
  }
}
