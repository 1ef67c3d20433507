package io.sparkkinesis.client

import software.amazon.awssdk.awscore.exception.AwsServiceException

/** Matches an AWS error that says the credentials may not make the call; gives its error code. */
private[sparkkinesis] object AccessDenied {

  def unapply(e: Throwable): Option[String] = e match {
    case aws: AwsServiceException =>
      Option(aws.awsErrorDetails())
        .flatMap(d => Option(d.errorCode()))
        .filter(code => code == "AccessDeniedException" || code == "AccessDenied")
    case _ => None
  }
}
