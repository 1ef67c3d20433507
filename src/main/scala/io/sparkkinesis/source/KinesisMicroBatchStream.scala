package io.sparkkinesis.source

import java.{util => ju}
import java.util.Optional

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client._
import io.sparkkinesis.config.{ReadMode, SourceConfig}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.metadata.MetadataStore
import io.sparkkinesis.reader.RunBound
import io.sparkkinesis.reader.efo.SubscriptionCache
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{Offset => SparkOffset, _}
import org.slf4j.LoggerFactory

/**
 * The driver side of the source: Spark's streaming interfaces, answered by delegating to [[ConfiguredStreams]],
 * [[ShardListing]], [[BatchEnds]] (the previous batch's recorded ends), [[ShardPlanner]] (the next batch),
 * [[AdmissionPlanner]] (its limits), [[BatchPacer]] (spacing batches at the tips), [[AvailableNowRun]],
 * [[RealTimeBatches]] and [[StreamConsumers]] (fan-out consumers, registered on [[start]], released on [[stop]]). Its
 * requests are counted in a [[DriverCallLedger]], its figures published as [[DriverGauges]]. Its only GetRecords
 * calls are the tip probes of an AvailableNow run and of the idle probe (one record each, never read into a batch).
 */
private[sparkkinesis] final class KinesisMicroBatchStream(
    config: SourceConfig,
    uncountedMetadataClient: StreamMetadataClient,
    uncountedRecordsClient: ShardRecordsClient,
    uncountedConsumerClient: StreamConsumerClient,
    store: MetadataStore,
    readSettings: ReadSettings,
    minBatchesToRetain: Int,
    nowMillis: () => Long = () => System.currentTimeMillis(),
    executors: () => Seq[ExecutorRef] = () => ExecutorPlacement.sparkExecutors(),
    releaseClients: () => Unit = () => (),
    parallelism: () => Option[Int] = () => None
) extends MicroBatchStream
    with SupportsTriggerAvailableNow
    with ReportsSourceMetrics
    with RealTimeMode {
  private val log = LoggerFactory.getLogger(classOf[KinesisMicroBatchStream])
  private val streams = config.streamNames
  private val gauges = DriverGauges.ofCurrentQuery(streams)

  private val calls = new DriverCallLedger
  private val metadataClient = CountingClients.metadata(uncountedMetadataClient, calls.counter)
  private val recordsClient = CountingClients.records(uncountedRecordsClient, calls.counter)
  private val consumerClient = CountingClients.consumers(uncountedConsumerClient, calls.counter)

  private val shardListing =
    new ShardListing(metadataClient, streams, config.streamId, config.describeShardIntervalMs, nowMillis)
  // The record limit each batch planned here was given (Spark passes it to latestOffset only).
  private val recordLimits = scala.collection.mutable.Map.empty[Long, Option[Long]]
  private var availableNowRun: Option[AvailableNowRun] = None
  private def availableNow: Option[Map[ShardKey, RunShard]] = availableNowRun.map(_.shards)

  private val pacer = new BatchPacer(
    BatchPacing
      .Settings(config.readMode.spacesFoundBatches, config.fetchIntervalMs, config.idleProbeIntervalMs),
    if (!config.avoidEmptyBatches) None
    else Some(new IdleProbe(recordsClient, config.streamId, config.idleProbeIntervalMs, nowMillis)),
    nowMillis
  )
  private val batchEnds = new BatchEnds(store.open, config.metadataThreads)

  // Described when first needed (`start` with enhanced fan-out, else the first offset), not while Spark makes it.
  private lazy val configured =
    ConfiguredStreams.describe(config, metadataClient, () => shardListing.shards(), nowMillis)

  private lazy val consumers: Option[StreamConsumers] = config.readMode match {
    case ReadMode.FanOut(efo) =>
      val arns = configured.summaries.map { case (s, d) => s -> d.streamArn }
      Some(StreamConsumers.of(config, efo, consumerClient, arns))
    case _: ReadMode.Polling => None
  }

  // Each stream's consumer ARN once `start` made them ACTIVE.
  private var consumerArns: Option[Map[String, String]] = None

  /**
   * Starts the source before Spark asks for any offset (the scan calls it once): with enhanced fan-out, registers or
   * reuses each stream's consumer and waits until it is ACTIVE, which can take minutes.
   */
  def start(): this.type = {
    consumers.foreach(c => consumerArns = Some(c.activate()))
    gauges.register()
    this
  }

  // Spark asks again when it runs the first batch: the same offset (run id included) is answered.
  private lazy val initial: KinesisOffset = configured.initial()

  override def initialOffset(): SparkOffset = initial

  override def deserializeOffset(json: String): SparkOffset = OffsetJson.readOffset(json)

  override def getDefaultReadLimit: ReadLimit =
    config.maxRecordsPerTrigger.map(n => ReadLimit.maxRows(n)).getOrElse(ReadLimit.allAvailable())

  /**
   * Pins the run's end: lists the shards now and takes a LATEST iterator on every open one; the run reads each shard
   * up to the record before the first one put after this call ([[io.sparkkinesis.reader.RunBound]]).
   */
  override def prepareForTriggerAvailableNow(): Unit = {
    val run = AvailableNowRun.start(recordsClient, config.streamId, shardListing.listAllNow())
    log.info(
      s"Trigger.AvailableNow: the run reads ${run.shards.size} shards of ${streams.mkString(", ")} up to their " +
        "tips as of now"
    )
    availableNowRun = Some(run)
  }

  private def recordLimit(limit: ReadLimit): Option[Long] = limit match {
    case rows: ReadMaxRows => Some(rows.maxRows())
    case composite: CompositeReadLimit =>
      composite.getReadLimits.toSeq.flatMap(recordLimit).reduceOption(math.min(_, _))
    case _ => None
  }

  override def latestOffset(): SparkOffset =
    throw new UnsupportedOperationException("latestOffset(start, limit) is used by this source")

  override def latestOffset(start: SparkOffset, limit: ReadLimit): SparkOffset = {
    // In real-time mode the engine asks, but a batch's end is what its tasks report (mergeRealTimeEnds).
    if (realTimeBatches.enabled) return start
    val planned = plan(asKinesis(start), limit)
    if (planned.batchId != asKinesis(start).batchId) calls.planned(planned.batchId)
    planned
  }

  private def plan(started: KinesisOffset, limit: ReadLimit): KinesisOffset = {
    val recorded = batchEnds.of(started)
    val ends = recorded.map { case (key, r) => key -> r.end }
    val previous = configured.reconcile(started)
    val planned = ShardPlanner.next(previous, ends, shardListing.shardsAfter(started.batchId, ends))
    val maxRecords = recordLimit(limit)
    // The next batch, or none yet: the start offset, answered, plans no batch (and ends an AvailableNow run). Grouped
    // into tasks only once it is due: Spark asks every few milliseconds while the pacing waits.
    val next = availableNowRun match {
      case Some(run) =>
        Some(admit(run.restrict(planned, previous, recorded), maxRecords)).filter(_.readShards.nonEmpty)
      case None => pacer.next(previous, admit(planned, maxRecords), ends.values)
    }
    next.fold(started) { n =>
      val perTask = ShardGrouping.shardsPerTask(config.shardsPerTask, parallelism(), n.readShards.size)
      ShardGrouping.group(n, perTask)
    }
  }

  /** `next` with only the shards its record limit admits read, the limit remembered for its tasks' budgets. */
  private def admit(next: KinesisOffset, maxRecords: Option[Long]): KinesisOffset = {
    recordLimits(next.batchId) = maxRecords
    val admitted = AdmissionPlanner.admitted(next.readShards.map(_._1), next.batchId, maxRecords).toSet
    ShardPlanner.readOnly(next)(admitted)
  }

  /** Lag, volume and API-call metrics of the batch that ended at `latestConsumedOffset`. */
  override def metrics(latestConsumedOffset: Optional[SparkOffset]): ju.Map[String, String] = {
    val offset = Option(latestConsumedOffset.orElse(null)).map(asKinesis)
    val recorded = offset.map(batchEnds.of).getOrElse(Map.empty)
    val driver = offset.map(o => calls.of(o.batchId)).getOrElse(Map.empty)
    offset.foreach(gauges.update(_, recorded))
    SourceMetrics.of(recorded.values.toSeq, availableNow, driver).asJava
  }

  override def planInputPartitions(start: SparkOffset, end: SparkOffset): Array[InputPartition] = {
    val offset = asKinesis(end)
    // A batch planned before a restart and run again: with kinesis.failOnDataLoss, a stream re-created since fails
    // here, before its tasks read the old stream's positions in the new one (otherwise the next batch restarts it).
    configured.restarted(offset)
    val budgets = AdmissionPlanner.budgets(
      offset.readShards.map(_._1),
      offset.batchId,
      config.maxRecordsPerShard,
      recordLimits.getOrElse(offset.batchId, config.maxRecordsPerTrigger),
      config.maxBytesPerTrigger
    )
    partitionsOf(offset, TaskKind.MicroBatch(store, offset.runId, offset.batchId)) { (key, slice) =>
      slice.copy(
        maxRecords = budgets(key).maxRecords,
        maxTimeMs = config.maxFetchTimePerShardMs,
        maxBytes = budgets(key).maxBytes,
        bound = availableNow.flatMap(_.get(key)).fold[RunBound](RunBound.Unbounded)(_.bound)
      )
    }
  }

  /** The read tasks of `offset`, each shard as `limited` bounds it, each task on its [[ExecutorPlacement]]. */
  private def partitionsOf(offset: KinesisOffset, kind: TaskKind)(
      limited: (ShardKey, ShardSlice) => ShardSlice
  ): Array[InputPartition] = {
    val closed = shardListing.closed
    val tasks = offset.readTasks
    val placement =
      if (config.executorAffinity) ExecutorPlacement.assignTasks(tasks, executors())
      else Map.empty[ReadTask, ExecutorRef]
    def shard(key: ShardKey): ShardSlice = {
      val entry = offset.shards(key)
      limited(
        key,
        ShardSlice(
          streamName = key.streamName,
          shardId = key.shardId,
          start = entry.position,
          hashKeyRange = entry.hashKeyRange,
          streamArn = config.streamArns.get(key.streamName),
          shardClosed = closed.contains(key),
          deliverOutsideRange = configured.deliversOutsideRange(key.streamName),
          streamIdentity = offset.identities.get(key.streamName)
        )
      )
    }
    tasks.map { task =>
      KinesisReadTask(kind, task.index, task.shards.map(shard), placement.get(task)): InputPartition
    }.toArray
  }

  private val realTimeBatches = new RealTimeBatches

  private[source] def enableRealTimeMode(): Unit = realTimeBatches.enable(config)

  /** Plans a real-time batch from `start` alone, as `latestOffset` plans a micro-batch but with no limits. */
  private[source] def realTimePartitions(start: SparkOffset): Array[InputPartition] = {
    val started = asKinesis(start)
    val ends = batchEnds.of(started).map { case (key, r) => key -> r.end }
    // Real-time tasks read one shard each, for as long as the batch lasts.
    val planned =
      ShardPlanner.next(configured.reconcile(started), ends, shardListing.shardsAfter(started.batchId, ends))
    val batch = ShardGrouping.group(planned, 1)
    calls.planned(batch.batchId)
    realTimeBatches.started(batch)
    partitionsOf(batch, TaskKind.RealTime(store, batch.runId, batch.batchId))((_, slice) => slice)
  }

  /** The offset of a real-time batch whose tasks reported `ends` ([[RealTimeBatches.ended]]); the ends are kept. */
  private[source] def mergeRealTimeEnds(ends: Array[PartitionOffset]): SparkOffset = {
    val (batch, reported) = realTimeBatches.ended(ends.toSeq)
    batchEnds.remember(batch, reported)
    batch
  }

  /** The settings every task shares, with the consumers' ARNs for enhanced fan-out. */
  override def createReaderFactory(): PartitionReaderFactory = {
    if (consumers.isDefined && consumerArns.isEmpty)
      throw KinesisErrors.internal(s"$this was not started: its enhanced fan-out consumers are not active")
    KinesisReaderFactory(readSettings.copy(consumerArns = consumerArns.getOrElse(Map.empty)))
  }

  override def commit(end: SparkOffset): Unit = {
    val offset = asKinesis(end)
    recordLimits --= recordLimits.keys.filter(_ <= offset.batchId).toList
    val keepFrom = offset.batchId - minBatchesToRetain + 1
    if (keepFrom > 0) batchEnds.purge(offset.runId, keepFrom)
  }

  override def stop(): Unit = {
    gauges.close()
    batchEnds.close()
    consumerArns.foreach(_.values.foreach(SubscriptionCache.closeConsumer))
    consumers.foreach(_.release())
    releaseClients()
  }

  override def toString: String =
    s"KinesisMicroBatchStream[stream=${streams.mkString(",")}, endpoint=${config.client.endpointUrl}, " +
      s"consumer=${config.readMode.consumerType}]"

  private def asKinesis(offset: SparkOffset): KinesisOffset = offset match {
    case k: KinesisOffset => k
    case other => OffsetJson.readOffset(other.json())
  }
}
