package io.sparkkinesis.credentials

import java.time.Duration
import java.util.UUID

import io.sparkkinesis.config.{AssumeRole, CredentialsConfig, DefaultChain}
import io.sparkkinesis.testutil.ErrorChecks.assertCondition
import org.scalatest.concurrent.Eventually._
import org.scalatest.funsuite.AnyFunSuite
import org.scalatest.time.{Millis, Seconds, Span}
import software.amazon.awssdk.auth.credentials.AwsSessionCredentials

/**
 * Precedence of credential sources, the custom provider contract, and role assumption against [[FakeSts]]. The test
 * JVM's default chain holds the dummy keys `test-access-key` / `test-secret-key` (set by the Maven test runner).
 */
class AwsCredentialsSuite extends AnyFunSuite {
  private val role = "arn:aws:iam::111122223333:role/reader"
  private val keys = CredentialsConfig(accessKeyId = Some("AKIASTATIC"), secretKey = Some("static-secret"))

  /** A configuration no other test uses, so the per-JVM cache hands out a fresh provider. */
  private def unique(c: CredentialsConfig): CredentialsConfig =
    c.copy(stsSessionName = c.stsRoleArn.map(_ => s"s-${UUID.randomUUID().toString.take(8)}"))

  private def resolve(c: CredentialsConfig) = AwsCredentials.acquire(c).value.resolveCredentials()

  private def withSts[T](f: FakeSts => T): T = {
    val sts = new FakeSts()
    try f(sts)
    finally sts.close()
  }

  private def roleVia(sts: FakeSts, base: CredentialsConfig = CredentialsConfig()) =
    unique(
      base.copy(stsRoleArn = Some(role), stsEndpointUrl = Some(sts.endpoint), stsRegion = Some("us-east-1"))
    )

  test("precedence: nothing set is the default chain") {
    assert(CredentialsConfig().source == DefaultChain)
    assert(resolve(CredentialsConfig()).accessKeyId() == "test-access-key")
  }

  test("precedence: static keys beat the default chain; a session token makes session credentials") {
    assert(resolve(keys).accessKeyId() == "AKIASTATIC")
    val withToken = resolve(keys.copy(sessionToken = Some("tkn-9f3")))
    assert(withToken.isInstanceOf[AwsSessionCredentials])
    assert(withToken.asInstanceOf[AwsSessionCredentials].sessionToken() == "tkn-9f3")
  }

  test("precedence: a role beats static keys, which become the base credentials that assume it") {
    withSts { sts =>
      val c = roleVia(sts, keys.copy(stsExternalId = Some("ext-42")))
      assert(c.source.isInstanceOf[AssumeRole])
      val creds = resolve(c)
      assert(creds.accessKeyId().startsWith("ASIAROLE"))
      val request = sts.requests.last
      assert(request.signedBy == "AKIASTATIC")
      assert(request.params("Action") == "AssumeRole" && request.params("RoleArn") == role)
      assert(request.params("RoleSessionName") == c.stsSessionName.get)
      assert(request.params("ExternalId") == "ext-42", "the external id was not sent")
    }
  }

  test("a role without static keys is assumed with the default chain; no external id unless configured") {
    withSts { sts =>
      assert(resolve(roleVia(sts)).accessKeyId().startsWith("ASIAROLE"))
      assert(sts.requests.last.signedBy == "test-access-key")
      assert(!sts.requests.last.params.contains("ExternalId"))
      assert(sts.requests.last.params("RoleSessionName").startsWith("s-"))
    }
    assert(
      CredentialsConfig(stsRoleArn = Some(role)).source
        .asInstanceOf[AssumeRole]
        .sessionName == "spark-kinesis"
    )
  }

  test("precedence: a custom class beats a role and static keys, which are ignored (and named, not shown)") {
    val c = keys.copy(
      stsRoleArn = Some(role),
      stsEndpointUrl = Some("http://127.0.0.1:9"),
      providerClass = Some(classOf[ParamProvider].getName),
      providerParam = Some("p1")
    )
    assert(resolve(c).accessKeyId() == "AKIACUSTOM-p1")
    assert(
      c.ignoredOptions.toSet == Set(
        "kinesis.stsRoleArn",
        "kinesis.stsEndpointUrl",
        "kinesis.awsAccessKeyId",
        "kinesis.awsSecretKey"
      )
    )
  }

  test("an assumed role's session is created once per JVM and configuration, not per client or task") {
    withSts { sts =>
      val c = roleVia(sts)
      (1 to 20).foreach(_ => resolve(c))
      (1 to 5).foreach(_ => resolve(c.copy()))
      assert(sts.requests.size == 1)
      assert(AwsCredentials.acquire(c).value eq AwsCredentials.acquire(c.copy()).value)
    }
  }

