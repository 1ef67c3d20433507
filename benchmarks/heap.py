"""The heap of a local Spark session, sampled over py4j: what the memory benchmarks report.

In local mode (``local[2]``) the executors live in the driver JVM, so ``spark.driver.memory`` is the executors' heap.
"""

from __future__ import annotations

import threading
from typing import Any


def heap_session(memory: str) -> Any:
    """A ``local[2]`` session with the connector's jars and ``memory`` of heap; the SDK speaks JSON (not CBOR)."""
    import spark_kinesis
    from pyspark.sql import SparkSession

    spark = spark_kinesis.configure_spark(
        SparkSession.builder.master("local[2]")
        .config("spark.driver.memory", memory)
        .config("spark.sql.streaming.numRecentProgressUpdates", "100000")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # kinesis-local takes over 30 s to send a 9.5 MiB GetRecords answer as CBOR, a few seconds as JSON.
        .config("spark.driver.extraJavaOptions", "-Daws.cborEnabled=false")
    ).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class HeapSampler(threading.Thread):
    """Samples the JVM's heap every ``interval`` seconds until ``halt`` is set; keeps the highest values since the
    last :meth:`reset`: used heap (garbage included), and the heap pools after their last collection (what
    survived)."""

    def __init__(self, jvm: Any, interval: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.management = jvm.java.lang.management.ManagementFactory
        self.interval = interval
        self.peak_used = 0
        self.peak_after_gc = 0
        self.halt = threading.Event()

    def reset(self) -> None:
        self.peak_used = 0
        self.peak_after_gc = 0

    def run(self) -> None:
        memory = self.management.getMemoryMXBean()
        pools = [p for p in self.management.getMemoryPoolMXBeans() if str(p.getType()) == "Heap memory"]
        while not self.halt.wait(self.interval):
            self.peak_used = max(self.peak_used, memory.getHeapMemoryUsage().getUsed())
            survived = sum(p.getCollectionUsage().getUsed() for p in pools if p.getCollectionUsage() is not None)
            self.peak_after_gc = max(self.peak_after_gc, survived)
