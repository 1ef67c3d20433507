package io.sparkkinesis.sink

import java.util.UUID

import io.sparkkinesis.config.SinkConfig
import io.sparkkinesis.credentials.{FakeSts, NoArgProvider, ParamProvider}
import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.{AwsCredentials, AwsSessionCredentials}

/**
 * The sink's producer signs with the connector's one credentials provider: what the KPL's configuration holds
 * resolves to the credentials of the source the options choose. The test JVM's default chain holds the dummy keys
 * `test-access-key` / `test-secret-key` (set by the Maven test runner).
 */
class SinkCredentialsSuite extends AnyFunSuite {

  private val base = Map(
    "kinesis.streamName" -> "enriched",
    "kinesis.region" -> "eu-west-1",
    "kinesis.endpointUrl" -> "https://localhost:4567"
  )

  /** What the KPL would be handed for these options, resolved. */
  private def resolved(options: (String, String)*): AwsCredentials = {
    val config = SinkConfig.parse(base ++ options, () => None)
    val kpl = KplProducer.configuration(
      config.producer,
      io.sparkkinesis.credentials.AwsCredentials.acquire(config.client.credentials).value
    )
    kpl.getCredentialsProvider.resolveCredentials()
  }

  private def session(c: AwsCredentials): AwsSessionCredentials = {
    assert(c.isInstanceOf[AwsSessionCredentials], s"expected session credentials, got ${c.getClass.getName}")
    c.asInstanceOf[AwsSessionCredentials]
  }

  test("no credential options: the default chain") {
    assert(resolved().accessKeyId == "test-access-key")
  }

  test("static keys with a session token") {
    val c = session(
      resolved(
        "kinesis.awsAccessKeyId" -> "ASIASINK",
        "kinesis.awsSecretKey" -> "sink-secret",
        "kinesis.sessionToken" -> "sink-token"
      )
    )
    assert(
      c.accessKeyId == "ASIASINK" && c.secretAccessKey == "sink-secret" && c.sessionToken == "sink-token"
    )
  }

  test("static keys without a token") {
    val c = resolved("kinesis.awsAccessKeyId" -> "AKIASINK", "kinesis.awsSecretKey" -> "sink-secret")
    assert(!c.isInstanceOf[AwsSessionCredentials])
    assert(c.accessKeyId == "AKIASINK" && c.secretAccessKey == "sink-secret")
  }

  test("a custom provider class with its parameter, beating static keys") {
    val c = resolved(
      "kinesis.credentialProviderClass" -> classOf[ParamProvider].getName,
      "kinesis.credentialProviderParam" -> "sink7",
      "kinesis.awsAccessKeyId" -> "AKIAIGNORED",
      "kinesis.awsSecretKey" -> "ignored-secret"
    )
    assert(c.accessKeyId == "AKIACUSTOM-sink7" && c.secretAccessKey == "custom-secret")
  }

  test("a custom provider class with temporary credentials") {
    val c = session(resolved("kinesis.credentialProviderClass" -> classOf[NoArgProvider].getName))
    assert(c.accessKeyId == "ASIANOARG" && c.sessionToken == "noarg-token")
  }

  test("a role, assumed with the static keys") {
    val sts = new FakeSts()
    try {
      val sessionName = s"sink-${UUID.randomUUID().toString.take(8)}"
      val c = session(
        resolved(
          "kinesis.stsRoleArn" -> "arn:aws:iam::111122223333:role/writer",
          "kinesis.stsSessionName" -> sessionName,
          "kinesis.stsEndpointUrl" -> sts.endpoint,
          "kinesis.awsAccessKeyId" -> "AKIABASE",
          "kinesis.awsSecretKey" -> "base-secret"
        )
      )
      assert(c.accessKeyId.startsWith("ASIAROLE") && c.sessionToken.startsWith("role-token-"))
      val request = sts.requests.last
      assert(request.signedBy == "AKIABASE")
      assert(request.params("RoleArn") == "arn:aws:iam::111122223333:role/writer")
      assert(request.params("RoleSessionName") == sessionName)
    } finally sts.close()
  }
}
