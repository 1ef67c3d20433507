// KPL de-aggregation for the bare baselines, as the KCL does it (AggregatorUtil.deaggregate), on the KPL's own
// generated protobuf classes (Messages.AggregatedRecord, relocated inside our shaded jar): not the connector's reader.
// A Kinesis record is an aggregate when it starts with the KPL's 4 magic bytes, is long enough, and ends with the MD5
// of the protobuf between them; then each sub-record whose hash key (its explicit hash key, or the MD5 of its partition
// key as an unsigned 128-bit integer) lies in the shard's hash-key range is a user record. Any other record is one
// user record itself. Compiled by read_throughput.py next to the bare loops (javac, onto their class path).
import io.sparkkinesis.shaded.com.google.protobuf.CodedInputStream;
import io.sparkkinesis.shaded.software.amazon.kinesis.producer.protobuf.Messages;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

public final class KplDeaggregator {
  private static final byte[] MAGIC = {(byte) 0xF3, (byte) 0x89, (byte) 0x9A, (byte) 0xC2};
  private static final int DIGEST_LENGTH = 16;

  private final BigInteger startingHashKey, endingHashKey;
  private final MessageDigest md5;

  /** One per reading thread (a MessageDigest is not thread-safe), for a shard of this hash-key range. */
  public KplDeaggregator(String startingHashKey, String endingHashKey) {
    this.startingHashKey = new BigInteger(startingHashKey);
    this.endingHashKey = new BigInteger(endingHashKey);
    try {
      md5 = MessageDigest.getInstance("MD5");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Adds the user records in one Kinesis record's data to `totals`: {records, bytes of data}. */
  public void count(byte[] data, long[] totals) {
    if (data.length >= MAGIC.length + DIGEST_LENGTH && Arrays.equals(data, 0, MAGIC.length, MAGIC, 0, MAGIC.length)) {
      int end = data.length - DIGEST_LENGTH;
      md5.update(data, MAGIC.length, end - MAGIC.length);
      byte[] digest = md5.digest();
      if (Arrays.equals(digest, 0, DIGEST_LENGTH, data, end, data.length)) {
        Messages.AggregatedRecord aggregate;
        try {
          aggregate = Messages.AggregatedRecord.parseFrom(
              CodedInputStream.newInstance(data, MAGIC.length, end - MAGIC.length));
        } catch (Exception notAnAggregate) {
          aggregate = null;
        }
        if (aggregate != null) {
          for (Messages.Record r : aggregate.getRecordsList()) {
            BigInteger hashKey = r.hasExplicitHashKeyIndex()
                ? new BigInteger(aggregate.getExplicitHashKeyTable((int) r.getExplicitHashKeyIndex()))
                : new BigInteger(1, md5.digest(aggregate.getPartitionKeyTable((int) r.getPartitionKeyIndex())
                    .getBytes(StandardCharsets.UTF_8)));
            if (hashKey.compareTo(startingHashKey) >= 0 && hashKey.compareTo(endingHashKey) <= 0) {
              totals[0]++;
              totals[1] += r.getData().size();
            }
          }
          return;
        }
      }
    }
    totals[0]++;
    totals[1] += data.length;
  }
}
