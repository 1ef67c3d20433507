import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.LongAdder;

/**
 * A loopback Kinesis endpoint that keeps its streams in memory and answers at once, so that a read benchmark at
 * millions of records measures the readers, not an emulator: ministack answers each GetRecords with a Python loop
 * over its records and bounds any reader at about 100,000 records/s on this kind of machine.
 *
 * It speaks the JSON protocol (clients run with -Daws.cborEnabled=false) for CreateStream, DeleteStream,
 * DescribeStreamSummary, ListShards, PutRecord, PutRecords, GetShardIterator (TRIM_HORIZON, LATEST,
 * AT_/AFTER_SEQUENCE_NUMBER, AT_TIMESTAMP) and GetRecords (at most 10,000 records and 10 MiB of data per call, as the
 * service; no read or write throttling). Every other operation gets HTTP 400, UnknownOperationException: there is no
 * enhanced fan-out. Shards split the hash key space evenly, are all open, and never reshard. A put is routed by the
 * MD5 of its partition key, or by its explicit hash key. Identical large payloads (the benchmark's KPL aggregates) are
 * kept once. It checks no signature: a benchmark aid, never a test double.
 *
 * GET /counts answers the requests per operation since the start or the last POST /reset, as JSON.
 *
 * Run with the JDK's source launcher: java benchmarks/MemoryKinesis.java. It prints "port N" once it listens on
 * 127.0.0.1, and serves until its standard input closes.
 */
public final class MemoryKinesis {
  private static final int MAX_RECORDS = 10_000;
  private static final long MAX_BYTES = 10L << 20;
  private static final BigInteger HASH_SPACE = BigInteger.ONE.shiftLeft(128);

  private final Map<String, Stream> streams = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
  private final Map<String, String> payloads = new ConcurrentHashMap<>();

  public static void main(String[] args) throws Exception {
    // Without it the JDK's server sends headers and body in two segments, and Nagle's algorithm against the client's
    // delayed ACK adds about 40 ms to every answer.
    System.setProperty("sun.net.httpserver.nodelay", "true");
    MemoryKinesis endpoint = new MemoryKinesis();
    HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
    server.createContext("/", endpoint::handle);
    server.setExecutor(Executors.newFixedThreadPool(32));
    server.start();
    System.out.println("port " + server.getAddress().getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // Serve until the parent closes our standard input.
    }
    server.stop(0);
    System.exit(0);
  }

  /** One user-visible record: the payload as the client sent it (base64), its key and its arrival time. */
  private record Entry(String data, int dataBytes, String partitionKey, long arrivalMillis) {}

  private static final class Shard {
    final int index;
    final String id;
    final BigInteger low;
    final BigInteger high;
    final List<Entry> entries = new ArrayList<>();

    Shard(int index, int count) {
      this.index = index;
      this.id = String.format(Locale.ROOT, "shardId-%012d", index);
      this.low = HASH_SPACE.multiply(BigInteger.valueOf(index)).divide(BigInteger.valueOf(count));
      this.high =
          HASH_SPACE.multiply(BigInteger.valueOf(index + 1)).divide(BigInteger.valueOf(count)).subtract(BigInteger.ONE);
    }

    /** Sequence numbers: 56 digits, "49", the shard's index in 6, the record's position in 48. */
    String sequenceNumber(long position) {
      return String.format(Locale.ROOT, "49%06d%048d", index, position);
    }

    static long position(String sequenceNumber) {
      return Long.parseLong(sequenceNumber.substring(8));
    }

    synchronized long append(Entry entry) {
      entries.add(entry);
      return entries.size() - 1;
    }

    synchronized int size() {
      return entries.size();
    }

    synchronized Entry get(int position) {
      return entries.get(position);
    }
  }

  private record Stream(String name, long createdMillis, Shard[] shards) {
    String arn() {
      return "arn:aws:kinesis:us-east-1:000000000000:stream/" + name;
    }
  }

