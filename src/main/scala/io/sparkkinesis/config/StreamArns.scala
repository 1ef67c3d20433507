package io.sparkkinesis.config

import io.sparkkinesis.errors.KinesisErrors

/** A Kinesis stream ARN: `arn:<partition>:kinesis:<region>:<account>:stream/<name>`. */
final case class StreamArn(
    arn: String,
    partition: String,
    region: String,
    account: String,
    streamName: String
)

object StreamArns {

  private val pattern =
    """arn:(aws|aws-cn|aws-us-gov|aws-iso|aws-iso-[a-z]|aws-eusc):kinesis:([a-z]{2}(?:-[a-z]+)+-\d):(\d{12}):stream/([a-zA-Z0-9_.-]{1,128})""".r

  /** Parses one ARN or a comma-separated list; a malformed one fails naming the option, the value and the form. */
  def parse(option: String, raw: String): List[StreamArn] = {
    val arns = raw.split(",").map(_.trim).toList.map {
      case text @ pattern(partition, region, account, name) =>
        StreamArn(text, partition, region, account, name)
      case text =>
        throw KinesisErrors.invalidOption(
          s"Invalid value '$raw' for option $option: '$text' is not a Kinesis stream ARN; expected " +
            "arn:<partition>:kinesis:<region>:<12-digit account>:stream/<stream name>, for example " +
            "arn:aws:kinesis:us-east-1:123456789012:stream/orders (several: separated by commas)."
        )
    }
    val names = arns.map(_.streamName)
    names.diff(names.distinct).headOption.foreach { name =>
      throw KinesisErrors.invalidOption(
        s"Invalid value '$raw' for option $option: two ARNs name stream '$name'; one source reads each stream " +
          "name once."
      )
    }
    arns
  }

  /** The one region of the ARNs; fails when they differ or disagree with an explicitly set region. */
  def region(arns: Seq[StreamArn], explicit: Option[String]): Option[String] = {
    val regions = arns.map(_.region).distinct
    if (regions.size > 1) {
      throw KinesisErrors.invalidOption(
        s"The streams of kinesis.streamArn are in several regions (${regions.mkString(", ")}); one source reads " +
          "streams of one region."
      )
    }
    (regions.headOption, explicit) match {
      case (Some(fromArn), Some(set)) if fromArn != set =>
        throw KinesisErrors.invalidOption(
          s"kinesis.streamArn is in region $fromArn but kinesis.region/kinesis.kinesisRegion is $set; remove the " +
            "region option or make it agree."
        )
      case (fromArn, _) => fromArn
    }
  }
}
