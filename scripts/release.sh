#!/usr/bin/env bash
# Writes the release bundle of the version in pom.xml under dist/release/<version>/, and publishes nothing:
#
#   maven/     every published artifact in Maven repository layout (io/sparkkinesis/<artifact>/<version>/): the POM
#              (flattened for the lines), the jar, the -sources.jar and the -javadoc.jar (Scaladoc), each with its
#              .md5 and .sha1 checksums. This is the staging repository that `mvn deploy` writes (the root pom
#              points deploys at target/staging-repository, never at a remote repository), copied without the
#              repository's own maven-metadata.xml index files. Signatures (.asc) are made where it is published.
#   python/    the wheel (every line's jar and the shared jar) and the sdist (the same files, built from python/),
#              both checked with `twine check`.
#
#   scripts/release.sh                 build everything (mvn deploy without the Scala suites, then the wheel with
#                                      scripts/build.sh --no-maven) and write the bundle
#   scripts/release.sh --no-build      only assemble, from the staging repository and the wheel already built
#                                      (by scripts/test.sh, for instance); checks that the wheel's jars are the
#                                      staged ones
#   scripts/release.sh --out DIR       write the bundle to DIR instead (it is replaced)
#
# Run scripts/test.sh first: this builds, it does not test. To change the version: scripts/pominfo.py set-version.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[release] %s\n' "$*" >&2; }
die() { printf '[release] error: %s\n' "$*" >&2; exit 1; }

