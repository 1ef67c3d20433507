package io.sparkkinesis.payload

import java.util.UUID

import scala.util.control.NonFatal

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.analysis.TypeCheckResult
import org.apache.spark.sql.catalyst.expressions.{Expression, GenericInternalRow, UnaryExpression}
import org.apache.spark.sql.types.{BinaryType, DataType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String

import io.sparkkinesis.config.{AwsClientConfig, GsrDataFormat, PayloadMode, SchemaRegistryConfig}
import io.sparkkinesis.errors.KinesisErrors
import io.sparkkinesis.resources.Lease

/** The schema a function reads or writes with: its text and format, and (when registered) its version id. */
private[sparkkinesis] final case class RegistrySchema(definition: String, format: String, id: Option[UUID]) {
  // Checked by the function builder: a schema of a format this build has.
  def codec: PayloadCodec = PayloadCodec.of(format).get
}

/** `from_glue_schema_registry` and `to_glue_schema_registry`, and what they share. */
private[sparkkinesis] object GlueSchemaRegistryFunctions {
  val DecodeName = "from_glue_schema_registry"
  val EncodeName = "to_glue_schema_registry"

  val Decode: PayloadFunction = PayloadFunction(
    DecodeName,
    s"$DecodeName(data, options) - Decodes Glue Schema Registry records (binary) into the reader schema's struct.",
    args => {
      val config = configOf(Decode, args)
      GsrDecode(args.head, config, readerSchema(config))
    }
  )

  val Encode: PayloadFunction = PayloadFunction(
    EncodeName,
    s"$EncodeName(value, options) - Encodes a value (a struct) as a Glue Schema Registry record (binary).",
    args => {
      val config = configOf(Encode, args)
      val writer = writerSchema(config)
      writer.codec.checkWritable(args.head.dataType, writer.definition).foreach { problem =>
        throw KinesisErrors.functionArgument(
          EncodeName,
          s"the value cannot be written with ${config.describeSchema}: $problem"
        )
      }
      GsrEncode(args.head, config, writer)
    }
  )

  private def configOf(function: PayloadFunction, args: Seq[Expression]): SchemaRegistryConfig = {
    PayloadFunctions.arity(function, args, 2, 2)
    SchemaRegistryConfig.parse(
      function.name,
      PayloadFunctions.options(function.name, args(1)),
      AwsClientConfig.environmentRegion
    )
  }

  private def withRegistry[T](endpoint: AwsClientConfig)(use: SchemaRegistry => T): T = {
    val lease = GlueSchemaRegistry.acquire(endpoint)
    try use(lease.value)
    finally lease.close()
  }

  private def checkFormat(function: String, config: SchemaRegistryConfig, format: String): Unit =
    if (PayloadCodec.of(format).isEmpty)
      throw KinesisErrors.functionArgument(
        function,
        s"${config.describeSchema} is in data format $format; this build reads and writes ${PayloadCodec.supported.mkString(", ")}"
      )

  /** The reader schema, looked up on the driver when the function is built: never per record. */
  private def readerSchema(config: SchemaRegistryConfig): RegistrySchema = {
    val schema = config.schemaDefinition match {
      case Some(text) => RegistrySchema(text, config.dataFormat.getOrElse(GsrDataFormat.Avro).name, None)
      case None =>
        val found = withRegistry(config.endpoint)(
          _.byNumber(config.registryName, config.schemaName.get, config.schemaVersion)
        )
        val v = found.getOrElse(
          throw KinesisErrors.schemaNotFound(DecodeName, config.endpoint.endpointUrl, config.describeSchema)
        )
        RegistrySchema(v.definition, v.dataFormat, Some(v.id))
    }
    checkFormat(DecodeName, config, schema.format)
    parsed(DecodeName, config, schema)
  }

  /** The writer schema and its version id: found by name and version, or by its text (registered if allowed). */
  private def writerSchema(config: SchemaRegistryConfig): RegistrySchema = {
    val name = config.schemaName.getOrElse(
      throw KinesisErrors.requiredOption(
        "kinesis.schemaRegistry.schemaName",
        s"$EncodeName writes records that name a registered schema version: give the schema's name"
      )
    )
    val schema = withRegistry(config.endpoint) { registry =>
      config.schemaDefinition match {
        case Some(text) =>
          val format = config.dataFormat.getOrElse(GsrDataFormat.Avro)
          checkFormat(EncodeName, config, format.name)
          val id = registry.byDefinition(config.registryName, name, text).getOrElse {
            if (!config.autoRegister)
              throw KinesisErrors.definitionNotRegistered(EncodeName, config.describeSchema)
            registry.register(config.registryName, name, text, format)
          }
          RegistrySchema(text, format.name, Some(id))
        case None =>
          val v = registry
            .byNumber(config.registryName, name, config.schemaVersion)
            .getOrElse(
              throw KinesisErrors
                .schemaNotFound(EncodeName, config.endpoint.endpointUrl, config.describeSchema)
            )
          RegistrySchema(v.definition, v.dataFormat, Some(v.id))
      }
    }
    checkFormat(EncodeName, config, schema.format)
    parsed(EncodeName, config, schema)
  }

  private def parsed(function: String, config: SchemaRegistryConfig, schema: RegistrySchema): RegistrySchema =
    try {
      schema.codec.sparkType(schema.definition)
      schema
    } catch {
      case NonFatal(e) =>
        throw KinesisErrors.functionArgument(
          function,
          s"${config.describeSchema} is no valid ${schema.format} schema: ${e.getMessage}"
        )
    }

  /** Writer schemas by version id, per executor JVM and registry, least recently used first out. */
  private object WriterSchemas {
    private val cache = new java.util.LinkedHashMap[(AwsClientConfig, UUID), SchemaVersion](64, 0.75f, true)

    def get(
        endpoint: AwsClientConfig,
        id: UUID,
        limit: Int,
        load: UUID => Option[SchemaVersion]
    ): Option[SchemaVersion] = {
      val key = (endpoint, id)
      cache.synchronized(Option(cache.get(key))).orElse {
        val loaded = load(id)
        loaded.foreach { v =>
          cache.synchronized {
            cache.put(key, v)
            val it = cache.entrySet().iterator()
            while (cache.size > limit) { it.next(); it.remove() }
          }
        }
        loaded
      }
    }
  }

  /** What a task keeps while it decodes: registry lease and zlib streams (released with it), decoders. */
  private[payload] final class DecodeState(config: SchemaRegistryConfig, reader: RegistrySchema) {
    private var lease: Option[Lease[SchemaRegistry]] = None
    private val decoders = new java.util.HashMap[UUID, Either[RuntimeException, PayloadDecoder]]()
    private var lastHeader: Array[Byte] = _ // of the last record decoded
    private var lastDecoder: Either[RuntimeException, PayloadDecoder] = _
    val zlib = new GsrFrame.ZlibStreams

    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
      lease.foreach(_.close())
      lease = None
      zlib.close()
    })

    private def registry: SchemaRegistry = {
      if (lease.isEmpty) lease = Some(GlueSchemaRegistry.acquire(config.endpoint))
      lease.get.value
    }

    /** The decoder of a framed record's writer version. */
    def decoder(framed: GsrFrame.Framed): Either[RuntimeException, PayloadDecoder] = {
      if (lastHeader == null || !framed.sameSchemaVersion(lastHeader)) {
        lastDecoder = decoders.computeIfAbsent(framed.schemaVersion, make)
        lastHeader = java.util.Arrays.copyOf(framed.record, GsrFrame.HeaderLength)
      }
      lastDecoder
    }

    private def make(id: UUID): Either[RuntimeException, PayloadDecoder] = {
      val version = id.toString
      WriterSchemas.get(config.endpoint, id, config.cacheSize, registry.byId) match {
        case None =>
          Left(KinesisErrors.unknownSchemaVersion(DecodeName, version, config.endpoint.endpointUrl))
        case Some(v) if v.dataFormat != reader.format =>
          Left(KinesisErrors.unsupportedPayloadFormat(DecodeName, version, v.dataFormat, reader.format))
        case Some(v) =>
          try Right(reader.codec.decoder(v.definition, reader.definition))
          catch {
            case NonFatal(e) =>
              Left(KinesisErrors.unresolvableSchema(DecodeName, version, config.describeSchema, e.getMessage))
          }
      }
    }
  }
}

