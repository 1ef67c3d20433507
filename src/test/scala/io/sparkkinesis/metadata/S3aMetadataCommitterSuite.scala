package io.sparkkinesis.metadata

import java.net.URI
import java.util.UUID

import io.sparkkinesis.config.RetryPolicy
import io.sparkkinesis.testutil.Ministack
import org.apache.hadoop.conf.Configuration
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, StaticCredentialsProvider}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.s3.S3Client
import software.amazon.awssdk.services.s3.model.CreateBucketRequest

/** The committer contract for the Hadoop path on S3A, against ministack's S3. */
class S3aMetadataCommitterSuite extends MetadataCommitterContractSuite {
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
