package io.sparkkinesis.gsrapp;

import com.amazonaws.services.schemaregistry.deserializers.GlueSchemaRegistryKafkaDeserializer;
import com.amazonaws.services.schemaregistry.deserializers.avro.AWSKafkaAvroDeserializer;
import com.amazonaws.services.schemaregistry.deserializers.protobuf.ProtobufSchemaParser;
import com.amazonaws.services.schemaregistry.serializers.GlueSchemaRegistryKafkaSerializer;
import com.amazonaws.services.schemaregistry.serializers.avro.AWSKafkaAvroSerializer;
import com.amazonaws.services.schemaregistry.serializers.json.JsonDataWithSchema;
import com.amazonaws.services.schemaregistry.utils.AWSSchemaRegistryConstants;
import com.amazonaws.services.schemaregistry.utils.AvroRecordType;
import com.amazonaws.services.schemaregistry.utils.ProtobufMessageType;
import com.google.protobuf.Descriptors;
import com.google.protobuf.DynamicMessage;
import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.DecoderFactory;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;

/**
 * The Glue Schema Registry serde library as a command, one record per line on stdin and stdout:
 *
 * <pre>
 *   encode ENDPOINT REGISTRY SCHEMA_NAME SCHEMA_FILE NONE|ZLIB   Avro JSON records in, base64 framed records out
 *   decode ENDPOINT REGISTRY                                     base64 framed records in, Avro JSON records out
 *   encode-json ENDPOINT REGISTRY SCHEMA_NAME SCHEMA_FILE NONE|ZLIB   JSON records in (JSON Schema in the file),
 *                                                                    base64 framed records out
 *   decode-json ENDPOINT REGISTRY                                base64 framed records in, JSON records out
 *   encode-protobuf ENDPOINT REGISTRY SCHEMA_NAME PROTO_FILE NONE|ZLIB
 *                       records of the file's first message in protobuf's text format in, base64 framed records out
 *   decode-protobuf ENDPOINT REGISTRY                            base64 framed records in, text format out
 * </pre>
 *
 * The JSON modes use the library's format-neutral Kafka serializer (dataFormat JSON) with its JsonDataWithSchema
 * wrapper, and its Kafka deserializer, which gives a JsonDataWithSchema back.
 *
 * Encoding registers the schema when the registry does not hold it (the library's auto-registration). Credentials
 * come from the default chain (the tests' dummy keys in the environment); the region is us-east-1.
 */
public final class Main {
  public static void main(String[] args) throws Exception {
    Map<String, Object> config = new HashMap<>();
    config.put(AWSSchemaRegistryConstants.AWS_ENDPOINT, args[1]);
    config.put(AWSSchemaRegistryConstants.AWS_REGION, "us-east-1");
    config.put(AWSSchemaRegistryConstants.REGISTRY_NAME, args[2]);
    config.put(AWSSchemaRegistryConstants.AVRO_RECORD_TYPE, AvroRecordType.GENERIC_RECORD.getName());
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    DefaultCredentialsProvider credentials = DefaultCredentialsProvider.builder().build();
    if (args[0].endsWith("-protobuf")) {
      protobuf(args, config, in, credentials);
    } else if (args[0].equals("encode-json")) {
      config.put(AWSSchemaRegistryConstants.DATA_FORMAT, "JSON");
      config.put(AWSSchemaRegistryConstants.SCHEMA_NAME, args[3]);
      config.put(AWSSchemaRegistryConstants.SCHEMA_AUTO_REGISTRATION_SETTING, true);
      config.put(AWSSchemaRegistryConstants.COMPRESSION_TYPE, args[5]);
      String schema = Files.readString(Path.of(args[4]));
      GlueSchemaRegistryKafkaSerializer serializer = new GlueSchemaRegistryKafkaSerializer(credentials, null, config);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        byte[] framed = serializer.serialize("stream", JsonDataWithSchema.builder(schema, line).build());
        System.out.println(Base64.getEncoder().encodeToString(framed));
      }
    } else if (args[0].equals("decode-json")) {
      GlueSchemaRegistryKafkaDeserializer deserializer = new GlueSchemaRegistryKafkaDeserializer(credentials, config);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        Object record = deserializer.deserialize("stream", Base64.getDecoder().decode(line.trim()));
        System.out.println(((JsonDataWithSchema) record).getPayload());
      }
    } else if (args[0].equals("encode")) {
      config.put(AWSSchemaRegistryConstants.SCHEMA_NAME, args[3]);
      config.put(AWSSchemaRegistryConstants.SCHEMA_AUTO_REGISTRATION_SETTING, true);
      config.put(AWSSchemaRegistryConstants.COMPRESSION_TYPE, args[5]);
      Schema schema = new Schema.Parser().parse(Files.readString(Path.of(args[4])));
      GenericDatumReader<GenericRecord> reader = new GenericDatumReader<>(schema);
      AWSKafkaAvroSerializer serializer = new AWSKafkaAvroSerializer(credentials, null);
      serializer.configure(config, false);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        GenericRecord record = reader.read(null, DecoderFactory.get().jsonDecoder(schema, line));
        System.out.println(Base64.getEncoder().encodeToString(serializer.serialize("stream", record)));
      }
    } else {
      AWSKafkaAvroDeserializer deserializer = new AWSKafkaAvroDeserializer(credentials, null);
      deserializer.configure(config, false);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        Object record = deserializer.deserialize("stream", Base64.getDecoder().decode(line.trim()));
        System.out.println(record);
      }
    }
    System.out.flush();
  }

  /**
   * The library's PROTOBUF path: the .proto text parsed by its own parser, DynamicMessages through its Kafka
   * serializer (which registers the schema text it derives from the descriptor) and deserializer.
   */
  private static void protobuf(
      String[] args, Map<String, Object> config, BufferedReader in, DefaultCredentialsProvider credentials)
      throws Exception {
    config.put(AWSSchemaRegistryConstants.DATA_FORMAT, "PROTOBUF");
    config.put(AWSSchemaRegistryConstants.PROTOBUF_MESSAGE_TYPE, ProtobufMessageType.DYNAMIC_MESSAGE.getName());
    if (args[0].equals("encode-protobuf")) {
      config.put(AWSSchemaRegistryConstants.SCHEMA_NAME, args[3]);
      config.put(AWSSchemaRegistryConstants.SCHEMA_AUTO_REGISTRATION_SETTING, true);
      config.put(AWSSchemaRegistryConstants.COMPRESSION_TYPE, args[5]);
      Descriptors.Descriptor message =
          ProtobufSchemaParser.parse(Files.readString(Path.of(args[4])), "record.proto").getMessageTypes().get(0);
      GlueSchemaRegistryKafkaSerializer serializer = new GlueSchemaRegistryKafkaSerializer(credentials, null, config);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        DynamicMessage.Builder record = DynamicMessage.newBuilder(message);
        TextFormat.merge(line, record);
        System.out.println(Base64.getEncoder().encodeToString(serializer.serialize("stream", record.build())));
      }
    } else {
      GlueSchemaRegistryKafkaDeserializer deserializer = new GlueSchemaRegistryKafkaDeserializer(credentials, config);
      for (String line = in.readLine(); line != null; line = in.readLine()) {
        Message record = (Message) deserializer.deserialize("stream", Base64.getDecoder().decode(line.trim()));
        System.out.println(record.getDescriptorForType().getFullName() + " " + TextFormat.shortDebugString(record));
      }
    }
  }
}
