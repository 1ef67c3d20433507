package io.sparkkinesis.source

import io.sparkkinesis.client.{SdkSubscriptionClient, ShardRecordsClient}
import io.sparkkinesis.config.{AwsClientConfig, ReadMode, SourceConfig}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.reader._
import io.sparkkinesis.reader.efo.{EfoFetchers, SubscriptionSettings}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

/**
 * What every read task of a query (or of a batch read) shares. [[KinesisReaderFactory]] carries it, so Spark ships it
 * once per stage with the task binary; each task's [[KinesisReadTask]] carries only its shards. `consumerArns`: the
 * fan-out consumer of each stream (as requests name the stream), resolved by the driver.
 */
private[sparkkinesis] final case class ReadSettings(
    client: AwsClientConfig,
    mode: ReadMode,
    recordsPerFetch: Int,
    fetchIntervalMs: Long,
    failOnDataLoss: Boolean,
    includeSubSequenceNumber: Boolean,
    consumerArns: Map[String, String] = Map.empty
) {

  /** The factory a task opens its shards' fetchers with: GetRecords on the task's `records` client, or fan-out. */
  def fetchers(records: ShardRecordsClient): FetcherFactory = mode match {
    case polling: ReadMode.Polling =>
      new PollingFetchers(
        records,
        client.endpointUrl,
        fetchIntervalMs,
        client.retryMaxDelayMs,
        polling.maxBytesPerSecond
      )
    case ReadMode.FanOut(efo) =>
      new EfoFetchers(
        client.endpointUrl,
        stream =>
          consumerArns.getOrElse(
            stream,
            throw KinesisErrors.internal(s"no fan-out consumer was resolved for $stream")
          ),
        SubscriptionSettings(efo.subscribeTimeoutMs, efo.maxRetries),
        () => SdkSubscriptionClient.acquire(client, efo.httpProtocol),
        records
      )
  }
}

private[sparkkinesis] object ReadSettings {

  def of(config: SourceConfig): ReadSettings = {
    import config._
    ReadSettings(client, readMode, recordsPerFetch, fetchIntervalMs, failOnDataLoss, includeSubSequenceNumber)
  }
}

/** The reader factory of every read (micro-batch, real-time, batch): the query-wide settings, shipped once. */
private[sparkkinesis] final case class KinesisReaderFactory(settings: ReadSettings)
    extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    partition match {
      case t: KinesisReadTask if t.kind.realTime => RealTimeMode.reader(settings, t)
      case t: KinesisReadTask => KinesisPartitionReader(settings, t)
    }
}