  private void handle(HttpExchange exchange) throws IOException {
    try (exchange) {
      String path = exchange.getRequestURI().getPath();
      if (path.equals("/counts")) {
        send(exchange, 200, countsJson());
        return;
      }
      if (path.equals("/reset")) {
        counts.clear();
        send(exchange, 200, "{}");
        return;
      }
      String target = String.valueOf(exchange.getRequestHeaders().getFirst("X-Amz-Target"));
      String operation = target.substring(target.indexOf('.') + 1);
      counts.computeIfAbsent(operation, k -> new LongAdder()).increment();
      Map<?, ?> body = (Map<?, ?>) new Json(exchange.getRequestBody().readAllBytes()).value();
      try {
        send(exchange, 200, answer(operation, body));
      } catch (KinesisError e) {
        send(exchange, 400, "{\"__type\":\"" + e.type + "\",\"message\":" + quoted(e.getMessage()) + "}");
      }
    }
  }

  private static final class KinesisError extends RuntimeException {
    final String type;

    KinesisError(String type, String message) {
      super(message);
      this.type = type;
    }
  }

  private String answer(String operation, Map<?, ?> body) {
    switch (operation) {
      case "CreateStream": {
        String name = (String) body.get("StreamName");
        int count = ((Number) body.get("ShardCount")).intValue();
        Shard[] shards = new Shard[count];
        for (int i = 0; i < count; i++) shards[i] = new Shard(i, count);
        if (streams.putIfAbsent(name, new Stream(name, System.currentTimeMillis(), shards)) != null) {
          throw new KinesisError("ResourceInUseException", "Stream " + name + " already exists");
        }
        return "{}";
      }
      case "DeleteStream":
        streams.remove(stream(body).name);
        return "{}";
      case "DescribeStreamSummary": {
        Stream s = stream(body);
        return "{\"StreamDescriptionSummary\":{\"StreamName\":\"" + s.name + "\",\"StreamARN\":\"" + s.arn()
            + "\",\"StreamStatus\":\"ACTIVE\",\"StreamModeDetails\":{\"StreamMode\":\"PROVISIONED\"},"
            + "\"RetentionPeriodHours\":24,\"StreamCreationTimestamp\":" + seconds(s.createdMillis)
            + ",\"EnhancedMonitoring\":[],\"EncryptionType\":\"NONE\",\"OpenShardCount\":" + s.shards.length
            + ",\"ConsumerCount\":0}}";
      }
      case "ListShards":
        return listShards(stream(body));
      case "PutRecord": {
        Stream s = stream(body);
        return put(s, body);
      }
      case "PutRecords": {
        Stream s = stream(body);
        StringBuilder out = new StringBuilder("{\"FailedRecordCount\":0,\"Records\":[");
        List<?> records = (List<?>) body.get("Records");
        for (int i = 0; i < records.size(); i++) {
          if (i > 0) out.append(',');
          out.append(put(s, (Map<?, ?>) records.get(i)));
        }
        return out.append("]}").toString();
      }
      case "GetShardIterator":
        return "{\"ShardIterator\":\"" + iterator(body) + "\"}";
      case "GetRecords":
        return getRecords(body);
      default:
        throw new KinesisError("UnknownOperationException", operation);
    }
  }

  private Stream stream(Map<?, ?> body) {
    String name = (String) body.get("StreamName");
    if (name == null && body.get("StreamARN") != null) {
      String arn = (String) body.get("StreamARN");
      name = arn.substring(arn.lastIndexOf('/') + 1);
    }
    Stream s = name == null ? null : streams.get(name);
    if (s == null) throw new KinesisError("ResourceNotFoundException", "Stream " + name + " not found");
    return s;
  }

  private static Shard shard(Stream s, String shardId) {
    for (Shard shard : s.shards) {
      if (shard.id.equals(shardId)) return shard;
    }
    throw new KinesisError("ResourceNotFoundException", "Shard " + shardId + " not found");
  }

