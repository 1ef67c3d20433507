#!/usr/bin/env bash
# Builds the shaded jar, then the Python wheel with that jar inside, and installs the wheel into .venv.
#
#   scripts/build.sh              mvn package (quiet, no tests) + wheel + install
#   scripts/build.sh --no-maven   reuse the jar already in target/ (wheel + install only)
#
# Output: target/<artifactId>-<version>.jar and dist/spark_kinesis-<version>-py3-none-any.whl
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

run_maven=1
for arg in "$@"; do
  case "$arg" in
    --no-maven) run_maven=0 ;;
    *) echo "usage: scripts/build.sh [--no-maven]" >&2; exit 2 ;;
  esac
done

log() { printf '[build] %s\n' "$*" >&2; }

[[ -x .venv/bin/python ]] || scripts/setup.sh

VERSION="$(python3 scripts/pominfo.py get version)"
JAR="$(python3 scripts/pominfo.py jar)"
PKG_DIR="python/src/spark_kinesis"

if ((run_maven)); then
  log "mvn -B -q package -DskipTests"
  mvn -B -q package -DskipTests
fi
if [[ ! -f "$JAR" ]]; then
  echo "[build] error: $JAR not found; run scripts/build.sh without --no-maven" >&2
  exit 1
fi

python3 scripts/pominfo.py write-version "$PKG_DIR/_version.py"
mkdir -p "$PKG_DIR/jars"
cp -f "$JAR" "$PKG_DIR/jars/spark-kinesis.jar"

log "building the wheel"
rm -rf python/build dist/spark_kinesis-*.whl
.venv/bin/python -m build --wheel --no-isolation --outdir dist python >/dev/null
WHEEL="dist/spark_kinesis-${VERSION}-py3-none-any.whl"
[[ -f "$WHEEL" ]] || { echo "[build] error: expected $WHEEL" >&2; ls dist >&2; exit 1; }

log "installing $WHEEL into .venv"
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --force-reinstall "$WHEEL"
.venv/bin/python -c 'import spark_kinesis as sk; print("[build] spark_kinesis", sk.__version__, "jar:", sk.jar_path())' >&2
