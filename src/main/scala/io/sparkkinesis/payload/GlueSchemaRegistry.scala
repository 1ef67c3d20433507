package io.sparkkinesis.payload

import java.io.ByteArrayInputStream
import java.net.URI
import java.nio.charset.StandardCharsets.UTF_8
import java.util.UUID

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import com.fasterxml.jackson.databind.node.ObjectNode
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider
import software.amazon.awssdk.http.{HttpExecuteRequest, SdkHttpClient, SdkHttpMethod, SdkHttpRequest}
import software.amazon.awssdk.http.auth.aws.signer.{AwsV4FamilyHttpSigner, AwsV4HttpSigner}
import software.amazon.awssdk.http.auth.spi.signer.SignRequest
import software.amazon.awssdk.identity.spi.AwsCredentialsIdentity

import io.sparkkinesis.client.Backoff
import io.sparkkinesis.config.{AwsClientConfig, GsrDataFormat, HttpSettings}
import io.sparkkinesis.credentials.AwsCredentials
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.resources.{Lease, SharedResources}

/** One schema version of a Glue Schema Registry. `dataFormat` is the registry's name for it (AVRO, JSON, PROTOBUF). */
private[sparkkinesis] final case class SchemaVersion(id: UUID, definition: String, dataFormat: String)

/** The Glue Schema Registry calls the payload functions make. */
private[sparkkinesis] trait SchemaRegistry {

  /** The version with this id; None when the registry has none. */
  def byId(id: UUID): Option[SchemaVersion]

  /** The version `version` of a schema (the latest when None); None when the schema or the version does not exist. */
  def byNumber(registry: String, schema: String, version: Option[Long]): Option[SchemaVersion]

  /** The version of a schema whose text is `definition`; None when the schema holds no such version. */
  def byDefinition(registry: String, schema: String, definition: String): Option[UUID]

  /** Adds `definition` as a version of the schema, creating the schema when it does not exist; its id once usable. */
  def register(registry: String, schema: String, definition: String, format: GsrDataFormat): UUID
}

/**
 * The Glue Schema Registry API over the AWS SDK's HTTP client and SigV4 signer (the JSON 1.1 protocol of Glue). The
 * SDK's generated Glue client would add 9 MB to a jar that ships in a wheel already near PyPI's 100 MB limit, for
 * four operations. Throttling and server errors are retried with the connector's back-off and retry options.
 */