  private String listShards(Stream s) {
    StringBuilder out = new StringBuilder("{\"Shards\":[");
    for (Shard shard : s.shards) {
      if (shard.index > 0) out.append(',');
      out.append("{\"ShardId\":\"").append(shard.id).append("\",\"HashKeyRange\":{\"StartingHashKey\":\"")
          .append(shard.low).append("\",\"EndingHashKey\":\"").append(shard.high)
          .append("\"},\"SequenceNumberRange\":{\"StartingSequenceNumber\":\"").append(shard.sequenceNumber(0))
          .append("\"}}");
    }
    return out.append("]}").toString();
  }

  private String put(Stream s, Map<?, ?> record) {
    String key = (String) record.get("PartitionKey");
    String explicit = (String) record.get("ExplicitHashKey");
    BigInteger hash = explicit != null ? new BigInteger(explicit) : new BigInteger(1, md5(key));
    Shard target = null;
    for (Shard shard : s.shards) {
      if (shard.low.compareTo(hash) <= 0 && hash.compareTo(shard.high) <= 0) target = shard;
    }
    String data = (String) record.get("Data");
    if (data.length() > 1024) data = payloads.computeIfAbsent(data, d -> d);
    int padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
    long position = target.append(new Entry(data, data.length() / 4 * 3 - padding, key, System.currentTimeMillis()));
    return "{\"SequenceNumber\":\"" + target.sequenceNumber(position) + "\",\"ShardId\":\"" + target.id + "\"}";
  }

  /** Iterators are "stream/shard index/position": the next record to return. */
  private String iterator(Map<?, ?> body) {
    Stream s = stream(body);
    Shard shard = shard(s, (String) body.get("ShardId"));
    String type = (String) body.get("ShardIteratorType");
    long position;
    switch (type) {
      case "TRIM_HORIZON":
        position = 0;
        break;
      case "LATEST":
        position = shard.size();
        break;
      case "AT_SEQUENCE_NUMBER":
        position = Shard.position((String) body.get("StartingSequenceNumber"));
        break;
      case "AFTER_SEQUENCE_NUMBER":
        position = Shard.position((String) body.get("StartingSequenceNumber")) + 1;
        break;
      case "AT_TIMESTAMP": {
        long at = (long) (((Number) body.get("Timestamp")).doubleValue() * 1000);
        int p = 0;
        int size = shard.size();
        while (p < size && shard.get(p).arrivalMillis < at) p++;
        position = p;
        break;
      }
      default:
        throw new KinesisError("InvalidArgumentException", "ShardIteratorType " + type);
    }
    return s.name + "/" + shard.index + "/" + position;
  }

  private String getRecords(Map<?, ?> body) {
    String iterator = (String) body.get("ShardIterator");
    String[] parts = iterator.split("/");
    Stream s = streams.get(parts[0]);
    if (s == null) throw new KinesisError("ResourceNotFoundException", "Stream " + parts[0] + " not found");
    Shard shard = s.shards[Integer.parseInt(parts[1])];
    int position = Integer.parseInt(parts[2]);
    Number limit = (Number) body.get("Limit");
    int most = Math.min(MAX_RECORDS, limit == null ? MAX_RECORDS : limit.intValue());
    int size = shard.size();
    StringBuilder out = new StringBuilder(1 << 16).append("{\"Records\":[");
    long bytes = 0;
    int next = position;
    while (next < size && next - position < most) {
      Entry e = shard.get(next);
      if (next > position && bytes + e.dataBytes > MAX_BYTES) break;
      bytes += e.dataBytes;
      if (next > position) out.append(',');
      out.append("{\"SequenceNumber\":\"").append(shard.sequenceNumber(next))
          .append("\",\"ApproximateArrivalTimestamp\":").append(seconds(e.arrivalMillis))
          .append(",\"Data\":\"").append(e.data).append("\",\"PartitionKey\":").append(quoted(e.partitionKey))
          .append('}');
      next++;
    }
    long behind = next < size ? Math.max(1, System.currentTimeMillis() - shard.get(next).arrivalMillis) : 0;
    return out.append("],\"NextShardIterator\":\"").append(s.name).append('/').append(shard.index).append('/')
        .append(next).append("\",\"MillisBehindLatest\":").append(behind).append('}').toString();
  }