/** `from_glue_schema_registry(data, options)`: a framed record decoded with its writer schema into the reader's type. */
private[sparkkinesis] final case class GsrDecode(
    child: Expression,
    config: SchemaRegistryConfig,
    reader: RegistrySchema
) extends UnaryExpression
    with EvalInGeneratedCode {
  import GlueSchemaRegistryFunctions._

  private val valueType: DataType = reader.codec.sparkType(reader.definition)

  override lazy val dataType: DataType = config.errorField match {
    case None => valueType
    case Some(field) =>
      valueType match {
        // A record that cannot be decoded leaves every field null: each becomes nullable.
        case s: StructType =>
          StructType(s.fields.map(_.copy(nullable = true)) :+ StructField(field, StringType))
        case other =>
          throw KinesisErrors.functionArgument(
            DecodeName,
            s"an error field is added to a struct, and ${config.describeSchema} reads as ${other.simpleString}"
          )
      }
  }
  override def prettyName: String = DecodeName
  override def stringArgs: Iterator[Any] = Iterator(child, config.describeSchema)
  override def toString: String = s"$prettyName($child, ${config.describeSchema})"

  override def checkInputDataTypes(): TypeCheckResult =
    if (child.dataType == BinaryType) TypeCheckResult.TypeCheckSuccess
    else
      TypeCheckResult.TypeCheckFailure(s"$DecodeName reads binary data, not ${child.dataType.simpleString}")

  @transient private lazy val state = new DecodeState(config, reader)
  private val permissive = config.mode == PayloadMode.Permissive

  def evalValue(input: Any): Any = {
    val bytes = input.asInstanceOf[Array[Byte]]
    val outcome = GsrFrame.parse(bytes, state.zlib) match {
      case Left(problem) => Left(KinesisErrors.badPayloadHeader(DecodeName, problem))
      case Right(framed) =>
        state.decoder(framed).flatMap { decoder =>
          try Right(decoder.decode(framed.payload, framed.offset, framed.length))
          catch {
            case NonFatal(e) =>
              Left(KinesisErrors.corruptPayload(DecodeName, framed.schemaVersion.toString, s"$e"))
          }
        }
    }
    outcome match {
      case Right(value) if config.errorField.isEmpty => value
      case Right(row: InternalRow) => withError(row, null)
      case Left(error) if !permissive => throw error
      case Left(error) =>
        config.errorField.fold(null: Any)(_ => withError(null, UTF8String.fromString(error.getMessage)))
      case Right(other) => throw KinesisErrors.internal(s"$DecodeName decoded a struct as $other")
    }
  }

  private def withError(row: InternalRow, error: UTF8String): InternalRow = {
    val fields = valueType.asInstanceOf[StructType]
    val values = new Array[Any](fields.length + 1)
    if (row != null) for (i <- fields.indices) values(i) = row.get(i, fields(i).dataType)
    values(fields.length) = error
    new GenericInternalRow(values)
  }

  override protected def withNewChildInternal(newChild: Expression): GsrDecode = copy(child = newChild)
}

/** `to_glue_schema_registry(value, options)`: a value written with the registered writer schema, framed. */
private[sparkkinesis] final case class GsrEncode(
    child: Expression,
    config: SchemaRegistryConfig,
    writer: RegistrySchema
) extends UnaryExpression
    with EvalInGeneratedCode {
  import GlueSchemaRegistryFunctions._

  override def dataType: DataType = BinaryType
  override def prettyName: String = EncodeName
  override def stringArgs: Iterator[Any] = Iterator(child, config.describeSchema)
  override def toString: String = s"$prettyName($child, ${config.describeSchema})"

  @transient private lazy val encoder = writer.codec.encoder(writer.definition, child.dataType)

  @transient private lazy val zlib = {
    val streams = new GsrFrame.ZlibStreams
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => streams.close()))
    streams
  }

  def evalValue(input: Any): Any = {
    val payload =
      try encoder.encode(input)
      catch {
        case NonFatal(e) => throw KinesisErrors.unencodable(EncodeName, config.describeSchema, s"$e")
      }
    GsrFrame.frame(writer.id.get, payload, config.compression, zlib)
  }

  override protected def withNewChildInternal(newChild: Expression): GsrEncode = copy(child = newChild)
}