private[sparkkinesis] final class GlueSchemaRegistry(
    endpoint: AwsClientConfig,
    http: SdkHttpClient,
    credentials: AwsCredentialsProvider,
    sleep: Long => Unit = Thread.sleep
) extends SchemaRegistry {
  import GlueSchemaRegistry._

  private val uri = URI.create(endpoint.endpointUrl)
  private val backoff = Backoff(endpoint.retryBaseDelayMs, endpoint.retryMaxDelayMs)

  def byId(id: UUID): Option[SchemaVersion] =
    call("GetSchemaVersion", Json.createObjectNode().put("SchemaVersionId", id.toString)).map(version(_))

  def byNumber(registry: String, schema: String, number: Option[Long]): Option[SchemaVersion] = {
    val request = Json.createObjectNode()
    request.set[JsonNode]("SchemaId", schemaId(registry, schema))
    val which = request.putObject("SchemaVersionNumber")
    number.fold(which.put("LatestVersion", true))(which.put("VersionNumber", _))
    call("GetSchemaVersion", request).map(version(_))
  }

  def byDefinition(registry: String, schema: String, definition: String): Option[UUID] = {
    val request = Json.createObjectNode().put("SchemaDefinition", definition)
    request.set[JsonNode]("SchemaId", schemaId(registry, schema))
    call("GetSchemaByDefinition", request)
      .filter(_.path("Status").asText("AVAILABLE") == "AVAILABLE")
      .map(r => UUID.fromString(r.get("SchemaVersionId").asText()))
  }

  def register(registry: String, schema: String, definition: String, format: GsrDataFormat): UUID = {
    val request = Json.createObjectNode().put("SchemaDefinition", definition)
    request.set[JsonNode]("SchemaId", schemaId(registry, schema))
    val registered = call("RegisterSchemaVersion", request).getOrElse {
      // The schema does not exist: create it with this definition as its first version.
      val create = Json.createObjectNode().put("SchemaName", schema).put("DataFormat", format.name)
      create.put("Compatibility", "BACKWARD").put("SchemaDefinition", definition)
      create.putObject("RegistryId").put("RegistryName", registry)
      call("CreateSchema", create).getOrElse(
        throw failed("CreateSchema", s"registry '$registry' does not exist")
      )
    }
    val id = UUID.fromString(registered.get("SchemaVersionId").asText())
    awaitAvailable(id, registered.path("Status").asText(registered.path("SchemaVersionStatus").asText("")))
  }

  /** A registered version is PENDING while Glue checks its compatibility; records may name it once AVAILABLE. */
  private def awaitAvailable(id: UUID, status: String, polls: Int = 0): UUID = status match {
    case "AVAILABLE" | "" => id
    case "PENDING" if polls < MaxPendingPolls =>
      sleep(PendingPollMs)
      val now = call("GetSchemaVersion", Json.createObjectNode().put("SchemaVersionId", id.toString))
      awaitAvailable(id, now.fold("")(_.path("Status").asText("")), polls + 1)
    case other => throw failed("RegisterSchemaVersion", s"the new version $id is $other, not AVAILABLE")
  }

  /** The answer of an operation; None when Glue says the entity does not exist. */
  private[payload] def call(operation: String, body: ObjectNode, failures: Int = 0): Option[JsonNode] = {
    val (status, answer) =
      try send(operation, Json.writeValueAsBytes(body))
      catch {
        case e: java.io.IOException if failures < endpoint.numRetries =>
          sleep(backoff.delayMs(failures + 1))
          return call(operation, body, failures + 1)
        case e: java.io.IOException =>
          throw failed(operation, s"${e.getClass.getSimpleName}: ${e.getMessage}")
      }
    val error = answer.path("__type").asText("").split('#').last
    if (status / 100 == 2) Some(answer)
    else if (error == "EntityNotFoundException") None
    else if ((status >= 500 || Retryable(error)) && failures < endpoint.numRetries) {
      sleep(backoff.delayMs(failures + 1))
      call(operation, body, failures + 1)
    } else {
      val message = Option(answer.get("message")).orElse(Option(answer.get("Message"))).fold("")(_.asText())
      throw failed(operation, s"HTTP $status ${if (error.isEmpty) "" else s"$error: "}$message")
    }
  }

  private def send(operation: String, body: Array[Byte]): (Int, JsonNode) = {
    val request = SdkHttpRequest
      .builder()
      .method(SdkHttpMethod.POST)
      .uri(uri)
      .putHeader("Content-Type", "application/x-amz-json-1.1")
      .putHeader("X-Amz-Target", s"AWSGlue.$operation")
      .build()
    val signed = Signer.sign(
      SignRequest
        .builder(credentials.resolveIdentity().join(): AwsCredentialsIdentity)
        .request(request)
        .payload(() => new ByteArrayInputStream(body))
        .putProperty(AwsV4FamilyHttpSigner.SERVICE_SIGNING_NAME, "glue")
        .putProperty(AwsV4HttpSigner.REGION_NAME, endpoint.region)
        .build()
    )
    val response = http
      .prepareRequest(
        HttpExecuteRequest
          .builder()
          .request(signed.request())
          .contentStreamProvider(() => new ByteArrayInputStream(body))
          .build()
      )
      .call()
    val text = response
      .responseBody()
      .map[Array[Byte]](s =>
        try s.readAllBytes()
        finally s.close()
      )
    val json = if (text.isPresent && text.get.nonEmpty) Json.readTree(text.get) else Json.createObjectNode()
    (response.httpResponse().statusCode(), json)
  }

  private def failed(operation: String, why: String) =
    KinesisErrors.schemaRegistryFailed(operation, endpoint.endpointUrl, why)
}

private[sparkkinesis] object GlueSchemaRegistry {
  private[payload] val Json = new ObjectMapper()
  private val Signer = AwsV4HttpSigner.create()

  private val Retryable =
    Set("ThrottlingException", "InternalServiceException", "ConcurrentModificationException")
  private val PendingPollMs = 500L
  private val MaxPendingPolls = 120

  private def schemaId(registry: String, schema: String): ObjectNode =
    Json.createObjectNode().put("RegistryName", registry).put("SchemaName", schema)

  private def version(answer: JsonNode): SchemaVersion = SchemaVersion(
    UUID.fromString(answer.get("SchemaVersionId").asText()),
    answer.get("SchemaDefinition").asText(),
    answer.path("DataFormat").asText("AVRO")
  )

  /** One registry client per endpoint and credentials in a JVM, shared by the tasks that lease it. */
  private val clients = new SharedResources[AwsClientConfig, Lease[SchemaRegistry]](
    "Glue Schema Registry client",
    open,
    _.close()
  )

  def acquire(endpoint: AwsClientConfig): Lease[SchemaRegistry] = clients.acquire(endpoint).map(_.value)

  private def open(endpoint: AwsClientConfig): Lease[SchemaRegistry] = {
    val credentials = AwsCredentials.acquire(endpoint.credentials)
    val http = credentials.closeIfFails(_ => HttpSettings.apache(endpoint.network).build())
    Lease.owning[SchemaRegistry](new GlueSchemaRegistry(endpoint, http, credentials.value))(() =>
      try http.close()
      finally credentials.close()
    )
  }
}
