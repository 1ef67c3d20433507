package io.sparkkinesis.source

import java.{util => ju}
import java.util.{Optional, UUID}
import java.util.concurrent.{Callable, Executors, TimeUnit}

import scala.jdk.CollectionConverters._

import io.sparkkinesis.client._
import io.sparkkinesis.config.{KinesisOptions, SourceConfig, StartingPositionSpec, StreamIdentity}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.metadata.MetadataCommitter
import io.sparkkinesis.reader.{RunBound, TipProbe}
import io.sparkkinesis.reader.efo.SubscriptionCache
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.{
  CompositeReadLimit,
  MicroBatchStream,
  Offset => SparkOffset,
  PartitionOffset,
  ReadLimit,
  ReadMaxRows,
  ReportsSourceMetrics,
  SupportsTriggerAvailableNow
}
import org.slf4j.LoggerFactory

/**
 * The driver side of the source, kept thin: it lists shards (at most once per `describeShardInterval`), reads the
 * previous batch's recorded ends, and lets [[ShardPlanner]] decide the next batch, [[AdmissionPlanner]] split the
 * batch's limits, [[BatchPacing]] space batches while the shards are at their tips, and, in a `Trigger.AvailableNow`
 * run, [[AvailableNowPlanner]] keep it to the run's bounds. It never reads records; in an AvailableNow run it polls
 * one iterator per open shard whose bound is still unknown (one GetRecords call of at most one record per such shard
 * per batch).
 *
 * With enhanced fan-out it also owns the stream consumer's life cycle ([[ConsumerLifecycle]]): [[start]] registers
 * the consumer (or reuses it) and resolves its ARN, once, for every task; [[stop]] deregisters it when configured to.
 *
 * On Spark 4.1 and newer it also runs in real-time mode (`Trigger.RealTime`, through [[RealTimeMode]]): a batch is
 * planned from its start only, its tasks read until the engine ends the batch, and the ends they record become the
 * next batch's start exactly as in a micro-batch.
 *
 * Every Kinesis request it makes is counted and reported with the batch it planned: batch N's metrics include the
 * requests made after batch N-1 was planned up to planning batch N (triggers that found nothing new included; the
 * first batch also has the start-up requests). Requests made after the last planned batch (the trigger that ends
 * an AvailableNow run, deregistration on stop) are not reported.
 */