  test("a session close to expiry is refreshed in the background, without blocking callers") {
    // Valid for 2 minutes: inside the 5-minute prefetch window and outside the 1-minute stale window.
    val sts = new FakeSts(Duration.ofMinutes(2))
    try {
      val c = roleVia(sts)
      val first = resolve(c).accessKeyId()
      assert(first == "ASIAROLE1")
      // STS holds every refresh until the latch opens: a caller that waited for one would not return before that.
      val held = new java.util.concurrent.CountDownLatch(1)
      sts.holdRefreshes = Some(held)
      try {
        eventually(timeout(Span(60, Seconds)), interval(Span(100, Millis))) {
          assert(
            resolve(c).accessKeyId() == "ASIAROLE1",
            "a caller got credentials the held refresh had not sent"
          )
          assert(sts.requests.size >= 2, "the session was never refreshed")
        }
        assert(resolve(c).accessKeyId() == "ASIAROLE1", "a caller waited for the refresh in flight")
      } finally held.countDown()
      eventually(timeout(Span(60, Seconds)), interval(Span(100, Millis))) {
        assert(resolve(c).accessKeyId() != "ASIAROLE1", "the refreshed session was never used")
      }
    } finally sts.close()
  }

  test("custom provider: no-argument constructor, temporary credentials with expiry") {
    val creds = resolve(CredentialsConfig(providerClass = Some(classOf[NoArgProvider].getName)))
    assert(creds.accessKeyId() == "ASIANOARG")
    assert(creds.asInstanceOf[AwsSessionCredentials].expirationTime().isPresent)
  }

  test(
    "custom provider: clear errors for a missing class, a wrong type, a wrong constructor, a failing one"
  ) {
    def failure(cls: String, param: Option[String] = None) =
      assertCondition(
        intercept[IllegalArgumentException](
          resolve(CredentialsConfig(providerClass = Some(cls), providerParam = param))
        ),
        "KINESIS_INVALID_OPTION"
      ).getMessage
    assert(failure("com.example.Nope").contains("'com.example.Nope' was not found"))
    assert(failure(classOf[NotAProvider].getName).contains("does not implement io.sparkkinesis.credentials"))
    assert(failure(classOf[IntCtorProvider].getName).contains("needs a public constructor taking one String"))
    assert(
      failure(classOf[NoArgProvider].getName, Some("x")).contains("has no public constructor taking a String")
    )
    val m = failure(classOf[FailingCtorProvider].getName, Some("hunter2"))
    assert(m.contains("failed with java.lang.IllegalStateException") && !m.contains("hunter2"), m)
  }

  test("KinesisCredentials with an empty part fail with a condition that names the provider's option") {
    def failure(make: => KinesisCredentials) =
      assertCondition(intercept[IllegalArgumentException](make), "KINESIS_INVALID_OPTION").getMessage
    assert(failure(KinesisCredentials.of("", "s")).contains("kinesis.credentialProviderClass"))
    assert(failure(KinesisCredentials.of("AKIA", null)).contains("no secret access key"))
    assert(failure(KinesisCredentials.temporary("AKIA", "s", "", null)).contains("no session token"))
  }

  test("no secret in any toString: config, sources, providers, credentials") {
    val secrets = Seq("AKIASTATIC", "static-secret", "tkn-9f3", "ext-42", "p-secret")
    val configs = Seq(
      keys.copy(sessionToken = Some("tkn-9f3")),
      keys.copy(
        stsRoleArn = Some(role),
        stsExternalId = Some("ext-42"),
        sessionToken = Some("tkn-9f3"),
        stsEndpointUrl = Some("http://127.0.0.1:9")
      ),
      CredentialsConfig(
        providerClass = Some(classOf[ParamProvider].getName),
        providerParam = Some("p-secret")
      )
    )
    val texts =
      configs.flatMap(c => Seq(c.toString, c.source.toString, AwsCredentials.acquire(c).value.toString)) ++
        Seq(KinesisCredentials.temporary("AKIASTATIC", "static-secret", "tkn-9f3", null).toString)
    for (t <- texts; s <- secrets) assert(!t.contains(s), s"'$s' in $t")
    assert(configs(1).toString.contains(role))
  }

  test("secret hygiene: every secret option key matches the redaction regex; credential loggers are capped") {
    val regex = SecretHygiene.SecretOptionsRegex.r
    val secretKeys = io.sparkkinesis.config.KinesisOptions.all.filter(_.secret).map(_.fullKey)
    assert(secretKeys.size == 7) // the credentials' five and the two proxy passwords
    secretKeys.foreach(k => assert(regex.findFirstIn(k.toUpperCase).isDefined, k))
    assert(regex.findFirstIn("kinesis.streamName").isEmpty && regex.findFirstIn("kinesis.stsRoleArn").isEmpty)
    AwsCredentials.acquire(CredentialsConfig()).value
    SecretHygiene.credentialLoggers.foreach { name =>
      val level = org.apache.logging.log4j.LogManager.getLogger(name).getLevel
      // Capped at INFO: never DEBUG or TRACE, whatever configuration (a Spark session's default one) ran before.
      assert(level.isMoreSpecificThan(org.apache.logging.log4j.Level.INFO), s"$name is at $level")
    }
    assert(SecretHygiene.credentialLoggers.exists(_.endsWith("http.wire")))
  }
}
