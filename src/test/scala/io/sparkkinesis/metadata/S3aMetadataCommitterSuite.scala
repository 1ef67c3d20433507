package io.sparkkinesis.metadata

import java.net.URI
import java.util.UUID

import io.sparkkinesis.config.RetryPolicy
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import io.sparkkinesis.testutil.Ministack
import org.apache.hadoop.conf.Configuration
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.s3.S3Client
import software.amazon.awssdk.services.s3.model.CreateBucketRequest

/**
 * The committer contract for the Hadoop path on S3A, against ministack's S3. It needs Hadoop 3.4.2 or newer
 * (conditional writes): the build tells each line's suite whether its Spark's Hadoop has them
 * (`sparkkinesis.test.s3aConditionalCreate`); where it has not, the suite checks that the committer refuses S3A
 * with a message saying what to use instead.
 */
class S3aMetadataCommitterSuite extends MetadataCommitterContractSuite {
  // A def: the contract suite registers its tests before this class's fields are set.
  private def expectSupported = sys.props.get("sparkkinesis.test.s3aConditionalCreate").map(_.toBoolean)

  override protected def runContract: Boolean = expectSupported.getOrElse(true)

  test("S3A is refused exactly where Hadoop has no conditional writes, naming the option and what to use") {
    assert(expectSupported.nonEmpty, "the build sets sparkkinesis.test.s3aConditionalCreate for each line")
    assert(S3aConditionalCreate.supported == expectSupported.get)
    if (!S3aConditionalCreate.supported) {
      val e = intercept[IllegalArgumentException](
        new HadoopMetadataCommitter("s3a://bucket/meta", new Configuration(), RetryPolicy(0, 1, 1))
      )
      assertCondition(e, "KINESIS_UNSUPPORTED_OPTION")
      Seq("kinesis.metadataPath", "s3a://bucket/meta", "3.4.2", "DYNAMODB").foreach(w =>
        assert(e.getMessage.contains(w))
      )
      assert(
        intercept[IllegalArgumentException](
          HadoopMetadataStore("s3a://b/m", null, RetryPolicy(0, 1, 1)).prepare()
        ).getMessage
          .contains("conditional writes")
      )
    }
  }

  private val bucket = s"meta-${UUID.randomUUID().toString.take(8)}"

  private lazy val conf = {
    val s3 = S3Client
      .builder()
      .region(Region.US_EAST_1)
      .endpointOverride(URI.create(Ministack.endpoint))
      .forcePathStyle(true)
      .credentialsProvider(
        StaticCredentialsProvider.create(AwsBasicCredentials.create("test-access-key", "test-secret-key"))
      )
      .build()
    try s3.createBucket(CreateBucketRequest.builder().bucket(bucket).build())
    finally s3.close()
    val c = new Configuration()
    c.set("fs.s3a.endpoint", Ministack.endpoint)
    c.set("fs.s3a.endpoint.region", "us-east-1")
    c.set("fs.s3a.path.style.access", "true")
    c.set("fs.s3a.connection.ssl.enabled", "false")
    c.set("fs.s3a.access.key", "test-access-key")
    c.set("fs.s3a.secret.key", "test-secret-key")
    c.set("fs.s3a.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider")
    c
  }

  protected def newNamespace(): String = s"s3a://$bucket/${UUID.randomUUID()}"

  protected def committer(namespace: String): MetadataCommitter =
    new HadoopMetadataCommitter(namespace, conf, RetryPolicy(0, 1, 1))
  override protected def raceRounds: Int = 10
}
