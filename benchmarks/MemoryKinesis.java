import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http2.DefaultHttp2DataFrame;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.DefaultHttp2HeadersFrame;
import io.netty.handler.codec.http2.Http2CodecUtil;
import io.netty.handler.codec.http2.Http2DataFrame;
import io.netty.handler.codec.http2.Http2FrameCodecBuilder;
import io.netty.handler.codec.http2.Http2Headers;
import io.netty.handler.codec.http2.Http2HeadersFrame;
import io.netty.handler.codec.http2.Http2MultiplexHandler;
import io.netty.handler.codec.http2.Http2Settings;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.io.ByteArrayOutputStream;
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
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.zip.CRC32;

/**
 * A loopback Kinesis endpoint that keeps its streams in memory and answers at once, so that a read benchmark at
 * millions of records measures the readers, not an emulator: ministack answers each GetRecords with a Python loop
 * over its records and bounds any reader at about 100,000 records/s on this kind of machine.
 *
 * It speaks the JSON protocol (clients run with -Daws.cborEnabled=false) for CreateStream, DeleteStream,
 * DescribeStreamSummary, ListShards, PutRecord, PutRecords, GetShardIterator (TRIM_HORIZON, LATEST,
 * AT_/AFTER_SEQUENCE_NUMBER, AT_TIMESTAMP) and GetRecords (at most 10,000 records and 10 MiB of data per call, as the
 * service; no read or write throttling), and enhanced fan-out: RegisterStreamConsumer (ACTIVE at once),
 * DescribeStreamConsumer, ListStreamConsumers, DeregisterStreamConsumer and SubscribeToShard (HTTP/2 only, as the
 * service). Every other operation gets HTTP 400, UnknownOperationException. Shards split the hash key space evenly,
 * are all open, and never reshard (no ChildShards). A put is routed by the MD5 of its partition key, or by its
 * explicit hash key. Identical large payloads (the benchmark's KPL aggregates) are kept once. It checks no signature:
 * a benchmark aid, never a test double.
 *
 * One port serves HTTP/1.1 (the sync Apache client, boto3) and HTTP/2 over cleartext with prior knowledge (the SDK's
 * async Netty client over http://), told apart by the HTTP/2 connection preface, with Netty's codecs.
 *
 * A subscription answers an event stream (the AWS event-stream framing: an initial-response, then
 * SubscribeToShardEvent events of at most 10,000 records and 2 MiB of data) from its starting position as fast as the
 * client takes them: at most two events are written and not yet sent (HTTP/2 flow control holds the rest back). At
 * the tip it sends one event with no records and MillisBehindLatest 0, then the next records as soon as they are put,
 * and an empty event after 5 s without one. The server ends a subscription after 5 minutes, or when its consumer is
 * deregistered. A continuation sequence number before a shard's first record starts with "48" instead of "49".
 *
 * GET /counts answers the requests per operation since the start or the last POST /reset, as JSON.
 *
 * Run with the JDK's source launcher, with Netty 4.1 (the jars the AWS SDK's netty-nio-client uses) on the class
 * path: java -cp netty-{common,buffer,transport,resolver,codec,codec-http,codec-http2,handler}.jar
 * benchmarks/MemoryKinesis.java (read_throughput.py's memory_kinesis_class_path finds them in ~/.m2). It prints "port
 * N" once it listens on 127.0.0.1, and serves until its standard input closes.
 */
public final class MemoryKinesis {
  private static final int MAX_RECORDS = 10_000;
  private static final long MAX_BYTES = 10L << 20;
  private static final long EVENT_MAX_BYTES = 2L << 20;
  private static final int EVENTS_IN_FLIGHT = 2;
  private static final long SUBSCRIPTION_MILLIS = TimeUnit.MINUTES.toMillis(5);
  private static final long HEARTBEAT_MILLIS = 5_000;
  private static final BigInteger HASH_SPACE = BigInteger.ONE.shiftLeft(128);

  private final Map<String, Stream> streams = new ConcurrentHashMap<>();
  private final Map<String, Consumer> consumers = new ConcurrentHashMap<>();
  private final Map<String, LongAdder> counts = new ConcurrentHashMap<>();
  private final Map<String, String> payloads = new ConcurrentHashMap<>();
  /** Builds answers and events, off the event loops: a GetRecords answer of 10 MiB takes milliseconds. */
  private final ExecutorService workers = Executors.newFixedThreadPool(8, r -> {
    Thread t = new Thread(r, "memory-kinesis-worker");
    t.setDaemon(true);
    return t;
  });

