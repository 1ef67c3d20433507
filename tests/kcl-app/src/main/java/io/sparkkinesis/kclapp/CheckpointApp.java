package io.sparkkinesis.kclapp;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import software.amazon.awssdk.http.Protocol;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.cloudwatch.CloudWatchAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.kinesis.KinesisAsyncClient;
import software.amazon.kinesis.common.ConfigsBuilder;
import software.amazon.kinesis.common.InitialPositionInStream;
import software.amazon.kinesis.common.InitialPositionInStreamExtended;
import software.amazon.kinesis.coordinator.Scheduler;
import software.amazon.kinesis.coordinator.streamInfo.StreamIdCache;
import software.amazon.kinesis.lifecycle.events.InitializationInput;
import software.amazon.kinesis.lifecycle.events.LeaseLostInput;
import software.amazon.kinesis.lifecycle.events.ProcessRecordsInput;
import software.amazon.kinesis.lifecycle.events.ShardEndedInput;
import software.amazon.kinesis.lifecycle.events.ShutdownRequestedInput;
import software.amazon.kinesis.metrics.MetricsLevel;
import software.amazon.kinesis.metrics.NullMetricsFactory;
import software.amazon.kinesis.processor.ShardRecordProcessor;
import software.amazon.kinesis.retrieval.KinesisClientRecord;
import software.amazon.kinesis.retrieval.polling.PollingConfig;

/**
 * A KCL 3.x consumer for the hand-over test: it reads every shard of a stream from TRIM_HORIZON with polling, and on
 * each shard checkpoints at its N-th user record (the KCL de-aggregates KPL aggregates, so the checkpoint may fall
 * inside one: sequence number plus sub-sequence number). When every shard has checkpointed it stops, at once as if
 * killed (KCL_APP_STOP=halt, the default) or with the KCL's graceful shutdown (KCL_APP_STOP=graceful), and exits 0;
 * it exits 2 if that did not happen in time.
 *
 * <p>Settings come from environment variables (credentials and region too, through the SDK's default chains):
 * KCL_APP_STREAM, KCL_APP_NAME (the application name, hence the lease table), KCL_APP_KINESIS_ENDPOINT,
 * KCL_APP_DYNAMODB_ENDPOINT, KCL_APP_SHARDS (how many shards to wait for), KCL_APP_CHECKPOINT_AT (N),
 * KCL_APP_OUTPUT (a file) and KCL_APP_TIMEOUT_SECONDS.
 *
 * <p>The output file gets one line per shard, tab-separated: shard id, the checkpoint's sequence number, its
 * sub-sequence number, then the data (UTF-8) of every record up to and including the checkpointed one.
 */
public final class CheckpointApp {

    private CheckpointApp() {}