final class KinesisMicroBatchStream(
    config: SourceConfig,
    uncountedMetadataClient: StreamMetadataClient,
    uncountedRecordsClient: ShardRecordsClient,
    uncountedConsumerClient: StreamConsumerClient,
    committerFor: String => MetadataCommitter,
    partitionTemplate: KinesisInputPartition,
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

  // The driver's Kinesis requests not yet attributed to a planned batch; then those of each planned batch.
  private val driverCalls = new ApiCallCounter
  private val callsByBatch = scala.collection.mutable.Map.empty[Long, Map[String, Long]]
  private val metadataClient = CountingClients.metadata(uncountedMetadataClient, driverCalls)
  private val recordsClient = CountingClients.records(uncountedRecordsClient, driverCalls)
  private val consumerClient = CountingClients.consumers(uncountedConsumerClient, driverCalls)

  private var listing: Option[(Long, Map[String, Seq[ShardDescription]])] = None
  private var endsCache: Option[(KinesisOffset, Map[ShardKey, RecordedEnd])] = None
  // The record limit each batch planned here was given (Spark passes it to latestOffset only).
  private val recordLimits = scala.collection.mutable.Map.empty[Long, Option[Long]]
  // The Trigger.AvailableNow run, once prepared; its shards are added from the first offset it plans from.
  private var availableNow: Option[Map[ShardKey, RunShard]] = None
  private var availableNowTracked = false
  private var lastPlannedAt = 0L

  private val pacing =
    BatchPacing.Settings(config.efo.isDefined, config.fetchIntervalMs, config.idleProbeIntervalMs)
  private var streak = BatchPacing.NoBatch
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

  // Fails early, with the SDK's message, when a stream does not exist or cannot be reached. The answer's record
  // distribution strategy, as of this start, decides whether the tasks deliver KPL sub-records outside their shard's
  // hash range (AUTO) or drop them (see ShardReader); each task records the decision with its end, so a replay
  // decides as the first run did even after the stream was switched.
  private val summaries = streams.map(s => s -> metadataClient.describeStream(config.streamId(s))).toMap

  // Each stream's identity (ARN, creation time) from the same answers: every offset planned here records it, and a
  // checkpoint's is compared with it to find a stream deleted and re-created since (see restartedStreams).
  private val identities: Map[String, StreamIdentity] =
    summaries.map { case (stream, summary) =>
      stream -> StreamIdentity.of(summary.streamArn, summary.createdAt)
    }
  // Streams whose re-creation (or first recorded identity) was logged already: planning runs every few milliseconds.
  private val identityLogged = scala.collection.mutable.Set.empty[String]

  summaries.foreach { case (stream, summary) =>
    if (summary.serviceManagedDistribution)
      log.info(
        s"Stream $stream has service-managed record distribution (RecordDistributionStrategy AUTO): KPL sub-records " +
          "outside their shard's hash range are delivered"
      )
  }

  /**
   * Where `LATEST` starts a stream's shards: when this run started, by Kinesis' own clock (the `Date` of its
   * DescribeStreamSummary answer, rounded down to the second), so a driver clock that runs ahead of Kinesis' skips
   * no record put after the start; records put up to a second before it may be read. The driver's clock serves
   * only when the answer had no date.
   */
  private lazy val latestAtMillis: Map[String, Long] = summaries.map { case (stream, summary) =>
    stream -> summary.serviceTimeMillis.getOrElse {
      log.warn(
        s"Kinesis' answer for stream $stream carried no Date header: LATEST is pinned to the driver's clock"
      )
      nowMillis()
    }
  }

  // SourceConfig refuses enhanced fan-out with several streams, so the consumer is of the one stream read.
  private val consumer: Option[ConsumerLifecycle] = config.efo.map { efo =>
    new ConsumerLifecycle(
      consumerClient,
      summaries(streams.head).streamArn,
      efo.consumerName,
      efo.deregisterOnStop
    )
  }

  // The consumer's ARN once `start` made it ACTIVE.
  private var consumerArn: Option[String] = None

  /**
   * Starts the source, before Spark asks it for any offset: with enhanced fan-out, registers the stream consumer (or
   * reuses it) and waits until it is ACTIVE, which can take minutes. The scan calls it once, right after building
   * the stream; [[stop]] releases what it acquired.
   */
  def start(): this.type = {
    consumer.foreach(lifecycle => consumerArn = Some(lifecycle.activate()))
    this
  }

  /** Every task of this source: with the consumer's ARN for enhanced fan-out. */
  private def template: KinesisInputPartition = config.efo match {
    case Some(efo) =>
      val arn = consumerArn.getOrElse {
        throw new IllegalStateException(s"$this was not started: its enhanced fan-out consumer is not active")
      }
      partitionTemplate.copy(efo =
        Some(EfoRead(arn, efo.subscribeTimeoutMs, efo.maxRetries, efo.httpProtocol))
      )
    case None => partitionTemplate
  }

  private def listAll(): Map[String, Seq[ShardDescription]] =
    streams.map(s => s -> metadataClient.listShards(config.streamId(s))).toMap

  private def currentListing(): Map[String, Seq[ShardDescription]] = {
    val now = nowMillis()
    listing match {
      case Some((at, shards)) if now - at < config.describeShardIntervalMs => shards
      case _ =>
        val shards = listAll()
        listing = Some((now, shards))
        shards
    }
  }

  private def initialFor(stream: String, runId: String): KinesisOffset = {
    val listing = currentListing()(stream)
    val start = config.startingPosition match {
      case StartingPositionSpec.PerShard(doc) =>
        // A document that names the stream it was written for must be about the stream of that name now.
        val decision = StreamIdentity.decide(
          stream,
          doc.identities.get(stream),
          identities(stream),
          config.failOnRecreatedStream,
          s"the ${KinesisOptions.StartingPosition.fullKey} document",
          s"give ${KinesisOptions.StartingPosition.fullKey} a positions document of the new stream, or a " +
            "position such as TRIM_HORIZON",
          msg => log.warn(msg)
        )
        if (decision == StreamIdentity.Decision.RestartFromTrimHorizon) StartingPositionSpec.TrimHorizon
        else config.startingPosition
      case other => other
    }
    StartPositions.checkListed(
      stream,
      listing,
      StartPositions.resolve(stream, listing, start, 0L).unlisted,
      config.failOnDataLoss,
      msg => log.warn(msg),
      KinesisOptions.StartingPosition.fullKey
    )
    ShardPlanner.initial(stream, listing, start, latestAtMillis(stream), runId)
  }

  /**
   * The streams of `previous` (an offset of a checkpoint) that were deleted and re-created since it was written,
   * when `kinesis.failOnDataLoss` is false; with true, the first such stream fails the query. A stream whose
   * identity `previous` lacks (a checkpoint written before identities were recorded) is taken as the same stream: its
   * identity is recorded from now on, but whether it was re-created before this run cannot be told.
   */
  private def restartedStreams(previous: KinesisOffset): Set[String] =
    streams.filter { stream =>
      previous.shards.keysIterator.exists(_.streamName == stream) && {
        val recorded = previous.identities.get(stream)
        if (recorded.isEmpty && identityLogged.add(stream))
          log.info(
            s"The checkpoint's offset ${previous.batchId} has no identity for stream $stream (written by an earlier " +
              s"release): recording it as ${identities(stream).describe} from this batch on"
          )
        StreamIdentity.decide(
          stream,
          recorded,
          identities(stream),
          config.failOnRecreatedStream,
          s"the checkpoint (offset of batch ${previous.batchId}, run ${previous.runId})",
          "start the query with a new checkpoint location (with a kinesis.startingPosition for the new stream, a " +
            "positions document if need be)",
          msg => if (identityLogged.add(s"recreated:$stream")) log.warn(msg)
        ) == StreamIdentity.Decision.RestartFromTrimHorizon
      }
    }.toSet

  // Spark asks again when it runs the first batch: the same offset (run id included) is answered, without listing
  // the shards again.
  private lazy val initial: KinesisOffset = {
    val runId = UUID.randomUUID().toString
    KinesisOffset(-1L, runId, streams.flatMap(s => initialFor(s, runId).shards).toMap, identities)
  }

  override def initialOffset(): SparkOffset = initial

  /**
   * `previous` with the configured streams only: a stream added to `kinesis.streamName` since the checkpoint was
   * written starts per `startingPosition`; shards of a stream no longer listed are dropped. A stream deleted and
   * re-created since (its identity differs from the one `previous` recorded) fails the query, or with
   * `kinesis.failOnDataLoss=false` starts again from TRIM_HORIZON, as a stream newly read. The result records the
   * identity of every stream read.
   */
  private def withConfiguredStreams(previous: KinesisOffset): KinesisOffset = {
    val tracked = previous.shards.keySet.map(_.streamName)
    val dropped = tracked -- streams
    if (dropped.nonEmpty)
      log.info(s"No longer reading streams ${dropped.mkString(", ")}: not in kinesis.streamName")
    val added = streams.filterNot(tracked).flatMap { s =>
      log.info(s"Reading stream $s, newly in kinesis.streamName, from ${config.startingPosition}")
      // Not read in `previous`: the next offset decides which of these shards it reads.
      initialFor(s, previous.runId).shards.map { case (k, e) =>
        k -> (if (e.status == ShardStatus.Read) e.copy(status = ShardStatus.Waiting) else e)
      }
    }
    val recreated = restartedStreams(previous)
    val restarted = recreated.toSeq.flatMap { s =>
      val fresh =
        ShardPlanner.initial(
          s,
          currentListing()(s),
          StartingPositionSpec.TrimHorizon,
          latestAtMillis(s),
          previous.runId
        )
      fresh.shards.map { case (k, e) =>
        k -> (if (e.status == ShardStatus.Read) e.copy(status = ShardStatus.Waiting) else e)
      }
    }
    val configured =
      if (dropped.isEmpty && added.isEmpty && recreated.isEmpty) previous
      else
        previous.copy(shards = previous.shards.filter { case (key, _) =>
          streams.contains(key.streamName) && !recreated.contains(key.streamName)
        } ++ added ++ restarted)
    if (configured.identities == identities) configured else configured.copy(identities = identities)
  }

  override def deserializeOffset(json: String): SparkOffset = OffsetJson.readOffset(json)

  override def getDefaultReadLimit: ReadLimit =
    config.maxRecordsPerTrigger.map(n => ReadLimit.maxRows(n)).getOrElse(ReadLimit.allAvailable())

  /**
   * Pins the run's end: lists the shards now and takes a LATEST iterator on every open one. The run reads each shard
   * up to the record before the first one put after this call (see [[io.sparkkinesis.reader.RunBound]]).
   */
  override def prepareForTriggerAvailableNow(): Unit = {
    if (config.efo.isDefined) {
      // The run's bounds are confirmed by GetRecords probes at the tip, which enhanced fan-out tasks do not make.
      throw KinesisErrors.unsupportedOperation(
        "Trigger.AvailableNow with kinesis.consumerType = SubscribeToShard is not supported yet: use " +
          "kinesis.consumerType = GetRecords for AvailableNow runs, or another trigger."
      )
    }
    val shards = listAll()
    listing = Some((nowMillis(), shards))
    val run = AvailableNowPlanner.start(
      shards,
      key =>
        recordsClient.getShardIterator(config.streamId(key.streamName), key.shardId, IteratorStart.Latest)
    )
    log.info(
      s"Trigger.AvailableNow: the run reads ${run.size} shards of ${streams.mkString(", ")} up to their tips as of now"
    )
    availableNow = Some(run)
    availableNowTracked = false
  }

  private def recordLimit(limit: ReadLimit): Option[Long] = limit match {
    case rows: ReadMaxRows => Some(rows.maxRows())
    case composite: CompositeReadLimit =>
      composite.getReadLimits.toSeq.flatMap(l => recordLimit(l)).reduceOption((a, b) => math.min(a, b))
    case _ => None
  }

  override def latestOffset(): SparkOffset =
    throw new UnsupportedOperationException("latestOffset(start, limit) is used by this source")

  override def latestOffset(start: SparkOffset, limit: ReadLimit): SparkOffset = {
    // In real-time mode the engine asks, but a batch's end is what its tasks report (mergeRealTimeEnds).
    if (realTime) return start
    val planned = plan(asKinesis(start), limit)
    if (planned.batchId != asKinesis(start).batchId) {
      callsByBatch(planned.batchId) = driverCalls.drain()
      callsByBatch --= callsByBatch.keys.filter(_ <= planned.batchId - KeptCallCounts).toList
    }
    planned
  }

  private def plan(started: KinesisOffset, limit: ReadLimit): KinesisOffset = {
    val recorded = recordedEnds(started)
    val ends = recorded.map { case (key, r) => key -> r.end }
    val previous = withConfiguredStreams(started)
    val planned = ShardPlanner.next(previous, ends, currentListing())
    val maxRecords = recordLimit(limit)
    availableNow match {
      case Some(run) =>
        // The first offset this run plans from was planned before it: its tasks' outcomes were about an earlier
        // run's bounds, so only the shards it tracks are taken from it.
        val tracked =
          if (availableNowTracked) AvailableNowPlanner.update(run, recorded)
          else AvailableNowPlanner.withTracked(run, previous)
        availableNowTracked = true
        val updated = refreshPending(tracked)
        availableNow = Some(updated)
        val next = admit(AvailableNowPlanner.restrict(planned, updated), maxRecords)
        // Nothing of the run left to read: returning the start offset ends the run.
        if (next.readShards.isEmpty) started else grouped(next)
      case None =>
        // Grouped only once the batch is due: Spark asks every few milliseconds while the pacing waits.
        val next = admit(planned, maxRecords)
        val outcome =
          if (previous.batchId < 0 || !ShardPlanner.sameShape(previous, next)) BatchPacing.Outcome.Behind
          else BatchPacing.outcome(ends.values)
        streak = streak.after(previous.batchId, outcome)
        val now = nowMillis()
        if (now - lastPlannedAt < BatchPacing.waitMs(pacing, outcome, streak.idleInARow)) {
          started
        } else {
          lastPlannedAt = now
          grouped(next)
        }
    }
  }

  /**
   * `next` with its read shards grouped into tasks of `kinesis.shardsPerTask` shards, or of the automatic size for
   * the application's parallelism (see [[ShardGrouping]]); one shard per task when neither is known.
   */
  private def grouped(next: KinesisOffset): KinesisOffset = {
    val read = next.readShards.size
    val perTask =
      config.shardsPerTask
        .orElse(parallelism().map(ShardGrouping.automaticShardsPerTask(read, _)))
        .getOrElse(1)
    ShardGrouping.group(next, perTask)
  }

  /** `next` with only the shards its record limit admits read, the limit remembered for its tasks' budgets. */
  private def admit(next: KinesisOffset, maxRecords: Option[Long]): KinesisOffset = {
    recordLimits(next.batchId) = maxRecords
    val admitted = AdmissionPlanner.admitted(next.readShards.map(_._1), next.batchId, maxRecords).toSet
    next.copy(shards = next.shards.map { case (key, entry) =>
      val skip = entry.status == ShardStatus.Read && !admitted.contains(key)
      key -> (if (skip) entry.copy(status = ShardStatus.Waiting) else entry)
    })
  }

  /**
   * Polls the tip iterator of every run shard whose bound is still unknown: resolves it when a record was put since
   * the start, and otherwise keeps the iterator fresh (Kinesis expires an iterator after 5 minutes).
   */
  private def refreshPending(run: Map[ShardKey, RunShard]): Map[ShardKey, RunShard] = {
    val probe = TipProbe(recordsClient)
    run ++ AvailableNowPlanner.pending(run).flatMap { case (key, RunBound.Pending(iterator)) =>
      try
        probe.poll(iterator) match {
          case TipProbe.FirstAfter(seq) => Some(key -> RunShard(RunBound.Before(seq), reached = false))
          case TipProbe.NothingYet(next) => Some(key -> RunShard(RunBound.Pending(next), reached = false))
          case TipProbe.Unknown(next) => Some(key -> RunShard(RunBound.Pending(next), reached = false))
          case TipProbe.ClosedWithoutMore => Some(key -> RunShard(RunBound.Unbounded, reached = false))
        }
      catch {
        case _: ThroughputExceeded => None
        case e: IteratorExpired =>
          // Only when no batch touched the shard for 5 minutes; the run then also takes what was put since.
          log.warn(
            s"Trigger.AvailableNow: the tip iterator of $key expired ($e); the run now reads the shard up to its " +
              "tip as of now"
          )
          val fresh =
            recordsClient.getShardIterator(config.streamId(key.streamName), key.shardId, IteratorStart.Latest)
          Some(key -> RunShard(RunBound.Pending(fresh), reached = false))
        case _: ShardNotFound => Some(key -> RunShard(RunBound.Unbounded, reached = false))
      }
    }
  }

  /** Lag, volume and API-call metrics of the batch that ended at `latestConsumedOffset`. */
  override def metrics(latestConsumedOffset: Optional[SparkOffset]): ju.Map[String, String] = {
    val offset = latestConsumedOffset.map[Option[KinesisOffset]](o => Some(asKinesis(o))).orElse(None)
    val recorded = offset.map(recordedEnds).getOrElse(Map.empty)
    val driver = offset.flatMap(o => callsByBatch.get(o.batchId)).getOrElse(Map.empty)
    SourceMetrics.of(recorded.values.toSeq, availableNow, driver).asJava
  }

  /**
   * The ends recorded by the tasks of `offset`'s batch: one metadata entry per read task, read once per batch with
   * `checkNewRecordThreads` threads.
   */
  private def recordedEnds(offset: KinesisOffset): Map[ShardKey, RecordedEnd] = endsCache match {
    case Some((cached, ends)) if cached == offset => ends
    case _ if offset.batchId < 0 => Map.empty
    case _ =>
      val futures = offset.readTasks.map { task =>
        task -> endReaders.submit(new Callable[Option[String]] {
          def call(): Option[String] = committer(offset.runId).get(offset.batchId, task.metadataKey)
        })
      }
      val ends = futures.flatMap { case (task, f) =>
        f.get().toSeq.flatMap(json => OffsetJson.readEndsOf(task, json))
      }.toMap
      endsCache = Some((offset, ends))
      ends
  }

  override def planInputPartitions(start: SparkOffset, end: SparkOffset): Array[InputPartition] = {
    val offset = asKinesis(end)
    // A batch planned before a restart and run again: with kinesis.failOnDataLoss, a stream re-created since fails
    // here, before its tasks read the old stream's positions in the new one (otherwise the next batch restarts it).
    restartedStreams(offset)
    val budgets = AdmissionPlanner.budgets(
      offset.readShards.map(_._1),
      offset.batchId,
      config.maxRecordsPerShard,
      recordLimits.getOrElse(offset.batchId, config.maxRecordsPerTrigger),
      config.maxBytesPerTrigger
    )
    val bounds = availableNow.getOrElse(Map.empty)
    partitionsOf(offset) { (key, partition) =>
      partition.copy(
        maxRecords = budgets(key).maxRecords,
        maxBytes = budgets(key).maxBytes,
        bound = bounds.get(key).map(_.bound).getOrElse(RunBound.Unbounded)
      )
    }
  }

  /**
   * The read tasks of `offset` ([[KinesisOffset.readTasks]]): each shard from where it starts, as `limited` bounds it;
   * each task on its preferred executor ([[ExecutorPlacement]]) unless `kinesis.executorAffinity` is false.
   */
  private def partitionsOf(offset: KinesisOffset)(
      limited: (ShardKey, KinesisInputPartition) => KinesisInputPartition
  ): Array[InputPartition] = {
    val closed = listing.toSeq.flatMap { case (_, shards) =>
      shards.toSeq.flatMap { case (stream, descriptions) =>
        descriptions.filter(_.isClosed).map(d => ShardKey(stream, d.shardId))
      }
    }.toSet
    val tasks = offset.readTasks
    val placement =
      if (config.executorAffinity) ExecutorPlacement.assignTasks(tasks, executors())
      else Map.empty[ReadTask, ExecutorRef]
    val base = template
    def shard(key: ShardKey): KinesisInputPartition = {
      val entry = offset.shards(key)
      limited(
        key,
        base.copy(
          streamArn = config.streamArns.get(key.streamName),
          streamName = key.streamName,
          shardId = key.shardId,
          batchId = offset.batchId,
          runId = offset.runId,
          start = entry.position,
          hashKeyRange = entry.hashKeyRange,
          shardClosed = closed.contains(key),
          deliverOutsideRange = summaries.get(key.streamName).exists(_.serviceManagedDistribution),
          streamIdentity = offset.identities.get(key.streamName)
        )
      )
    }
    tasks.map { task =>
      task.index match {
        case None => shard(task.shards.head).copy(preferredExecutor = placement.get(task)): InputPartition
        case Some(i) => KinesisTaskPartition(i, task.shards.map(shard), placement.get(task)): InputPartition
      }
    }.toArray
  }

  // Real-time mode: set once, when Spark plans a real-time query; then the batch whose tasks run now.
  @volatile private var realTime = false
  private var realTimeBatch: Option[KinesisOffset] = None

  /**
   * Switches to real-time mode. Batches then have no record, byte or time limit (the engine ends them), and no idle
   * wait: their tasks wait for records themselves.
   */
  private[source] def enableRealTimeMode(): Unit = {
    val ignored = Seq(
      config.maxRecordsPerTrigger.map(_ => KinesisOptions.MaxRecordsPerTrigger.fullKey),
      config.maxBytesPerTrigger.map(_ => KinesisOptions.MaxBytesPerTrigger.fullKey)
    ).flatten
    if (ignored.nonEmpty)
      log.warn(s"Real-time mode: ${ignored.mkString(", ")} do not apply (a real-time batch ends by time)")
    realTime = true
  }

  /**
   * Plans a real-time batch from `start` alone: the shards it reads and where, exactly as `latestOffset` plans a
   * micro-batch (the previous batch's recorded ends advance `start`), with no limits.
   */
  private[source] def realTimePartitions(start: SparkOffset): Array[InputPartition] = {
    val started = asKinesis(start)
    val ends = recordedEnds(started).map { case (key, r) => key -> r.end }
    // Real-time tasks read one shard each, for as long as the batch lasts.
    val batch =
      ShardGrouping.group(ShardPlanner.next(withConfiguredStreams(started), ends, currentListing()), 1)
    if (!realTimeBatch.exists(_.batchId == batch.batchId)) callsByBatch(batch.batchId) = driverCalls.drain()
    realTimeBatch = Some(batch)
    partitionsOf(batch)((_, p) => p.copy(maxRecords = Long.MaxValue, maxTimeMs = None, realTime = true))
  }

  /**
   * The offset of a real-time batch whose tasks reported `ends`: the batch's own offset, as in a micro-batch (its
   * ends, also in the metadata store, advance it when the next batch is planned). The reported ends are kept, so
   * that planning does not read them back from the store.
   */
  private[source] def mergeRealTimeEnds(ends: Array[PartitionOffset]): SparkOffset = {
    val batch = realTimeBatch.getOrElse(
      throw new IllegalStateException(
        "Spark merged the offsets of a real-time batch that this source did not plan"
      )
    )
    val reported = ends.toSeq.map {
      case o: KinesisShardOffset => o.key -> OffsetJson.readRecordedEnd(o.recordedEnd)
      case other => throw new IllegalArgumentException(s"Not an offset of this source: $other")
    }.toMap
    val missing = batch.readShards.map(_._1).filterNot(reported.contains)
    if (missing.nonEmpty) {
      throw new IllegalStateException(
        s"Real-time batch ${batch.batchId}: no end was reported for ${missing.mkString(", ")}"
      )
    }
    checkSlots(batch, ends.toSeq.collect { case o: KinesisShardOffset if o.neverAsked => o.key }.toSet)
    endsCache = Some((batch, reported))
    batch
  }

  // Shards whose real-time task the engine never asked for a record, in the last batch.
  private var unaskedLastBatch = Set.empty[ShardKey]

  /**
   * A real-time task that starts after its batch ended (no free task slot) is never asked for a record, and its
   * shard does not move. Once is a warning; the same shard twice in a row fails the query: it would never be read.
   */
  private def checkSlots(batch: KinesisOffset, unasked: Set[ShardKey]): Unit = {
    val again = unasked.intersect(unaskedLastBatch)
    unaskedLastBatch = unasked
    if (unasked.nonEmpty) {
      val message =
        s"Real-time batch ${batch.batchId} reads ${batch.readShards.size} shards, one long-running task each, but " +
          s"the tasks of ${unasked.toSeq.map(_.toString).sorted.mkString(", ")} started only after the batch had " +
          "ended, for lack of a free task slot, and read nothing. Give the query at least one task slot per shard " +
          "(executor cores, or local[N]), or read the stream with micro-batches."
      if (again.nonEmpty) throw new IllegalStateException(message)
      log.warn(message)
    }
  }

  override def createReaderFactory(): PartitionReaderFactory = KinesisPartitionReaderFactory

  override def commit(end: SparkOffset): Unit = {
    val offset = asKinesis(end)
    recordLimits --= recordLimits.keys.filter(_ <= offset.batchId).toList
    val keepFrom = offset.batchId - minBatchesToRetain + 1
    if (keepFrom > 0) { // deleted on the committer's purge thread, off the batch's critical path
      try committer(offset.runId).purgeInBackground(keepFrom)
      catch { case e: Exception => log.warn(s"Could not purge Kinesis metadata before batch $keepFrom: $e") }
    }
  }

  override def stop(): Unit = {
    endReaders.shutdownNow()
    endReaders.awaitTermination(10, TimeUnit.SECONDS)
    runCommitter.foreach(_._2.close())
    consumerArn.foreach(SubscriptionCache.closeConsumer)
    consumer.foreach(_.release())
    releaseClients()
  }

  override def toString: String =
    s"KinesisMicroBatchStream[stream=${streams.mkString(",")}, endpoint=${config.client.endpointUrl}, " +
      s"consumer=${config.consumerType}]"

  // Batches whose driver request counts are kept for metrics (Spark asks for the last one).
  private val KeptCallCounts = 10

  private def asKinesis(offset: SparkOffset): KinesisOffset = offset match {
    case k: KinesisOffset => k
    case other => OffsetJson.readOffset(other.json())
  }
}
