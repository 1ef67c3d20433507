import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A loopback Kinesis endpoint for one stream whose shards are all open, empty and at their tips: it answers the
 * JSON protocol's DescribeStreamSummary, ListShards (pages of at most 1,000 shards, as Kinesis), GetShardIterator
 * and GetRecords (no records, 0 ms behind, the next iterator), and nothing else (HTTP 400, UnknownOperationException).
 *
 * It exists to tell the connector's own cost of an idle batch from an emulator's: ministack and kinesis-local answer
 * GetRecords in milliseconds of their own CPU, so 1,024 shards' idle GetRecords take seconds there whatever the
 * client does. This endpoint answers at once, or after --latency-ms (a model of the service's response time), on a
 * pool of threads. It checks no signature and keeps no records: it is a benchmark aid, never a test double.
 *
 * Run with the JDK's source launcher: java benchmarks/TipOnlyKinesis.java STREAM SHARDS [LATENCY_MS]. It prints
 * "port N" once it listens on 127.0.0.1, and serves until its standard input closes.
 */
public final class TipOnlyKinesis {
  private static final Pattern FIELD = Pattern.compile("\"(ShardId|NextToken)\"\\s*:\\s*\"([^\"]*)\"");
  private static final Pattern ITERATOR = Pattern.compile("\"ShardIterator\"\\s*:\\s*\"([^\"]*)\"");
  private static final int PAGE = 1000;

  private final String stream;
  private final int shards;
  private final long latencyMs;

  private TipOnlyKinesis(String stream, int shards, long latencyMs) {
    this.stream = stream;
    this.shards = shards;
    this.latencyMs = latencyMs;
  }

  public static void main(String[] args) throws Exception {
    // Without it the JDK's server sends headers and body in two segments, and Nagle's algorithm against the client's
    // delayed ACK adds about 40 ms to every answer.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    TipOnlyKinesis endpoint =
        new TipOnlyKinesis(args[0], Integer.parseInt(args[1]), args.length > 2 ? Long.parseLong(args[2]) : 0L);
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
    server.createContext("/", endpoint::handle);
    server.setExecutor(Executors.newFixedThreadPool(64));
    server.start();
    System.out.println("port " + server.getAddress().getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // Serve until the parent closes our standard input.
    }
    server.stop(0);
    System.exit(0);
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      String target = String.valueOf(exchange.getRequestHeaders().getFirst("X-Amz-Target"));
      String operation = target.substring(target.indexOf('.') + 1);
      if (latencyMs > 0) Thread.sleep(latencyMs);
      String answer;
      switch (operation) {
        case "DescribeStreamSummary":
          answer = describeStreamSummary();
          break;
        case "ListShards":
          answer = listShards(field(body, "NextToken"));
          break;
        case "GetShardIterator":
          answer = "{\"ShardIterator\":\"" + field(body, "ShardId") + "/0\"}";
          break;
        case "GetRecords":
          answer = getRecords(body);
          break;
        default:
          send(exchange, 400, "{\"__type\":\"UnknownOperationException\",\"message\":\"" + operation + "\"}");
          return;
      }
      send(exchange, 200, answer);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private String describeStreamSummary() {
    return "{\"StreamDescriptionSummary\":{\"StreamName\":\"" + stream + "\",\"StreamARN\":\"" + arn()
        + "\",\"StreamStatus\":\"ACTIVE\",\"StreamModeDetails\":{\"StreamMode\":\"PROVISIONED\"},"
        + "\"RetentionPeriodHours\":24,\"StreamCreationTimestamp\":1.7E9,\"EnhancedMonitoring\":[],"
        + "\"EncryptionType\":\"NONE\",\"OpenShardCount\":" + shards + ",\"ConsumerCount\":0}}";
  }

  /** Shards split the hash key space evenly; each page holds at most 1,000, like the service's default. */
  private String listShards(String nextToken) {
    int from = nextToken == null ? 0 : Integer.parseInt(nextToken);
    int to = Math.min(shards, from + PAGE);
    BigInteger space = BigInteger.ONE.shiftLeft(128);
    StringBuilder out = new StringBuilder("{\"Shards\":[");
    for (int i = from; i < to; i++) {
      BigInteger low = space.multiply(BigInteger.valueOf(i)).divide(BigInteger.valueOf(shards));
      BigInteger high = space.multiply(BigInteger.valueOf(i + 1)).divide(BigInteger.valueOf(shards))
          .subtract(BigInteger.ONE);
      if (i > from) out.append(',');
      out.append("{\"ShardId\":\"").append(shardId(i)).append("\",\"HashKeyRange\":{\"StartingHashKey\":\"")
          .append(low).append("\",\"EndingHashKey\":\"").append(high)
          .append("\"},\"SequenceNumberRange\":{\"StartingSequenceNumber\":\"")
          .append(String.format("%056d", i)).append("\"}}");
    }
    out.append(']');
    if (to < shards) out.append(",\"NextToken\":\"").append(to).append('"');
    return out.append('}').toString();
  }

  private String getRecords(String body) {
    Matcher m = ITERATOR.matcher(body);
    String iterator = m.find() ? m.group(1) : "";
    int slash = iterator.lastIndexOf('/');
    String next = slash < 0 ? iterator : iterator.substring(0, slash) + "/" + (Long.parseLong(iterator.substring(slash + 1)) + 1);
    return "{\"Records\":[],\"NextShardIterator\":\"" + next + "\",\"MillisBehindLatest\":0}";
  }

  private String arn() {
    return "arn:aws:kinesis:us-east-1:000000000000:stream/" + stream;
  }

  private static String shardId(int i) {
    return String.format("shardId-%012d", i);
  }

  private static String field(String body, String name) {
    Matcher m = FIELD.matcher(body);
    while (m.find()) {
      if (m.group(1).equals(name)) return m.group(2);
    }
    return null;
  }

  private static void send(HttpExchange exchange, int status, String json) throws IOException {
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/x-amz-json-1.1");
    exchange.getResponseHeaders().set("x-amzn-RequestId", "tip-only");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }
}
