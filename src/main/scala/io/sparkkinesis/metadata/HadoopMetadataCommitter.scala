package io.sparkkinesis.metadata

import java.io.FileNotFoundException
import java.net.URLEncoder
import java.nio.charset.StandardCharsets.UTF_8
import java.util.{EnumSet, UUID}

import scala.util.Try

import io.sparkkinesis.compat.StringNumbers
import io.sparkkinesis.config.RetryPolicy
import io.sparkkinesis.errors.KinesisErrors
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{CreateFlag, FileAlreadyExistsException, FileContext, Options, Path}
import org.apache.spark.broadcast.Broadcast
import org.apache.spark.util.SerializableConfiguration

/**
 * Entries under `<root>/<runId>` on a Hadoop file system. The Hadoop configuration is broadcast as Spark's own
 * `SerializableConfiguration`: an executor deserializes a broadcast value with Spark's class loader, which does not
 * see jars a Spark Connect client added to its session, so a class of ours there would fail the read.
 */
private[sparkkinesis] final case class HadoopMetadataStore(
    root: String,
    conf: Broadcast[SerializableConfiguration],
    retry: RetryPolicy
) extends MetadataStore {

  def open(runId: String): MetadataCommitter =
    new HadoopMetadataCommitter(s"$root/$runId", conf.value.value, retry)

  /** Refuses a file system on which entries cannot be written first-writer-wins (S3A without conditional writes). */
  override def prepare(): Unit = S3aConditionalCreate.requireOn(root)
}

/**
 * Entries as small files under a Hadoop path (local, HDFS, S3A): `<root>/<batchId>/<url-encoded key>`. A write goes to
 * a temporary file then renamed without overwrite, so a reader sees a whole entry or none, and the first writer wins.
 */
private[sparkkinesis] final class HadoopMetadataCommitter(
    root: String,
    hadoopConf: Configuration,
    retry: RetryPolicy
) extends MetadataCommitter {
  S3aConditionalCreate.requireOn(root)
  private val rootPath = new Path(root)
  private[metadata] val fc = FileContext.getFileContext(rootPath.toUri, hadoopConf)

  // Hadoop's local file system checks that the target is absent and then renames (which replaces on POSIX), so two
  // racing writers could both "win": there, entries are committed with a hard link, created atomically and refused
  // when the target exists. S3A renames by copying after an existence check: there, an entry is written in place with
  // a conditional PUT (If-None-Match: *), which S3 refuses when the object exists.
  private val scheme = fc.makeQualified(rootPath).toUri.getScheme

  private[metadata] def batchDir(batchId: Long) = new Path(rootPath, batchId.toString)

  private def entryPath(batchId: Long, key: String) =
    new Path(batchDir(batchId), URLEncoder.encode(key, UTF_8))

  def putIfAbsent(batchId: Long, key: String, value: String): Boolean =
    MetadataRetry(retry, s"Writing metadata $key of batch $batchId under $root") {
      val target = entryPath(batchId, key)
      if (fc.util().exists(target)) false
      else if (scheme == "s3a") putConditional(target, value)
      else {
        fc.mkdir(batchDir(batchId), null, true)
        val temp = new Path(batchDir(batchId), s".${target.getName}.${UUID.randomUUID()}.tmp")
        val out = fc.create(temp, EnumSet.of(CreateFlag.CREATE), Options.CreateOpts.createParent())
        try out.write(value.getBytes(UTF_8))
        finally out.close()
        if (scheme == "file") commitLocal(temp, target) else renameNoOverwrite(temp, target)
      }
    }

  /** Writes the entry with a conditional create; false when S3 refuses it because the entry exists. */
  private def putConditional(target: Path, value: String): Boolean = {
    val fs = target.getFileSystem(hadoopConf)
    try {
      val out = fs.createFile(target).overwrite(false).must(S3aConditionalCreate.Key, true).build()
      try out.write(value.getBytes(UTF_8))
      finally out.close()
      true
    } catch {
      case _: FileAlreadyExistsException => false
      case e: java.io.IOException if preconditionFailed(e) => false
    }
  }

  private def preconditionFailed(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).exists { t =>
      t.isInstanceOf[org.apache.hadoop.fs.FileAlreadyExistsException] ||
      Option(t.getMessage).exists(m => m.contains("412") || m.contains("PreconditionFailed"))
    }

  /** Moves the temporary file into place unless an entry exists; true when this call placed it. */
  private def renameNoOverwrite(temp: Path, target: Path): Boolean =
    try {
      fc.rename(temp, target, Options.Rename.NONE)
      true
    } catch { case _: FileAlreadyExistsException => Try(fc.delete(temp, false)); false }

  private def commitLocal(temp: Path, target: Path): Boolean = {
    def local(p: Path) = java.nio.file.Paths.get(fc.makeQualified(p).toUri)
    try {
      java.nio.file.Files.createLink(local(target), local(temp))
      true
    } catch {
      case _: java.nio.file.FileAlreadyExistsException => false
      case _: UnsupportedOperationException | _: java.nio.file.FileSystemException =>
        renameNoOverwrite(temp, target)
    } finally Try(fc.delete(temp, false)) // the link, if made, keeps the data
  }

  def get(batchId: Long, key: String): Option[String] =
    MetadataRetry(retry, s"Reading metadata $key of batch $batchId under $root") {
      // Opened without a check first: an entry that a purge deletes meanwhile reads as absent, not as an error.
      val in =
        try Some(fc.open(entryPath(batchId, key)))
        catch { case _: FileNotFoundException => None }
      in.map { stream =>
        try new String(stream.readAllBytes(), UTF_8)
        finally stream.close()
      }
    }

  def purgeBefore(batchId: Long): Unit =
    MetadataRetry(retry, s"Purging metadata before batch $batchId under $root") {
      if (fc.util().exists(rootPath))
        for (s <- fc.util().listStatus(rootPath) if s.isDirectory)
          if (StringNumbers.toLongOption(s.getPath.getName).exists(_ < batchId)) fc.delete(s.getPath, true)
    }
}

private[metadata] object S3aConditionalCreate {
  // Hadoop's option asking S3A for a create that fails if the object exists (If-None-Match: *).
  val Key = "fs.option.create.conditional.overwrite"

  /** Whether this JVM's Hadoop knows the option (Hadoop 3.4.2 and newer declare it among the create-file keys). */
  lazy val supported: Boolean =
    Try(
      Class
        .forName("org.apache.hadoop.fs.Options$CreateFileOptionKeys")
        .getField("FS_OPTION_CREATE_CONDITIONAL_OVERWRITE")
    ).isSuccess

  /** Refuses an `s3a://` root when Hadoop cannot write conditionally: two attempts could both record an end. */
  def requireOn(root: String): Unit = {
    val scheme = Try(Option(new java.net.URI(root).getScheme)).toOption.flatten
    if (scheme.exists(_.equalsIgnoreCase("s3a")) && !supported)
      throw KinesisErrors.s3aWithoutConditionalWrites(root, org.apache.hadoop.util.VersionInfo.getVersion)
  }
}
