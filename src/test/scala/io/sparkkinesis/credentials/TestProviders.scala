package io.sparkkinesis.credentials

/** Custom providers for [[AwsCredentialsSuite]], loaded by name as users' classes are. */
class ParamProvider(param: String) extends KinesisCredentialsProvider {
  def resolve(): KinesisCredentials = KinesisCredentials.of(s"AKIACUSTOM-$param", "custom-secret")
}

class NoArgProvider extends KinesisCredentialsProvider {

  def resolve(): KinesisCredentials =
    KinesisCredentials.temporary(
      "ASIANOARG",
      "noarg-secret",
      "noarg-token",
      java.time.Instant.now().plusSeconds(600)
    )
}

class NotAProvider

class IntCtorProvider(n: Int) extends KinesisCredentialsProvider {
  def resolve(): KinesisCredentials = KinesisCredentials.of(s"AKIA$n", "s")
}

class FailingCtorProvider(param: String) extends KinesisCredentialsProvider {
  throw new IllegalStateException(s"cannot use $param")
  def resolve(): KinesisCredentials = KinesisCredentials.of("x", "y")
}
