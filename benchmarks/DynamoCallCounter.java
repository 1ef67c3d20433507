// The metadata benchmark's counter of DynamoDB calls, registered as a global interceptor of the AWS SDK inside the
// connector's shaded jar (so it implements the relocated interface). It counts every DynamoDB call the JVM's clients
// make (one per SDK call: the SDK's own retries are not separate calls) by operation, and separately those made by
// tasks (Spark's task threads) and those made from inside KinesisMicroBatchStream.commit (the driver's thread, on the
// batch's critical path). In local mode driver and executors share the JVM, so the benchmark reads the counts over
// py4j with drain().
import io.sparkkinesis.shaded.software.amazon.awssdk.core.interceptor.Context;
import io.sparkkinesis.shaded.software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import io.sparkkinesis.shaded.software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import io.sparkkinesis.shaded.software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;
import java.util.Map;
import java.util.TreeMap;

public final class DynamoCallCounter implements ExecutionInterceptor {
  private static final Map<String, Long> COUNTS = new TreeMap<>();

  @Override
  public void beforeExecution(Context.BeforeExecution context, ExecutionAttributes attributes) {
    if (!"DynamoDb".equalsIgnoreCase(attributes.getAttribute(SdkExecutionAttribute.SERVICE_NAME))) return;
    String operation = attributes.getAttribute(SdkExecutionAttribute.OPERATION_NAME);
    boolean inCommit = false;
    for (StackTraceElement frame : Thread.currentThread().getStackTrace()) {
      if (frame.getClassName().equals("io.sparkkinesis.source.KinesisMicroBatchStream")
          && frame.getMethodName().equals("commit")) {
        inCommit = true;
        break;
      }
    }
    synchronized (COUNTS) {
      COUNTS.merge("all " + operation, 1L, Long::sum);
      if (inCommit) COUNTS.merge("commit " + operation, 1L, Long::sum);
      if (Thread.currentThread().getName().startsWith("Executor task launch worker")) {
        COUNTS.merge("task " + operation, 1L, Long::sum);
      }
    }
  }

  /** The counts since the last call, as "all PutItem=64,task PutItem=64,commit Query=1,...", and starts counting from zero. */
  public static String drain() {
    synchronized (COUNTS) {
      StringBuilder out = new StringBuilder();
      for (Map.Entry<String, Long> e : COUNTS.entrySet()) {
        if (out.length() > 0) out.append(',');
        out.append(e.getKey()).append('=').append(e.getValue());
      }
      COUNTS.clear();
      return out.toString();
    }
  }
}
