package io.sparkkinesis.config

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import io.sparkkinesis.source.ShardStatus
import org.scalatest.funsuite.AnyFunSuite

/**
 * Values that travel to executors inside input partitions survive Java serialization as the same singletons. On
 * Scala 2.12 a case object whose abstract parent class is not Serializable fails to deserialize ("no valid
 * constructor"); Scala 2.13 hides that by serializing case objects through a proxy, so this suite guards the 2.12
 * build.
 */
class JavaSerializationSuite extends AnyFunSuite {

  private def roundTrip(value: AnyRef): AnyRef = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(value)
    out.close()
    new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray)).readObject()
  }

  test("every case object of the sealed classes with constructor parameters comes back as itself") {
    val singletons: Seq[AnyRef] =
      HttpProtocol.all ++ ShardStatus.all ++
        Seq(OptionType.Str, OptionType.Bool, OptionType.Integer, OptionType.Decimal)
    singletons.foreach(value => assert(roundTrip(value) eq value, s"$value"))
  }
}
