package io.sparkkinesis.kclapp;

import java.net.URI;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import software.amazon.awssdk.http.Protocol;
import software.amazon.awssdk.http.nio.netty.NettyNioAsyncHttpClient;
import software.amazon.awssdk.services.kinesis.KinesisAsyncClient;
import software.amazon.awssdk.services.kinesis.model.GetRecordsResponse;
import software.amazon.awssdk.services.kinesis.model.ListShardsResponse;
import software.amazon.awssdk.services.kinesis.model.Shard;
import software.amazon.awssdk.services.kinesis.model.ShardIteratorType;
import software.amazon.kinesis.retrieval.AggregatorUtil;
import software.amazon.kinesis.retrieval.KinesisClientRecord;

/**
 * Reads every shard of a stream from TRIM_HORIZON to its tip with GetRecords and de-aggregates what it read with the
 * KCL's own code ({@link AggregatorUtil}, given the shard's hash-key range, as a KCL worker's record processing does:
 * sub-records whose hash key lies outside the shard are dropped, an aggregate that does not decode stays one record).
 *
 * <p>Settings come from environment variables (credentials and region through the SDK's default chains):
 * KCL_APP_KINESIS_ENDPOINT and KCL_APP_STREAM.
 *
 * <p>Prints one JSON object per user record on standard output: shardId, sequenceNumber, subSequenceNumber,
 * aggregated, partitionKey, explicitHashKey (null when absent) and data (base64).
 */
public final class DeaggregateApp {

    /** GetRecords calls per shard at most, so that a stream that never reaches its tip cannot hang the test. */
    private static final int MAX_CALLS = 1_000;

    private DeaggregateApp() {}

    private static String env(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("environment variable " + name + " is not set");
        }
        return value;
    }

    /** The shard's Kinesis records, from TRIM_HORIZON until a call returns none and is at the tip, or the end. */
    private static List<KinesisClientRecord> read(KinesisAsyncClient kinesis, String stream, String shardId) {
        String iterator = kinesis.getShardIterator(b -> b.streamName(stream)
                        .shardId(shardId)
                        .shardIteratorType(ShardIteratorType.TRIM_HORIZON))
                .join()
                .shardIterator();
        List<KinesisClientRecord> records = new ArrayList<>();
        for (int call = 0; call < MAX_CALLS && iterator != null; call++) {
            String current = iterator;
            GetRecordsResponse response = kinesis.getRecords(b -> b.shardIterator(current).limit(10_000)).join();
            response.records().forEach(r -> records.add(KinesisClientRecord.fromRecord(r)));
            iterator = response.nextShardIterator();
            Long behind = response.millisBehindLatest();
            if (response.records().isEmpty() && (behind == null || behind == 0L)) {
                return records;
            }
        }
        if (iterator != null) {
            throw new IllegalStateException(shardId + " did not reach its tip in " + MAX_CALLS + " GetRecords calls");
        }
        return records;
    }

    private static String json(String value) {
        if (value == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : value.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }

    private static String base64(ByteBuffer data) {
        byte[] bytes = new byte[data.remaining()];
        data.duplicate().get(bytes);
        return Base64.getEncoder().encodeToString(bytes);
    }

    public static void main(String[] args) throws Exception {
        String stream = env("KCL_APP_STREAM");
        URI endpoint = URI.create(env("KCL_APP_KINESIS_ENDPOINT"));
        // The emulator speaks plain HTTP/1.1 on loopback.
        try (KinesisAsyncClient kinesis = KinesisAsyncClient.builder()
                .endpointOverride(endpoint)
                .httpClientBuilder(NettyNioAsyncHttpClient.builder().protocol(Protocol.HTTP1_1))
                .build()) {
            List<Shard> shards = new ArrayList<>();
            ListShardsResponse page = kinesis.listShards(b -> b.streamName(stream)).join();
            shards.addAll(page.shards());
            while (page.nextToken() != null) {
                String token = page.nextToken();
                page = kinesis.listShards(b -> b.nextToken(token)).join();
                shards.addAll(page.shards());
            }
            AggregatorUtil aggregator = new AggregatorUtil();
            StringBuilder out = new StringBuilder();
            for (Shard shard : shards) {
                List<KinesisClientRecord> raw = read(kinesis, stream, shard.shardId());
                List<KinesisClientRecord> users = aggregator.deaggregate(
                        raw, shard.hashKeyRange().startingHashKey(), shard.hashKeyRange().endingHashKey());
                for (KinesisClientRecord record : users) {
                    out.append("{\"shardId\":").append(json(shard.shardId()))
                            .append(",\"sequenceNumber\":").append(json(record.sequenceNumber()))
                            .append(",\"subSequenceNumber\":").append(record.subSequenceNumber())
                            .append(",\"aggregated\":").append(record.aggregated())
                            .append(",\"partitionKey\":").append(json(record.partitionKey()))
                            .append(",\"explicitHashKey\":").append(json(record.explicitHashKey()))
                            .append(",\"data\":").append(json(base64(record.data())))
                            .append("}\n");
                }
            }
            System.out.print(out);
            System.out.flush();
        }
    }
}
