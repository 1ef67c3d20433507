package io.sparkkinesis.source;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.spark.SparkEnv;
import org.apache.spark.storage.BlockManager;
import org.apache.spark.storage.BlockManagerId;

/**
 * The executors of this application, as the driver's block manager master knows them. Spark names executors in no
 * public API (its Kafka source asks the block manager too); the block manager classes are {@code private[spark]} to
 * Scala callers, so this one call is written in Java. Its signature has been the same on every supported line.
 */
final class SparkExecutors {
  private SparkExecutors() {}

  /**
   * Every executor but the driver, as (host, executor id); empty in local mode, or outside a Spark application.
   * (Plain Java types: this class is compiled before the Scala classes.)
   */
  static List<Map.Entry<String, String>> hostsAndIds() {
    List<Map.Entry<String, String>> executors = new ArrayList<>();
    SparkEnv env = SparkEnv.get();
    if (env == null || env.blockManager() == null) return executors;
    BlockManager manager = env.blockManager();
    scala.collection.Iterator<BlockManagerId> peers =
        manager.master().getPeers(manager.blockManagerId()).iterator();
    while (peers.hasNext()) {
      BlockManagerId id = peers.next();
      executors.add(Map.entry(id.host(), id.executorId()));
    }
    return executors;
  }
}
