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

  private val pattern =
    """arn:(aws|aws-cn|aws-us-gov|aws-iso|aws-iso-[a-z]|aws-eusc):kinesis:([a-z]{2}(?:-[a-z]+)+-\d):(\d{12}):stream/([a-zA-Z0-9_.-]{1,128})""".r

  /** Parses one ARN or a comma-separated list; a malformed one fails naming the option, the value and the form. */
  def parse(option: String, raw: String): List[StreamArn] = {
    def invalid(problem: String) =
      KinesisErrors.invalidOption("BAD_VALUE", "value" -> s"'$raw'", "option" -> option, "problem" -> problem)
    val arns = raw.split(",").map(_.trim).toList.map {
      case text @ pattern(partition, region, account, name) =>
        StreamArn(text, partition, region, account, name)
      case text =>
        throw invalid(
          s"'$text' is not a Kinesis stream ARN; expected arn:<partition>:kinesis:<region>:<12-digit account>:" +
            "stream/<stream name>, for example arn:aws:kinesis:us-east-1:123456789012:stream/orders (several: " +
            "separated by commas)"
        )
    }
    val names = arns.map(_.streamName)
    names.diff(names.distinct).headOption.foreach { name =>
      throw invalid(s"two ARNs name stream '$name'; one source reads each stream name once")
    }
    arns
  }

  /** The one region of the ARNs; fails when they differ or disagree with an explicitly set region. */
  def region(arns: Seq[StreamArn], explicit: Option[String]): Option[String] = {
    val regions = arns.map(_.region).distinct
    if (regions.size > 1) {
      throw KinesisErrors.invalidOption(
        "ARN_REGIONS_DIFFER",
        "option" -> "kinesis.streamArn",
        "regions" -> regions.mkString(", ")
      )
    }
    (regions.headOption, explicit) match {
      case (Some(fromArn), Some(set)) if fromArn != set =>
        throw KinesisErrors.invalidOption(
          "ARN_REGION_CONFLICT",
          "option" -> "kinesis.streamArn",
          "arnRegion" -> fromArn,
          "region" -> set
        )
      case (fromArn, _) => fromArn
    }
  }
}
