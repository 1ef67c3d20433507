package io.sparkkinesis.source;

import com.codahale.metrics.MetricFilter;
import com.codahale.metrics.MetricRegistry;
import org.apache.spark.SparkEnv;
import org.apache.spark.metrics.MetricsSystem;
import org.apache.spark.metrics.source.Source;

/**
 * Gauges published as a source of the driver's Spark metrics system, whose sinks (the Prometheus servlet, JMX,
 * Graphite, ...) report them. Spark's {@code Source} trait and {@code MetricsSystem} are {@code private[spark]} to
 * Scala callers, so this class is written in Java (as {@link SparkExecutors}), and names them only inside method
 * bodies (the Scala compiler reads the signatures of Java classes); what it uses has the same signatures on every
 * supported line. While the source is registered, a gauge added to or removed from {@link #metricRegistry()} is added
 * to or removed from the metrics system at once (Dropwizard forwards the changes of a registry registered in another).
 */
final class SparkMetricsSource {
  private final String name;
  private final MetricRegistry registry = new MetricRegistry();
  private Runnable unregister = () -> {};

  SparkMetricsSource(String name) {
    this.name = name;
  }

  String sourceName() {
    return name;
  }

  MetricRegistry metricRegistry() {
    return registry;
  }

  /**
   * Registers the source with the driver's metrics system: false outside a Spark application, or when a source of
   * this name is registered already (their gauges would be mixed up, and removing one would remove the other's).
   */
  boolean register() {
    SparkEnv env = SparkEnv.get();
    if (env == null || !env.metricsSystem().getSourcesByName(name).isEmpty()) return false;
    MetricsSystem system = env.metricsSystem();
    Source source =
        new Source() {
          @Override
          public String sourceName() {
            return name;
          }

          @Override
          public MetricRegistry metricRegistry() {
            return registry;
          }
        };
    system.registerSource(source);
    unregister = () -> system.removeSource(source);
    return true;
  }

  /** Removes the gauges, and the source from the metrics system if it was registered. */
  void remove() {
    registry.removeMatching(MetricFilter.ALL);
    unregister.run();
    unregister = () -> {};
  }
}