  private String countsJson() {
    StringBuilder out = new StringBuilder("{");
    for (Map.Entry<String, LongAdder> e : new LinkedHashMap<>(counts).entrySet()) {
      if (out.length() > 1) out.append(',');
      out.append(quoted(e.getKey())).append(':').append(e.getValue().sum());
    }
    return out.append('}').toString();
  }

  private static String seconds(long millis) {
    return String.format(Locale.ROOT, "%d.%03d", millis / 1000, millis % 1000);
  }

  private static byte[] md5(String key) {
    try {
      return MessageDigest.getInstance("MD5").digest(key.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static String quoted(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') out.append('\\').append(c);
      else if (c < 0x20) out.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
      else out.append(c);
    }
    return out.append('"').toString();
  }

  private static void send(HttpExchange exchange, int status, String json) throws IOException {
    byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
    exchange.getResponseHeaders().set("Content-Type", "application/x-amz-json-1.1");
    exchange.getResponseHeaders().set("x-amzn-RequestId", "memory");
    exchange.sendResponseHeaders(status, bytes.length);
    try (OutputStream out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }

  /** A JSON reader for the request bodies: objects, arrays, strings (with escapes), numbers, true, false, null. */
  private static final class Json {
    private final String text;
    private int at;

    Json(byte[] body) {
      this.text = new String(body, StandardCharsets.UTF_8);
    }

    Object value() {
      skipSpace();
      if (at >= text.length()) return new HashMap<>();
      char c = text.charAt(at);
      if (c == '{') {
        Map<String, Object> map = new HashMap<>();
        at++;
        skipSpace();
        if (text.charAt(at) == '}') {
          at++;
          return map;
        }
        while (true) {
          skipSpace();
          String key = string();
          skipSpace();
          at++; // ':'
          map.put(key, value());
          skipSpace();
          if (text.charAt(at++) == '}') return map;
        }
      }
      if (c == '[') {
        List<Object> list = new ArrayList<>();
        at++;
        skipSpace();
        if (text.charAt(at) == ']') {
          at++;
          return list;
        }
        while (true) {
          list.add(value());
          skipSpace();
          if (text.charAt(at++) == ']') return list;
        }
      }
      if (c == '"') return string();
      if (text.startsWith("true", at)) {
        at += 4;
        return Boolean.TRUE;
      }
      if (text.startsWith("false", at)) {
        at += 5;
        return Boolean.FALSE;
      }
      if (text.startsWith("null", at)) {
        at += 4;
        return null;
      }
      int start = at;
      while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) at++;
      return Double.parseDouble(text.substring(start, at));
    }

    private String string() {
      at++; // '"'
      int start = at;
      while (text.charAt(at) != '"' && text.charAt(at) != '\\') at++;
      if (text.charAt(at) == '"') return text.substring(start, at++);
      StringBuilder out = new StringBuilder(text.substring(start, at));
      while (text.charAt(at) != '"') {
        char c = text.charAt(at++);
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char e = text.charAt(at++);
        switch (e) {
          case 'n': out.append('\n'); break;
          case 't': out.append('\t'); break;
          case 'r': out.append('\r'); break;
          case 'b': out.append('\b'); break;
          case 'f': out.append('\f'); break;
          case 'u':
            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
            at += 4;
            break;
          default: out.append(e);
        }
      }
      at++;
      return out.toString();
    }

    private void skipSpace() {
      while (at < text.length() && Character.isWhitespace(text.charAt(at))) at++;
    }
  }
}
