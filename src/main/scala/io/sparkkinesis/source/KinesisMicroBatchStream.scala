package io.sparkkinesis.source

import java.util.UUID
import java.util.concurrent.{Callable, Executors, TimeUnit}

import io.sparkkinesis.client.{ShardDescription, StreamConsumerClient, StreamMetadataClient}
import io.sparkkinesis.config.SourceConfig
import io.sparkkinesis.metadata.MetadataCommitter
import io.sparkkinesis.reader.ShardEnd
import io.sparkkinesis.reader.efo.SubscriptionCache
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{
  MicroBatchStream,
  Offset => SparkOffset,
  ReadLimit,
  SupportsAdmissionControl
}
import org.slf4j.LoggerFactory

/**
 * The driver side of the source, kept thin: it lists shards (at most once per `describeShardInterval`), reads the
 * previous batch's recorded ends, and lets [[ShardPlanner]] decide the next batch. It never reads records.
 *
 * With enhanced fan-out it also owns the stream consumer's life cycle ([[ConsumerLifecycle]]): the stream ARN and
 * the consumer ARN are resolved here, once, and handed to every task.
 */
final class KinesisMicroBatchStream(
    config: SourceConfig,
    metadataClient: StreamMetadataClient,
    consumerClient: StreamConsumerClient,
    committerFor: String => MetadataCommitter,
    partitionTemplate: KinesisInputPartition,
    minBatchesToRetain: Int,
    nowMillis: () => Long = () => System.currentTimeMillis()
) extends MicroBatchStream
    with SupportsAdmissionControl {
  private val log = LoggerFactory.getLogger(classOf[KinesisMicroBatchStream])
  private val stream = config.streamName

  private var listing: Option[(Long, Seq[ShardDescription])] = None
  private var endsCache: Option[(KinesisOffset, Map[ShardKey, ShardEnd])] = None
  private var lastPlannedAt = 0L
  private var runCommitter: Option[(String, MetadataCommitter)] = None

  /** The metadata store of one run (entries live under `<metadata root>/<runId>`). */
  private def committer(runId: String): MetadataCommitter = runCommitter match {
    case Some((id, c)) if id == runId => c
    case _ =>
      runCommitter.foreach(_._2.close())
      val c = committerFor(runId)
      runCommitter = Some(runId -> c)
      c
  }
  private val endReaders = Executors.newFixedThreadPool(config.metadataThreads)

  // Fails early, with the SDK's message, when the stream does not exist or cannot be reached.
  private val summary = metadataClient.describeStream(stream)

  private val consumer: Option[ConsumerLifecycle] = config.efo.map { efo =>
    new ConsumerLifecycle(consumerClient, summary.streamArn, efo.consumerName, efo.deregisterOnStop)
  }

  /** Every task of this stream: with the consumer's ARN for enhanced fan-out. */
  private val template: KinesisInputPartition = (config.efo, consumer) match {
    case (Some(efo), Some(lifecycle)) =>
      val arn = lifecycle.activate()
      partitionTemplate.copy(efo =
        Some(EfoRead(arn, efo.subscribeTimeoutMs, efo.maxRetries, efo.httpProtocol))
      )
    case _ => partitionTemplate
  }

  private def currentListing(): Seq[ShardDescription] = {
    val now = nowMillis()
    listing match {
      case Some((at, shards)) if now - at < config.describeShardIntervalMs => shards
      case _ =>
        val shards = metadataClient.listShards(stream)
        listing = Some((now, shards))
        shards
    }
  }

  override def initialOffset(): SparkOffset =
    ShardPlanner.initial(
      stream,
      currentListing(),
      config.startingPosition,
      nowMillis(),
      UUID.randomUUID().toString
    )

  override def deserializeOffset(json: String): SparkOffset = OffsetJson.readOffset(json)

  override def getDefaultReadLimit: ReadLimit = ReadLimit.allAvailable()

  override def latestOffset(): SparkOffset =
    throw new UnsupportedOperationException("latestOffset(start, limit) is used by this source")

  override def latestOffset(start: SparkOffset, limit: ReadLimit): SparkOffset = {
    val previous = asKinesis(start)
    val ends = recordedEnds(previous)
    val next = ShardPlanner.next(previous, ends, Map(stream -> currentListing()))
    val caughtUp = previous.batchId >= 0 && ends.values.forall(_.reachedTip)
    val now = nowMillis()
    if (
      caughtUp && ShardPlanner.sameShape(previous, next) && now - lastPlannedAt < config.idleProbeIntervalMs
    ) {
      previous
    } else {
      lastPlannedAt = now
      next
    }
  }

  /** The ends recorded by the tasks of `offset`'s batch, read once per batch with `checkNewRecordThreads` threads. */
  private def recordedEnds(offset: KinesisOffset): Map[ShardKey, ShardEnd] = endsCache match {
    case Some((cached, ends)) if cached == offset => ends
    case _ if offset.batchId < 0 => Map.empty
    case _ =>
      val futures = offset.readShards.map { case (key, _) =>
        key -> endReaders.submit(new Callable[Option[String]] {
          def call(): Option[String] = committer(offset.runId).get(offset.batchId, key.metadataKey)
        })
      }
      val ends = futures.flatMap { case (key, f) =>
        f.get().map(json => key -> OffsetJson.readEnd(json))
      }.toMap
      endsCache = Some((offset, ends))
      ends
  }

  override def planInputPartitions(start: SparkOffset, end: SparkOffset): Array[InputPartition] = {
    val offset = asKinesis(end)
    val closed = listing.toSeq.flatMap(_._2).filter(_.isClosed).map(_.shardId).toSet
    offset.readShards.map { case (key, entry) =>
      template.copy(
        streamName = key.streamName,
        shardId = key.shardId,
        batchId = offset.batchId,
        runId = offset.runId,
        start = entry.position,
        hashKeyRange = entry.hashKeyRange,
        shardClosed = key.streamName == stream && closed.contains(key.shardId)
      ): InputPartition
    }.toArray
  }

  override def createReaderFactory(): PartitionReaderFactory = KinesisPartitionReaderFactory

  override def commit(end: SparkOffset): Unit = {
    val offset = asKinesis(end)
    val keepFrom = offset.batchId - minBatchesToRetain + 1
    if (keepFrom > 0) {
      try committer(offset.runId).purgeBefore(keepFrom)
      catch { case e: Exception => log.warn(s"Could not purge Kinesis metadata before batch $keepFrom: $e") }
    }
  }

  override def stop(): Unit = {
    endReaders.shutdownNow()
    endReaders.awaitTermination(10, TimeUnit.SECONDS)
    runCommitter.foreach(_._2.close())
    template.efo.foreach(e => SubscriptionCache.closeConsumer(e.consumerArn))
    consumer.foreach(_.release())
  }

  override def toString: String =
    s"KinesisMicroBatchStream[stream=$stream, endpoint=${config.client.endpointUrl}, consumer=${config.consumerType}]"

  private def asKinesis(offset: SparkOffset): KinesisOffset = offset match {
    case k: KinesisOffset => k
    case other => OffsetJson.readOffset(other.json())
  }
}
