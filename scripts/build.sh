#!/usr/bin/env bash
# Builds the jars of every Spark line and the shared third-party jar, then the Python wheel with all of them
# inside, and installs the wheel into .venv.
#
#   scripts/build.sh                         mvn deploy (quiet, no tests) of every line + wheel + install
#   scripts/build.sh --line spark3.5_2.12    only these lines (repeatable); the wheel then carries only them
#   scripts/build.sh --no-maven              reuse the jars already in deps/target and lines/*/target
#   scripts/build.sh --no-install ...        build the wheel into dist/ but leave .venv as it is
#   scripts/build.sh --jars-only ...         mvn package of the jars alone (no format check, test classes, API
#                                            docs, sources, ~/.m2 or staging copy) and no wheel: what the demo
#                                            builds while its setup runs, before --no-maven makes the wheel
#
# Output: deps/target/spark-kinesis-deps-<version>.jar, lines/<line>/target/spark-kinesis-<line>-<version>.jar,
# and dist/spark_kinesis-<version>-py3-none-any.whl (which must stay under PyPI's 100 MB file limit). `mvn deploy`
# installs into ~/.m2 and copies the artifacts into target/staging-repository (a local Maven repository, never a
# remote one: see the root pom), which tests/test_packages.py resolves from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

run_maven=1
jars_only=0
install=1
chosen=()
while (($#)); do
  case "$1" in
    --no-maven) run_maven=0 ;;
    --jars-only) jars_only=1 ;;
    --no-install) install=0 ;;
    --line) [[ $# -ge 2 ]] || { echo "usage: --line NAME" >&2; exit 2; }; chosen+=("${2#lines/}"); shift ;;
    *) echo "usage: scripts/build.sh [--no-maven | --jars-only] [--no-install] [--line NAME ...]" >&2; exit 2 ;;
  esac
  shift
done

log() { printf '[build] %s\n' "$*" >&2; }
# The largest wheel the Python package index takes by default.
MAX_WHEEL_BYTES=100000000

VERSION="$(python3 scripts/pominfo.py get version)"
PKG_DIR="python/src/spark_kinesis"
if ((${#chosen[@]} == 0)); then
  mapfile -t chosen < <(python3 scripts/pominfo.py lines | awk '{sub("^lines/", "", $1); print $1}')
fi

# Whether every chosen line's jar and the deps jar are newer than everything they are built from.
jars_fresh() {
  local jar oldest=""
  for jar in "$(python3 scripts/pominfo.py deps-jar)" \
    $(for line in "${chosen[@]}"; do python3 scripts/pominfo.py line-jar "$line"; done); do
    [[ -f "$jar" ]] || return 1
    [[ -z "$oldest" || "$jar" -ot "$oldest" ]] && oldest="$jar"
  done
  [[ -z "$(find pom.xml .mvn deps/pom.xml lines/pom.xml src "${chosen[@]/#/lines/}" -newer "$oldest" -type f \
    -not -path '*/target/*' -print -quit)" ]]
}

if ((run_maven && jars_only)) && jars_fresh; then
  log "the jars are newer than their sources and poms: no Maven build"
  run_maven=0
fi

if ((run_maven)); then
  modules="deps$(printf ',lines/%s' "${chosen[@]}")"
  # Without a clean, the shade plugin can take the previous shaded deps jar as its input again, and classes of an
  # older dependency version then shadow the new ones: the deps module's jars are always made afresh.
  rm -f deps/target/*.jar
  if ((jars_only)); then
    goals=(package -DskipTests -Dmaven.test.skip=true -Dscaladoc.skip=true -Dmaven.source.skip=true
      -Dspotless.check.skip=true -Dmaven.artifact.threads=8)
  else
    goals=(deploy -DskipTests)
  fi
  log "mvn -B -q ${goals[*]} -pl $modules -am"
  mvn -B -q "${goals[@]}" -pl "$modules" -am
fi

((jars_only)) && exit 0
[[ -x .venv/bin/python ]] || scripts/setup.sh

jars=("$(python3 scripts/pominfo.py deps-jar)")
for line in "${chosen[@]}"; do
  jars+=("$(python3 scripts/pominfo.py line-jar "$line")")
done
for jar in "${jars[@]}"; do
  if [[ ! -f "$jar" ]]; then
    echo "[build] error: $jar not found; run scripts/build.sh without --no-maven" >&2
    exit 1
  fi
done

python3 scripts/pominfo.py write-version "$PKG_DIR/_version.py"
rm -rf "$PKG_DIR/jars"
mkdir -p "$PKG_DIR/jars"
cp -f "${jars[@]}" "$PKG_DIR/jars/"

log "building the wheel (${chosen[*]})"
rm -rf python/build dist/spark_kinesis-*.whl
.venv/bin/python -m build --wheel --no-isolation --outdir dist python >/dev/null
WHEEL="dist/spark_kinesis-${VERSION}-py3-none-any.whl"
[[ -f "$WHEEL" ]] || { echo "[build] error: expected $WHEEL" >&2; ls dist >&2; exit 1; }
size="$(stat -c %s "$WHEEL")"
if ((size >= MAX_WHEEL_BYTES)); then
  echo "[build] error: $WHEEL is $size bytes; the Python package index takes at most $MAX_WHEEL_BYTES" >&2
  exit 1
fi

((install)) || { log "built $WHEEL ($size bytes)"; exit 0; }
log "installing $WHEEL ($size bytes) into .venv"
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --force-reinstall "$WHEEL"
.venv/bin/python -m spark_kinesis.cli jar --list >&2
