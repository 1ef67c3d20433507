package io.sparkkinesis.client

/** Failures the readers react to; anything else propagates as is. */
private[sparkkinesis] sealed abstract class KinesisReadException(message: String, cause: Throwable)
    extends RuntimeException(message, cause)

private[sparkkinesis] final class ThroughputExceeded(message: String, cause: Throwable)
    extends KinesisReadException(message, cause)

private[sparkkinesis] final class IteratorExpired(message: String, cause: Throwable)
    extends KinesisReadException(message, cause)

private[sparkkinesis] final class ShardNotFound(message: String, cause: Throwable)
    extends KinesisReadException(message, cause)
