package io.sparkkinesis.client

import java.io.IOException
import java.util.concurrent.{CompletionException, ExecutionException, TimeoutException}

import io.sparkkinesis.errors.KinesisErrors
import software.amazon.awssdk.awscore.exception.AwsServiceException
import software.amazon.awssdk.services.kinesis.model.{StreamSummary => _, _}

/** A subscription that delivered nothing (no response, no event) within `kinesis.subscribeToShard.timeoutSec`. */
private[sparkkinesis] final class SubscriptionTimedOut(message: String) extends TimeoutException(message)

/** The one list of what an enhanced fan-out reader does when a subscription fails; anything else fails the task. */
private[sparkkinesis] object SubscriptionErrors {

  sealed trait Verdict

  /** Another subscription of the consumer to the shard is active, or one started less than 5 s ago: renew later. */
  case object InUse extends Verdict

  /** Transient: renew the subscription after a back-off. */
  case object Transient extends Verdict

  /** The shard no longer exists (expired or deleted): a data-loss case, per `kinesis.failOnDataLoss`. */
  case object ShardGone extends Verdict

  /** Not recoverable by renewing (permissions, a missing consumer or stream, a bad request, ...). */
  case object Fatal extends Verdict

  /** Exception types (simple names) of the shaded Netty HTTP stack that mean the connection broke. */
  private val brokenConnection = Set("ReadTimeoutException", "WriteTimeoutException", "Http2Exception") ++
    Set("StreamException", "PrematureChannelClosureException")

  def classify(error: Throwable, shardId: String): Verdict = unwrap(error) match {
    case _: ResourceInUseException => InUse
    case _: LimitExceededException | _: KmsThrottlingException | _: InternalFailureException => Transient
    case e: ResourceNotFoundException =>
      // Kinesis names the shard when the shard is missing, and the consumer or stream when that is missing.
      val message = problem(e)
      if (message != null && message.contains(shardId) && !message.toLowerCase.contains("consumer")) ShardGone
      else Fatal
    case e: AwsServiceException if e.statusCode() >= 500 => Transient
    case _: AwsServiceException => Fatal
    case e if causes(e).exists(c => c.isInstanceOf[IOException] || c.isInstanceOf[TimeoutException]) =>
      Transient
    case e if causes(e).exists(c => brokenConnection.contains(c.getClass.getSimpleName)) => Transient
    case _ => Fatal
  }

  /**
   * The clear error for a subscription that failed for good because of its consumer: Kinesis answered that it does
   * not exist (ResourceNotFound naming the consumer) or is not ACTIVE (ResourceInUse naming the state, renewed per
   * kinesis.subscribeToShard.maxRetries first: a consumer just registered becomes ACTIVE). None for other errors.
   */
  def consumerFailure(error: Throwable, consumerArn: String, shardId: String): Option[Throwable] =
    unwrap(error) match {
      case e: ResourceNotFoundException if classify(e, shardId) == Fatal =>
        Some(KinesisErrors.consumerUnusable(consumerArn, s"it does not exist (${problem(e)})", e))
      case e: ResourceInUseException if notActive.findFirstIn(String.valueOf(problem(e))).isDefined =>
        Some(KinesisErrors.consumerUnusable(consumerArn, s"it is not ACTIVE (${problem(e)})", e))
      case _ => None
    }

  /** The service's error message, else the exception's. */
  private def problem(e: AwsServiceException): String =
    Option(e.awsErrorDetails()).map(_.errorMessage()).getOrElse(e.getMessage)

  /** How Kinesis ("... is not in ACTIVE status.") and kinesis-local ("... is not in an ACTIVE state") say it. */
  private val notActive = "not in (an )?ACTIVE (status|state)".r

  /** The error a future or callback wrapped. */
  def unwrap(error: Throwable): Throwable = error match {
    case e @ (_: CompletionException | _: ExecutionException) if e.getCause != null => unwrap(e.getCause)
    case e => e
  }

  private def causes(error: Throwable): Iterator[Throwable] =
    Iterator.iterate(error)(_.getCause).takeWhile(_ != null).take(20)
}