build=1
out=""
while (($#)); do
  case "$1" in
    --no-build) build=0 ;;
    --out) [[ $# -ge 2 ]] || die "usage: --out DIR"; out="$2"; shift ;;
    *) echo "usage: scripts/release.sh [--no-build] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done

# The largest file the Python package index takes by default.
MAX_PYTHON_FILE_BYTES=100000000

VERSION="$(python3 scripts/pominfo.py get version)"
GROUP_PATH="$(python3 scripts/pominfo.py get groupId | tr . /)"
STAGING="$(python3 scripts/pominfo.py staging-repo)"
mapfile -t ARTIFACTS < <(python3 scripts/pominfo.py artifacts)
out="$(realpath -m "${out:-dist/release/$VERSION}")"
WHEEL="dist/spark_kinesis-${VERSION}-py3-none-any.whl"

grep -q "^## \[${VERSION//./\\.}\]" CHANGELOG.md || die "CHANGELOG.md has no '## [$VERSION]' section"
[[ -x .venv/bin/twine ]] || die ".venv/bin/twine missing: run scripts/setup.sh"

if ((build)); then
  log "mvn deploy of every artifact into $STAGING (no Scala suites: scripts/test.sh runs them)"
  rm -rf "$STAGING"
  mvn -B -ntp -q deploy -DskipTests
  log "the wheel with every line's jar (scripts/build.sh --no-maven)"
  scripts/build.sh --no-maven
fi

# --- Maven: every artifact, complete, with checksums that match ------------------------------------------------
[[ -d "$STAGING" ]] || die "$STAGING missing: run mvn deploy (scripts/test.sh does), or this script without --no-build"
for artifact in "${ARTIFACTS[@]}"; do
  dir="$STAGING/$GROUP_PATH/$artifact/$VERSION"
  for file in "$artifact-$VERSION".{pom,jar} "$artifact-$VERSION"-{sources,javadoc}.jar; do
    [[ -s "$dir/$file" ]] || die "$dir/$file missing: run mvn deploy again"
    for sum in md5 sha1; do
      [[ "$(cat "$dir/$file.$sum")" == "$("${sum}sum" "$dir/$file" | cut -d' ' -f1)" ]] || die "$dir/$file.$sum does not match"
    done
  done
done

# The wheel's jars must be the deployed ones, byte for byte (both come from the same mvn run).
[[ -f "$WHEEL" ]] || die "$WHEEL missing: run scripts/build.sh --no-maven, or this script without --no-build"
.venv/bin/python - "$WHEEL" "$STAGING/$GROUP_PATH" "$VERSION" "${ARTIFACTS[@]}" <<'PY'
import hashlib, sys, zipfile
from pathlib import Path
wheel, repo, version, artifacts = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
with zipfile.ZipFile(wheel) as whl:
    bundled = {Path(n).name: hashlib.sha1(whl.read(n)).hexdigest() for n in whl.namelist() if n.endswith(".jar")}
staged = {
    f"{a}-{version}.jar": hashlib.sha1((repo / a / version / f"{a}-{version}.jar").read_bytes()).hexdigest()
    for a in artifacts
}
if bundled != staged:
    differ = sorted(n for n in staged.keys() | bundled.keys() if bundled.get(n) != staged.get(n))
    sys.exit(f"[release] error: the wheel's jars are not the staged ones ({', '.join(differ)}): rebuild both "
             "(scripts/release.sh without --no-build)")
PY

# Replace the bundle folder, but never a folder that holds anything else.
if [[ -e "$out" ]]; then
  other="$(find "$out" -mindepth 1 -maxdepth 1 ! -name maven ! -name python -printf '%P ' | head -c 200)"
  [[ -z "$other" ]] || die "$out holds more than a release bundle ($other); choose another --out"
  rm -rf "$out"
fi
mkdir -p "$out/maven" "$out/python"
# The published artifacts of this version, not the repository's index (maven-metadata.xml, which Maven Central
# keeps itself) nor anything an earlier deploy left there.
for artifact in "${ARTIFACTS[@]}"; do
  mkdir -p "$out/maven/$GROUP_PATH/$artifact/$VERSION"
  cp -p "$STAGING/$GROUP_PATH/$artifact/$VERSION/$artifact-$VERSION"* "$out/maven/$GROUP_PATH/$artifact/$VERSION/"
done

# --- Python: the wheel as built, and the sdist from python/ with the same files ---------------------------------
cp "$WHEEL" "$out/python/"
# The sdist carries the jars that scripts/build.sh placed in the package (every line's and the shared one): like
# the wheel, it installs a package that runs, and it holds no Scala or Java source (those are in the
# -sources.jar files and the repository).
.venv/bin/python -m build --sdist --no-isolation --outdir "$out/python" python >/dev/null
# setuptools names it spark-kinesis-<version>.tar.gz (69.3 and newer: spark_kinesis-..., as PEP 625 asks).
SDIST="$(compgen -G "$out/python/spark[-_]kinesis-${VERSION}.tar.gz" || true)"
[[ -n "$SDIST" && -f "$SDIST" ]] || { ls "$out/python" >&2; die "expected the sdist spark_kinesis-${VERSION}.tar.gz"; }
.venv/bin/python - "$SDIST" "$WHEEL" <<'PY'
import hashlib, sys, tarfile, zipfile
from pathlib import Path
sdist, wheel = sys.argv[1], sys.argv[2]
with tarfile.open(sdist) as tar:
    in_sdist = {Path(m.name).name: hashlib.sha1(tar.extractfile(m).read()).hexdigest() for m in tar if m.name.endswith(".jar")}
with zipfile.ZipFile(wheel) as whl:
    in_wheel = {Path(n).name: hashlib.sha1(whl.read(n)).hexdigest() for n in whl.namelist() if n.endswith(".jar")}
if in_sdist != in_wheel:
    sys.exit(f"[release] error: the sdist's jars {sorted(in_sdist)} are not the wheel's {sorted(in_wheel)}")
PY
for file in "$out"/python/*; do
  size="$(stat -c %s "$file")"
  ((size < MAX_PYTHON_FILE_BYTES)) || die "$file is $size bytes; the Python package index takes at most $MAX_PYTHON_FILE_BYTES"
done
.venv/bin/twine check --strict "$out"/python/* >&2

log "bundle of spark-kinesis $VERSION in $out (nothing published; sign and upload elsewhere):"
(cd "$out" && find . -type f ! -name '*.md5' ! -name '*.sha1' -printf '  %P  %s bytes\n' | sort) >&2