  public static void main(String[] args) throws Exception {
    MemoryKinesis endpoint = new MemoryKinesis();
    EventLoopGroup loops = new NioEventLoopGroup(2);
    Channel server = new ServerBootstrap()
        .group(loops)
        .channel(NioServerSocketChannel.class)
        .option(ChannelOption.SO_BACKLOG, 1024)
        .childOption(ChannelOption.TCP_NODELAY, true)
        .childHandler(new ChannelInitializer<SocketChannel>() {
          @Override
          protected void initChannel(SocketChannel ch) {
            ch.pipeline().addLast(endpoint.new ProtocolDetector(), new ClosingOnError());
          }
        })
        .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
        .sync()
        .channel();
    System.out.println("port " + ((InetSocketAddress) server.localAddress()).getPort());
    System.out.flush();
    while (System.in.read() >= 0) {
      // Serve until the parent closes our standard input.
    }
    server.close();
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
    private final String prefix;
    private static final char[] ZEROS = "0".repeat(48).toCharArray();

    Shard(int index, int count) {
      this.index = index;
      this.id = String.format(Locale.ROOT, "shardId-%012d", index);
      this.prefix = String.format(Locale.ROOT, "49%06d", index);
      this.low = HASH_SPACE.multiply(BigInteger.valueOf(index)).divide(BigInteger.valueOf(count));
      this.high =
          HASH_SPACE.multiply(BigInteger.valueOf(index + 1)).divide(BigInteger.valueOf(count)).subtract(BigInteger.ONE);
    }

    /**
     * Sequence numbers: 56 digits, "49", the shard's index in 6, the record's position in 48; position -1 (before the
     * first record, a continuation only) is "48", the index, and 48 zeros.
     */
    String sequenceNumber(long position) {
      if (position < 0) return String.format(Locale.ROOT, "48%06d%048d", index, 0);
      String digits = Long.toString(position);
      return new StringBuilder(56).append(prefix).append(ZEROS, 0, 48 - digits.length()).append(digits).toString();
    }

    static long position(String sequenceNumber) {
      if (sequenceNumber.startsWith("48")) return -1;
      return Long.parseLong(sequenceNumber.substring(8));
    }

    /** Subscriptions at the tip, told of the next append. */
    private final List<Runnable> waiters = new ArrayList<>();

    synchronized long append(Entry entry) {
      entries.add(entry);
      for (Runnable waiter : waiters) waiter.run();
      waiters.clear();
      return entries.size() - 1;
    }

    /** Runs {@code waiter} at the next append, unless there is a record at {@code position} already: false then. */
    synchronized boolean awaitAppend(long position, Runnable waiter) {
      if (position < entries.size()) return false;
      waiters.add(waiter);
      return true;
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
      return arn(name);
    }

    static String arn(String name) {
      return "arn:aws:kinesis:us-east-1:000000000000:stream/" + name;
    }
  }

  /** A status and a JSON body. */
  private record Reply(int status, String json) {}

  /** The answer to a unary request: /counts, /reset, or a Kinesis operation named by its X-Amz-Target. */
  private Reply respond(String path, String target, byte[] body) {
    if (path.equals("/counts")) return new Reply(200, countsJson());
    if (path.equals("/reset")) {
      counts.clear();
      return new Reply(200, "{}");
    }
    String operation = operation(target);
    try {
      return new Reply(200, answer(operation, (Map<?, ?>) new Json(body).value()));
    } catch (KinesisError e) {
      return new Reply(400, e.json());
    }
  }

  /** The operation named by an X-Amz-Target header ("Kinesis_20131202.GetRecords"), counted. */
  private String operation(String target) {
    String t = String.valueOf(target);
    String operation = t.substring(t.indexOf('.') + 1);
    counts.computeIfAbsent(operation, k -> new LongAdder()).increment();
    return operation;
  }

