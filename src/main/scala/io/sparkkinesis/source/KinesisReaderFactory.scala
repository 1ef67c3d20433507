package io.sparkkinesis.source

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

/** The reader factory of every read (micro-batch, real-time, batch): the query-wide settings, shipped once. */
private[sparkkinesis] final case class KinesisReaderFactory(settings: ReadSettings)
    extends PartitionReaderFactory {

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    partition match {
      case t: KinesisReadTask if t.kind.isInstanceOf[TaskKind.RealTime] => RealTimeMode.reader(settings, t)
      case t: KinesisReadTask => KinesisPartitionReader(settings, t)
    }
}