    private static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("environment variable " + name + " is not set");
        }
        return value;
    }

    /** One shard's processor: counts user records and checkpoints at the N-th. */
    private static final class Processor implements ShardRecordProcessor {
        private final int checkpointAt;
        private final Path output;
        private final CountDownLatch remaining;
        private final List<String> seen = new ArrayList<>();
        private String shardId;
        private boolean done;

        Processor(int checkpointAt, Path output, CountDownLatch remaining) {
            this.checkpointAt = checkpointAt;
            this.output = output;
            this.remaining = remaining;
        }

        @Override
        public void initialize(InitializationInput input) {
            shardId = input.shardId();
        }

        @Override
        public void processRecords(ProcessRecordsInput input) {
            for (KinesisClientRecord record : input.records()) {
                if (done) {
                    return;
                }
                byte[] bytes = new byte[record.data().remaining()];
                record.data().duplicate().get(bytes);
                seen.add(new String(bytes, StandardCharsets.UTF_8));
                if (seen.size() == checkpointAt) {
                    try {
                        input.checkpointer().checkpoint(record.sequenceNumber(), record.subSequenceNumber());
                        String line = shardId + "\t" + record.sequenceNumber() + "\t" + record.subSequenceNumber()
                                + "\t" + String.join("\t", seen) + "\n";
                        synchronized (CheckpointApp.class) {
                            Files.writeString(
                                    output, line, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
                        }
                    } catch (Exception e) {
                        System.err.println("kcl-app: checkpoint on " + shardId + " failed: " + e);
                        System.exit(3);
                    }
                    done = true;
                    remaining.countDown();
                }
            }
        }

        @Override
        public void leaseLost(LeaseLostInput input) {}

        @Override
        public void shardEnded(ShardEndedInput input) {
            try {
                input.checkpointer().checkpoint();
            } catch (Exception e) {
                System.err.println("kcl-app: shard-end checkpoint on " + shardId + " failed: " + e);
            }
        }

        @Override
        public void shutdownRequested(ShutdownRequestedInput input) {}
    }

    public static void main(String[] args) throws Exception {
        String stream = env("KCL_APP_STREAM");
        String application = env("KCL_APP_NAME");
        URI kinesisEndpoint = URI.create(env("KCL_APP_KINESIS_ENDPOINT"));
        URI dynamoDbEndpoint = URI.create(env("KCL_APP_DYNAMODB_ENDPOINT"));
        int shards = Integer.parseInt(env("KCL_APP_SHARDS"));
        int checkpointAt = Integer.parseInt(env("KCL_APP_CHECKPOINT_AT"));
        Path output = Path.of(env("KCL_APP_OUTPUT"));
        long timeoutSeconds = Long.parseLong(env("KCL_APP_TIMEOUT_SECONDS"));
        Files.deleteIfExists(output);

        // The emulators speak plain HTTP/1.1 on loopback (the KCL's own client factory asks for HTTP/2).
        KinesisAsyncClient kinesis = KinesisAsyncClient.builder()
                .endpointOverride(kinesisEndpoint)
                .httpClientBuilder(NettyNioAsyncHttpClient.builder().protocol(Protocol.HTTP1_1))
                .build();
        DynamoDbAsyncClient dynamoDb = DynamoDbAsyncClient.builder()
                .endpointOverride(dynamoDbEndpoint)
                .build();
        // Required by the ConfigsBuilder; never called, since metrics go to the NullMetricsFactory.
        CloudWatchAsyncClient cloudWatch = CloudWatchAsyncClient.builder()
                .endpointOverride(dynamoDbEndpoint)
                .region(Region.of(System.getenv().getOrDefault("AWS_REGION", "us-east-1")))
                .build();

        CountDownLatch remaining = new CountDownLatch(shards);
        String worker = "kcl-app-" + UUID.randomUUID();
        ConfigsBuilder configs = new ConfigsBuilder(
                stream,
                application,
                kinesis,
                dynamoDb,
                cloudWatch,
                worker,
                () -> new Processor(checkpointAt, output, remaining));

        // Short intervals, so that a worker on an empty table takes its leases within seconds.
        var leaseManagement = configs.leaseManagementConfig()
                .failoverTimeMillis(2_000L)
                .shardSyncIntervalMillis(2_000L)
                .leaseAssignmentIntervalMillis(1_000L);
        leaseManagement.workerUtilizationAwareAssignmentConfig().inMemoryWorkerMetricsCaptureFrequencyMillis(500L);
        leaseManagement.workerUtilizationAwareAssignmentConfig().workerMetricsReporterFreqInMillis(1_000L);
        var coordinator = configs.coordinatorConfig()
                .parentShardPollIntervalMillis(500L)
                .shardConsumerDispatchPollIntervalMillis(200L)
                .schedulerInitializationBackoffTimeMillis(200L);
        var retrieval = configs.retrievalConfig()
                .retrievalSpecificConfig(new PollingConfig(stream, kinesis).idleTimeBetweenReadsInMillis(200L))
                .initialPositionInStreamExtended(
                        InitialPositionInStreamExtended.newInitialPosition(InitialPositionInStream.TRIM_HORIZON));
        var metrics = configs.metricsConfig().metricsLevel(MetricsLevel.NONE).metricsFactory(new NullMetricsFactory());

        Scheduler scheduler = new Scheduler(
                configs.checkpointConfig(),
                coordinator,
                leaseManagement,
                configs.lifecycleConfig(),
                metrics,
                configs.processorConfig(),
                retrieval);
        // A worker that finds the lease table empty waits a random 1 to 30 s (fixed in the Scheduler) before it
        // syncs shards and creates the leases. Run the KCL's own shard sync first, so the table is not empty.
        long started = System.nanoTime();
        scheduler.leaseRefresher().createLeaseTableIfNotExists();
        scheduler.leaseRefresher().waitUntilLeaseTableExists(1, 30);
        // The shard sync looks up stream ids in this cache; the Scheduler initialises it the same way (once).
        StreamIdCache.initialize(scheduler.streamIdCacheManager(), leaseManagement.streamIdOnboardingState());
        for (var streamConfig : scheduler.currentStreamConfigMap().values()) {
            scheduler.shardSyncTaskManagerProvider().apply(streamConfig).callShardSyncTask();
        }
        Thread thread = new Thread(scheduler, "kcl-scheduler");
        thread.setDaemon(true);
        thread.start();

        boolean all = remaining.await(timeoutSeconds, TimeUnit.SECONDS);
        long tookMillis = Duration.ofNanos(System.nanoTime() - started).toMillis();
        System.out.println("kcl-app: worker " + worker + (all ? " checkpointed " : " did NOT checkpoint ")
                + "every shard (" + (shards - remaining.getCount()) + " of " + shards + ") in " + tookMillis
                + " ms");
        if ("graceful".equals(System.getenv().getOrDefault("KCL_APP_STOP", "halt"))) {
            try {
                scheduler.startGracefulShutdown().get(15, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("kcl-app: graceful shutdown did not finish: " + e);
            }
            System.out.println("kcl-app: stopped after "
                    + Duration.ofNanos(System.nanoTime() - started).toMillis() + " ms");
            System.exit(all ? 0 : 2);
        }
        // As if the process were killed: the leases, the leader lock and the worker's metrics stay in the table.
        System.out.flush();
        Runtime.getRuntime().halt(all ? 0 : 2);
    }
}