  /** Closes a connection or an HTTP/2 stream on any error that reaches it (a client reset it, say). */
  private static final class ClosingOnError extends ChannelInboundHandlerAdapter {
    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      ctx.close();
    }
  }

  /** The first bytes of a connection choose its protocol: the HTTP/2 preface, or else HTTP/1.1. */
  private final class ProtocolDetector extends ByteToMessageDecoder {
    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
      ByteBuf preface = Http2CodecUtil.connectionPrefaceBuf();
      try {
        int seen = Math.min(in.readableBytes(), preface.readableBytes());
        boolean http2 = ByteBufUtil.equals(in, in.readerIndex(), preface, 0, seen);
        if (http2 && seen < preface.readableBytes()) return; // too few bytes to tell yet
        if (http2) {
          ctx.pipeline().addAfter(ctx.name(), "http2", Http2FrameCodecBuilder.forServer()
              .initialSettings(Http2Settings.defaultSettings().maxConcurrentStreams(10_000))
              .build());
          ctx.pipeline().addAfter("http2", "streams", new Http2MultiplexHandler(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
              ch.pipeline().addLast(new Http2StreamHandler(), new ClosingOnError());
            }
          }));
        } else {
          ctx.pipeline().addAfter(ctx.name(), "http1", new HttpServerCodec());
          ctx.pipeline().addAfter("http1", "aggregator", new HttpObjectAggregator(64 << 20));
          ctx.pipeline().addAfter("aggregator", "requests", new Http1Handler());
        }
        ctx.pipeline().remove(this); // hands the bytes read so far to the codec
      } finally {
        preface.release();
      }
    }
  }

  /** HTTP/1.1: one request at a time per connection, answered by a worker. */
  private final class Http1Handler extends SimpleChannelInboundHandler<FullHttpRequest> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest request) {
      String path = new QueryStringDecoder(request.uri()).path();
      String target = request.headers().get("X-Amz-Target");
      byte[] body = ByteBufUtil.getBytes(request.content());
      boolean keepAlive = HttpUtil.isKeepAlive(request);
      ctx.channel().config().setAutoRead(false);
      workers.execute(() -> {
        Reply reply = target != null && target.endsWith(".SubscribeToShard")
            ? new Reply(400, new KinesisError("InvalidArgumentException", "SubscribeToShard needs HTTP/2").json())
            : respond(path, target, body);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
            HttpResponseStatus.valueOf(reply.status), Unpooled.wrappedBuffer(reply.json.getBytes(StandardCharsets.UTF_8)));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/x-amz-json-1.1")
            .set("x-amzn-RequestId", "memory")
            .setInt(HttpHeaderNames.CONTENT_LENGTH, response.content().readableBytes());
        if (!keepAlive) response.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        ctx.writeAndFlush(response).addListener(keepAlive
            ? (ChannelFutureListener) f -> f.channel().config().setAutoRead(true)
            : ChannelFutureListener.CLOSE);
      });
    }
  }

  /** One HTTP/2 stream: a unary request answered by a worker, or a SubscribeToShard answered with events. */
  private final class Http2StreamHandler extends ChannelInboundHandlerAdapter {
    private Http2Headers headers;
    private final ByteArrayOutputStream body = new ByteArrayOutputStream();
    private Subscription subscription;

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
      try {
        boolean end;
        if (msg instanceof Http2HeadersFrame frame) {
          headers = frame.headers();
          end = frame.isEndStream();
        } else if (msg instanceof Http2DataFrame frame) {
          frame.content().readBytes(body, frame.content().readableBytes());
          end = frame.isEndStream();
        } else {
          return;
        }
        if (end) dispatch(ctx);
      } catch (java.io.IOException e) {
        throw new IllegalStateException(e);
      } finally {
        ReferenceCountUtil.release(msg);
      }
    }

    private void dispatch(ChannelHandlerContext ctx) {
      String path = new QueryStringDecoder(String.valueOf(headers.path())).path();
      CharSequence target = headers.get("x-amz-target");
      byte[] bytes = body.toByteArray();
      if (target != null && target.toString().endsWith(".SubscribeToShard")) {
        operation(target.toString());
        workers.execute(() -> {
          try {
            Subscription s = subscription(ctx, (Map<?, ?>) new Json(bytes).value());
            ctx.executor().execute(() -> {
              subscription = s;
              s.start();
            });
          } catch (KinesisError e) {
            reply(ctx, new Reply(400, e.json()));
          }
        });
        return;
      }
      workers.execute(() -> reply(ctx, respond(path, target == null ? null : target.toString(), bytes)));
    }

    private void reply(ChannelHandlerContext ctx, Reply reply) {
      ByteBuf content = Unpooled.wrappedBuffer(reply.json.getBytes(StandardCharsets.UTF_8));
      Http2Headers out = new DefaultHttp2Headers().status(String.valueOf(reply.status))
          .set("content-type", "application/x-amz-json-1.1")
          .set("x-amzn-requestid", "memory")
          .setInt("content-length", content.readableBytes());
      ctx.write(new DefaultHttp2HeadersFrame(out));
      ctx.writeAndFlush(new DefaultHttp2DataFrame(content, true));
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
      if (subscription != null) subscription.stop();
      ctx.fireChannelInactive();
    }
  }

  /** A registered enhanced fan-out consumer. */
  private record Consumer(String name, String arn, String streamName, long createdMillis) {
    String json(boolean withStream) {
      return "{\"ConsumerName\":" + quoted(name) + ",\"ConsumerARN\":" + quoted(arn)
          + ",\"ConsumerStatus\":\"ACTIVE\",\"ConsumerCreationTimestamp\":" + seconds(createdMillis)
          + (withStream ? ",\"StreamARN\":" + quoted(Stream.arn(streamName)) : "") + "}";
    }
  }

  /** The consumer a request names: by ConsumerARN, or by StreamARN and ConsumerName. */
  private Consumer consumer(Map<?, ?> body) {
    String arn = (String) body.get("ConsumerARN");
    if (arn != null) {
      Consumer c = consumers.get(arn);
      if (c == null) throw new KinesisError("ResourceNotFoundException", "Consumer " + arn + " not found");
      return c;
    }
    Stream s = stream(body);
    Object name = body.get("ConsumerName");
    for (Consumer c : consumers.values()) {
      if (c.streamName.equals(s.name) && c.name.equals(name)) return c;
    }
    throw new KinesisError("ResourceNotFoundException", "Consumer " + name + " of " + s.name + " not found");
  }

  /** A checked SubscribeToShard request: its consumer, stream, shard and starting position. */
  private Subscription subscription(ChannelHandlerContext ctx, Map<?, ?> body) {
    Consumer c = consumer(body);
    Stream s = streams.get(c.streamName);
    if (s == null) throw new KinesisError("ResourceNotFoundException", "Stream " + c.streamName + " not found");
    Shard shard = shard(s, (String) body.get("ShardId"));
    Map<?, ?> start = (Map<?, ?>) body.get("StartingPosition");
    if (start == null) throw new KinesisError("InvalidArgumentException", "StartingPosition is required");
    long position = position(shard, (String) start.get("Type"), (String) start.get("SequenceNumber"),
        (Number) start.get("Timestamp"));
    return new Subscription(ctx, c.arn, shard, position);
  }

  /**
   * One SubscribeToShard response on its HTTP/2 stream. Its fields are the event loop's, except that a worker builds
   * the next event (one at a time, so positions advance in order).
   */
  private final class Subscription {
    private final ChannelHandlerContext ctx;
    private final String consumerArn;
    private final Shard shard;
    private final long ends = System.currentTimeMillis() + SUBSCRIPTION_MILLIS;
    private long next;
    private int inFlight;
    private boolean building;
    private boolean stopped;
    private boolean atTip;
    private long lastEventMillis;
    private ScheduledFuture<?> timer;
    private ScheduledFuture<?> heartbeat;

    Subscription(ChannelHandlerContext ctx, String consumerArn, Shard shard, long next) {
      this.ctx = ctx;
      this.consumerArn = consumerArn;
      this.shard = shard;
      this.next = next;
    }

    void start() {
      if (!ctx.channel().isActive()) return; // the client gave up before the subscription started
      Http2Headers out = new DefaultHttp2Headers().status("200")
          .set("content-type", "application/vnd.amazon.eventstream")
          .set("x-amzn-requestid", "memory");
      ctx.write(new DefaultHttp2HeadersFrame(out));
      send(Unpooled.wrappedBuffer(message("initial-response", "{}".getBytes(StandardCharsets.UTF_8))));
      timer = ctx.executor().schedule(this::end, SUBSCRIPTION_MILLIS, TimeUnit.MILLISECONDS);
      pump();
    }

    /** The client went away: nothing more to send. */
    void stop() {
      stopped = true;
      if (timer != null) timer.cancel(false);
      if (heartbeat != null) heartbeat.cancel(false);
    }

    /** The server ends the subscription (5 minutes passed, or the consumer is gone): after the events written. */
    private void end() {
      if (stopped) return;
      stop();
      ctx.writeAndFlush(new DefaultHttp2DataFrame(true));
    }

    private void send(ByteBuf event) {
      inFlight++;
      lastEventMillis = System.currentTimeMillis();
      ctx.writeAndFlush(new DefaultHttp2DataFrame(event)).addListener(f -> {
        inFlight--;
        pump();
      });
    }

    /** At the tip: pumps again at the next append, or after 5 s for an empty event. */
    private void idle() {
      if (!shard.awaitAppend(next, () -> ctx.executor().execute(this::pump))) {
        pump();
        return;
      }
      if (heartbeat == null || heartbeat.isDone()) {
        heartbeat = ctx.executor().schedule(this::pump, HEARTBEAT_MILLIS, TimeUnit.MILLISECONDS);
      }
    }

    /** Builds the next event if fewer than EVENTS_IN_FLIGHT wait to be sent. */
    private void pump() {
      if (stopped || building || inFlight >= EVENTS_IN_FLIGHT) return;
      if (!ctx.channel().isActive()) {
        stop();
        return;
      }
      if (!consumers.containsKey(consumerArn) || System.currentTimeMillis() >= ends) {
        end();
        return;
      }
      building = true;
      long from = next;
      boolean tipSeen = atTip;
      long quietMillis = System.currentTimeMillis() - lastEventMillis;
      workers.execute(() -> {
        Event event = event(shard, from, tipSeen, quietMillis);
        ctx.executor().execute(() -> {
          building = false;
          if (stopped) return;
          if (event == null) {
            idle();
            return;
          }
          next = event.next;
          atTip = event.atTip;
          send(Unpooled.wrappedBuffer(event.bytes));
          pump();
        });
      });
    }
  }

  /** An encoded SubscribeToShardEvent message, the position after it, and whether it reached the tip. */
  private record Event(byte[] bytes, long next, boolean atTip) {}

  /**
   * The event of the records from {@code from} (at most 10,000 and 2 MiB of data); at the tip, an event with none the
   * first time ({@code tipSeen} false) or after 5 s without an event, else null.
   */
  private Event event(Shard shard, long from, boolean tipSeen, long quietMillis) {
    int size = shard.size();
    if (from >= size && tipSeen && quietMillis < HEARTBEAT_MILLIS) return null;
    StringBuilder out = new StringBuilder(1 << 16);
    int position = appendRecords(out, shard, (int) from, MAX_RECORDS, EVENT_MAX_BYTES);
    long behind = millisBehind(shard, position);
    out.append("],\"ContinuationSequenceNumber\":\"").append(shard.sequenceNumber(position - 1))
        .append("\",\"MillisBehindLatest\":").append(behind).append('}');
    byte[] payload = out.toString().getBytes(StandardCharsets.UTF_8);
    return new Event(message("SubscribeToShardEvent", payload), position, position >= shard.size());
  }

  /**
   * One event-stream message: total length, headers length, CRC32 of those 8 bytes, the headers (name length, name,
   * type 7 = string, value length, value), the payload, and the CRC32 of all before it; all integers big-endian.
   */
  private static byte[] message(String eventType, byte[] payload) {
    ByteArrayOutputStream headers = new ByteArrayOutputStream();
    header(headers, ":message-type", "event");
    header(headers, ":event-type", eventType);
    header(headers, ":content-type", "application/json");
    int total = 12 + headers.size() + payload.length + 4;
    java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(total);
    out.putInt(total).putInt(headers.size());
    CRC32 crc = new CRC32();
    crc.update(out.array(), 0, 8);
    out.putInt((int) crc.getValue());
    out.put(headers.toByteArray()).put(payload);
    crc.reset();
    crc.update(out.array(), 0, out.position());
    out.putInt((int) crc.getValue());
    return out.array();
  }

  private static void header(ByteArrayOutputStream out, String name, String value) {
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    byte[] v = value.getBytes(StandardCharsets.UTF_8);
    out.write(n.length);
    out.write(n, 0, n.length);
    out.write(7);
    out.write(v.length >> 8);
    out.write(v.length);
    out.write(v, 0, v.length);
  }

  private static final class KinesisError extends RuntimeException {
    final String type;

    KinesisError(String type, String message) {
      super(message);
      this.type = type;
    }

    String json() {
      return "{\"__type\":\"" + type + "\",\"message\":" + quoted(getMessage()) + "}";
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
      case "DeleteStream": {
        String name = stream(body).name;
        streams.remove(name);
        consumers.values().removeIf(c -> c.streamName.equals(name));
        return "{}";
      }
      case "DescribeStreamSummary": {
        Stream s = stream(body);
        return "{\"StreamDescriptionSummary\":{\"StreamName\":\"" + s.name + "\",\"StreamARN\":\"" + s.arn()
            + "\",\"StreamStatus\":\"ACTIVE\",\"StreamModeDetails\":{\"StreamMode\":\"PROVISIONED\"},"
            + "\"RetentionPeriodHours\":24,\"StreamCreationTimestamp\":" + seconds(s.createdMillis)
            + ",\"EnhancedMonitoring\":[],\"EncryptionType\":\"NONE\",\"OpenShardCount\":" + s.shards.length
            + ",\"ConsumerCount\":" + consumers.values().stream().filter(c -> c.streamName.equals(s.name)).count()
            + "}}";
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
      case "RegisterStreamConsumer": {
        Stream s = stream(body);
        String name = (String) body.get("ConsumerName");
        long now = System.currentTimeMillis();
        Consumer c = new Consumer(name, s.arn() + "/consumer/" + name + ":" + now / 1000, s.name, now);
        synchronized (consumers) {
          for (Consumer other : consumers.values()) {
            if (other.streamName.equals(s.name) && other.name.equals(name)) {
              throw new KinesisError("ResourceInUseException", "Consumer " + name + " exists");
            }
          }
          consumers.put(c.arn, c);
        }
        return "{\"Consumer\":" + c.json(false) + "}";
      }
      case "DescribeStreamConsumer":
        return "{\"ConsumerDescription\":" + consumer(body).json(true) + "}";
      case "ListStreamConsumers": {
        Stream s = stream(body);
        StringBuilder out = new StringBuilder("{\"Consumers\":[");
        for (Consumer c : consumers.values()) {
          if (!c.streamName.equals(s.name)) continue;
          if (out.charAt(out.length() - 1) != '[') out.append(',');
          out.append(c.json(false));
        }
        return out.append("]}").toString();
      }
      case "DeregisterStreamConsumer":
        consumers.remove(consumer(body).arn);
        return "{}";
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
    long position = position(shard, (String) body.get("ShardIteratorType"),
        (String) body.get("StartingSequenceNumber"), (Number) body.get("Timestamp"));
    return s.name + "/" + shard.index + "/" + position;
  }

  /** The position of the next record to read from a starting point (GetShardIterator's and SubscribeToShard's). */
  private static long position(Shard shard, String type, String sequenceNumber, Number timestamp) {
    switch (String.valueOf(type)) {
      case "TRIM_HORIZON":
        return 0;
      case "LATEST":
        return shard.size();
      case "AT_SEQUENCE_NUMBER":
        return Math.max(0, Shard.position(sequenceNumber));
      case "AFTER_SEQUENCE_NUMBER":
        return Shard.position(sequenceNumber) + 1;
      case "AT_TIMESTAMP": {
        long at = (long) (timestamp.doubleValue() * 1000);
        int p = 0;
        int size = shard.size();
        while (p < size && shard.get(p).arrivalMillis < at) p++;
        return p;
      }
      default:
        throw new KinesisError("InvalidArgumentException", "ShardIteratorType " + type);
    }
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
    StringBuilder out = new StringBuilder(1 << 16);
    int next = appendRecords(out, shard, position, most, MAX_BYTES);
    long behind = millisBehind(shard, next);
    return out.append("],\"NextShardIterator\":\"").append(s.name).append('/').append(shard.index).append('/')
        .append(next).append("\",\"MillisBehindLatest\":").append(behind).append('}').toString();
  }

  /**
   * Appends {@code {"Records":[...} } (the array left open) with the records from {@code from}: at most {@code most}
   * records and, past the first, {@code maxBytes} of data. Returns the position after the last one.
   */
  private static int appendRecords(StringBuilder out, Shard shard, int from, int most, long maxBytes) {
    out.append("{\"Records\":[");
    int size = shard.size();
    long bytes = 0;
    int next = from;
    while (next < size && next - from < most) {
      Entry e = shard.get(next);
      if (next > from && bytes + e.dataBytes > maxBytes) break;
      bytes += e.dataBytes;
      if (next > from) out.append(',');
      appendRecord(out, shard, next, e);
      next++;
    }
    return next;
  }

  /** How far the record at {@code position} is behind the tip (0 at the tip). */
  private static long millisBehind(Shard shard, int position) {
    return position < shard.size() ? Math.max(1, System.currentTimeMillis() - shard.get(position).arrivalMillis) : 0;
  }

  private static void appendRecord(StringBuilder out, Shard shard, long position, Entry e) {
    out.append("{\"SequenceNumber\":\"").append(shard.sequenceNumber(position))
        .append("\",\"ApproximateArrivalTimestamp\":").append(seconds(e.arrivalMillis))
        .append(",\"Data\":\"").append(e.data).append("\",\"PartitionKey\":").append(quoted(e.partitionKey))
        .append('}');
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
