#!/usr/bin/env bash
# Installs everything the Python tests and the emulators need. Safe to run again:
# each step first checks what is already there and does nothing when it matches.
#
# With --demo it installs only what scripts/demo.sh needs: .venv with pyspark, boto3 (which the demo job imports)
# and the wheel builder, and kinesis-local.
#
#   .venv/                      pyspark (same version as <spark.version> in pom.xml), test and lint tools,
#                               and the spark_kinesis package (editable, until scripts/build.sh installs the wheel)
#   .tools/node_modules/        kinesis-local (the kinesis-mock emulator, as an npm package)
#   .tools/ministack-venv/      ministack (a multi-service AWS emulator), in a venv of its own
#   .tools/moto-venv/           moto's server (the Glue Schema Registry API), in a venv of its own
#   .tools/delta-lake/          Delta Lake's jars for the default line's Spark (a test of the MERGE example)
#
# With --lines it also installs what the smoke tests of the other Spark lines need (scripts/test-lines.sh):
#   .tools/lines/<line>/venv/        that line's pyspark from PyPI (the Spark version the line is built against)
#                                    and the test tools; also one for the newest pyspark that has no build of its
#                                    own yet (<pyspark.unbuilt.line> in pom.xml), which runs on the newest line
#   .tools/lines/<line>/spark-home/  for a line no pyspark on PyPI ships (Spark 3.5 with Scala 2.13): that Spark's
#                                    jars from Maven Central, and pyspark's launch scripts
# With --only-lines it installs only those (scripts/test.sh runs it beside the Maven build).
# With --benchmarks it also installs into .venv what the benchmarks need beyond the tests (matplotlib, pinned, for
# the soak run's plot: benchmarks/soak.py).
#
# The third-party packages of each venv live once per exact set of pins in a shared cache outside the clone
# ($SPARK_KINESIS_DEV_CACHE, else ~/.cache/spark-kinesis-dev; what ~/.m2 is to the jars): made on first use, never
# changed after, shared by every clone. The venvs above are thin ones layered over them (see layered_venv), so that a
# new clone installs in seconds what took minutes, and pyspark stays at one path, where the tests' class-data
# archives of its jars (tests/harness/jvm.py, in the same cache) stay valid. Delete the cache to start afresh.
#
# It does not build the jars: scripts/build.sh does that.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
KINESIS_LOCAL_VERSION="0.6.2"
MINISTACK_VERSION="1.5.33"
MOTO_VERSION="5.2.5"

with_lines=0
with_benchmarks=0
demo_only=0
only_lines=0
for arg in "$@"; do
  case "$arg" in
    --lines) with_lines=1 ;;
    --benchmarks) with_benchmarks=1 ;;
    --demo) demo_only=1 ;;
    --only-lines) with_lines=1; only_lines=1 ;;
    *) echo "usage: scripts/setup.sh [--demo | --only-lines | [--lines] [--benchmarks]]" >&2; exit 2 ;;
  esac
done

SPARK_VERSION="$("$PYTHON" scripts/pominfo.py default-spark-version)"

BOTO3_PIN="boto3==1.44.5"
# What the tests import, in every venv that runs them.
TEST_PINS=(
  "pytest==9.2.0"
  "$BOTO3_PIN"
  "aws-kinesis-agg==1.2.3"
  "protobuf==7.36.2"
  "hpack==4.2.0"
)
# pyspark's "connect" extra, for the Spark Connect client of tests/test_connect.py
CONNECT_PINS=(
  "grpcio==1.85.3"
  "grpcio-status==1.85.3"
  "googleapis-common-protos==1.76.0"
  "pandas==2.3.3"
  "pyarrow==22.0.0"
  "numpy==2.3.5"
  "zstandard==0.25.0"
)
# pyspark's "pipelines" extra (the Connect client and a YAML reader), for spark-pipelines in tests/test_pipelines.py;
# also in the venvs of the lines that have pipelines (Spark 4.1 and newer).
PIPELINES_PINS=(
  "${CONNECT_PINS[@]}"
  "pyyaml==6.0.3"
)
# What scripts/build.sh builds the wheel with (python -m build --no-isolation).
WHEEL_PINS=(
  "build==1.6.1"
  "wheel==0.48.0"
  "setuptools==65.5.0"
)
# Everything in .venv is pinned; pyspark follows the pom's default line.
VENV_PINS=(
  "pyspark==${SPARK_VERSION}"
  "${TEST_PINS[@]}"
  "${WHEEL_PINS[@]}"
  "mypy==2.4.1"
  "ruff==0.17.6"
  # runs the default line's suite in two processes (scripts/test.sh)
  "pytest-xdist==3.8.0"
  # checks the wheel's and the sdist's metadata (scripts/release.sh, tests/test_release.py)
  "twine==7.0.0"
  "${PIPELINES_PINS[@]}"
)
# Only these with --demo: what the demo job imports, and the wheel's builder.
DEMO_PINS=(
  "pyspark==${SPARK_VERSION}"
  "$BOTO3_PIN"
  "${WHEEL_PINS[@]}"
)
# Only with --benchmarks, into .venv as well.
BENCHMARK_PINS=(
  "matplotlib==3.11.2"
)

log() { printf '[setup] %s\n' "$*" >&2; }

# Prints the pins that the given interpreter does not have at exactly that version.
missing_pins() {
  local py="$1"; shift
  "$py" - "$@" <<'PY'
import sys
from importlib import metadata
for pin in sys.argv[1:]:
    name, _, wanted = pin.partition("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have != wanted:
        print(pin)
PY
}

# Installs every pin given into the venv of interpreter `py` when it lacks any of them (all together, so that pip
# resolves them as one set); `label` names the venv in the log. --no-compile leaves byte-code to the first import of each
# module: compiling all of pyspark, pandas and pyarrow up front took a line's venv 42 s of CPU to install instead of 20
# (2-core machine, 2026-11-28), for the few hundred modules that a run imports.
install_pins() {
  local py="$1" label="$2"
  shift 2
  local todo
  mapfile -t todo < <(missing_pins "$py" "$@")
  if ((${#todo[@]})); then
    log "installing into $label: ${todo[*]}"
    "$py" -m pip install --disable-pip-version-check --no-compile -q "$@"
  else
    log "$label: all pins present"
  fi
}

DEV_CACHE="${SPARK_KINESIS_DEV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/spark-kinesis-dev}"

# Runs `command...` to make `dir` in the shared cache unless `dir/marker` is there, under a lock (parallel setups wait
# for the first). The command writes the marker last: its presence says that `dir` is complete.
in_cache() {
  local dir="$1" marker="$2"
  shift 2
  mkdir -p "$(dirname "$dir")"
  (
    flock 9
    if [[ ! -e "$dir/$marker" ]]; then
      rm -rf "$dir"
      "$@"
    fi
  ) 9>"$dir.lock"
}

# Makes `link` a symbolic link to `target` (an entry of the shared cache), replacing whatever was there.
link_to() {
  local target="$1" link="$2"
  [[ "$(readlink "$link" 2>/dev/null)" == "$target" ]] && return
  rm -rf "$link"
  mkdir -p "$(dirname "$link")"
  ln -s "$target" "$link"
}

# Prints the path of the shared venv that holds exactly the given pins, for this Python; makes it first if the cache
# lacks it. Its key is the interpreter and the sorted pins.
shared_env() {
  local label="$1"; shift
  local env
  env="$DEV_CACHE/envs/$({ realpath "$(command -v "$PYTHON")"; "$PYTHON" -c 'import sys; print(sys.version)'
    printf '%s\n' "$@" | sort; } | sha256sum | cut -c1-16)"
  in_cache "$env" pins.txt make_env "$env" "$label" "$@"
  printf '%s\n' "$env"
}

make_env() {
  local env="$1" label="$2"
  shift 2
  log "making the shared environment of $label in $env: $*"
  "$PYTHON" -m venv "$env" >&2
  "$env/bin/python" -m pip install --disable-pip-version-check --no-compile -q "$@" >&2
  printf '%s\n' "$@" >"$env/pins.txt"
}

# Makes `venv` a thin venv over the shared one `base`: its own site-packages (where the wheel and anything installed
# into it later go) comes first, then base's, added by a .pth file; base's commands are copied into its bin/, those
# that run Python made to run this venv's. A venv of the old kind (a full one, or over another base) is replaced.
layered_venv() {
  local venv="$1" base="$2"
  if [[ "$(cat "$venv/shared-env" 2>/dev/null)" == "$base" && -x "$venv/bin/python" ]]; then
    return
  fi
  if [[ -e "$venv" ]]; then
    log "replacing $venv by a venv over $base"
    rm -rf "$venv"
  fi
  "$PYTHON" -m venv --without-pip "$venv"
  "$venv/bin/python" - "$venv" "$base" <<'PY'
import shutil
import sys
import sysconfig
from pathlib import Path

venv, base = Path(sys.argv[1]).absolute(), Path(sys.argv[2])
base_site = next((base / "lib").glob("python*/site-packages"))
own_site = Path(sysconfig.get_path("purelib"))
# addsitedir (unlike a plain path line) also runs the .pth files of base's site-packages.
(own_site / "_shared_env.pth").write_text(f"import site; site.addsitedir({str(base_site)!r})\n")
shebang = f"#!{base}/bin/python".encode()
for entry in sorted((base / "bin").iterdir()):
    target = venv / "bin" / entry.name
    if entry.name.startswith(("python", "activate", "Activate")) or entry.is_dir() or target.exists():
        continue
    data = entry.read_bytes()
    if data.startswith(shebang):
        rest = data.partition(b"\n")[2]
        target.write_bytes(f"#!{venv}/bin/python".encode() + b"\n" + rest)
    elif b"\0" in data[:4096]:
        target.symlink_to(entry)  # a native program (ruff): the same wherever it is started from
        continue
    else:
        shutil.copyfile(entry, target)  # a shell script (pyspark's) that finds its neighbours from its own path
    target.chmod(entry.stat().st_mode)
PY
  printf '%s\n' "$base" >"$venv/shared-env"
}

# Builds tests/kcl-app with Maven into `built` (its jar, written last, and its dependency/ folder).
# Builds a test program under tests/ (its own pom, not a module of ours) into the shared cache: $1 its folder, $2 the
# cache folder; the jar is named after the folder.
build_test_app() {
  local app="$1" built="$2" name
  name="$(basename "$app")"
  log "building $app with Maven into $built"
  # Links of an earlier build: Maven must not write through them into the cache.
  rm -rf "$app/target/dependency" "$app/target/$name.jar"
  mvn -B -ntp -q -f "$app/pom.xml" package >&2
  mkdir -p "$built"
  cp -r "$app/target/dependency" "$built/dependency"
  cp "$app/target/$name.jar" "$built/$name.jar.part"
  mv "$built/$name.jar.part" "$built/$name.jar"
}

# Gathers the jars that scripts/delta-lake/pom.xml names (without their dependencies, which Spark has) into `dir`.
fetch_delta_lake() {
  local dir="$1"
  log "gathering Delta Lake's jars from Maven Central into $dir"
  mvn -B -ntp -q -f scripts/delta-lake/pom.xml dependency:copy-dependencies -DexcludeTransitive=true \
    -DoutputDirectory="$dir" >&2
  touch "$dir/complete"
}

# --- .venv -------------------------------------------------------------------------------------
if ((!only_lines)); then
  if ((demo_only)); then
    layered_venv .venv "$(shared_env ".venv (demo)" "${DEMO_PINS[@]}")"
  else
    layered_venv .venv "$(shared_env .venv "${VENV_PINS[@]}")"
  fi

  if ((with_benchmarks)); then
    install_pins .venv/bin/python ".venv (benchmarks)" "${BENCHMARK_PINS[@]}"
  fi

  # The package's version file comes from the pom (never typed by hand).
  "$PYTHON" scripts/pominfo.py write-version python/src/spark_kinesis/_version.py

  # Make `import spark_kinesis` work for the tests. An editable install is enough until
  # scripts/build.sh installs the real wheel (with the jar inside); never replace that wheel here.
  if ! .venv/bin/python -c 'from importlib import metadata; metadata.version("spark-kinesis")' 2>/dev/null; then
    log "installing spark_kinesis (editable) into .venv"
    .venv/bin/python -m pip install --disable-pip-version-check -q --no-build-isolation --no-deps -e python
  else
    log ".venv: spark_kinesis present"
  fi

  # --- kinesis-local (npm) -------------------------------------------------------------------------
  KL_PKG=".tools/node_modules/kinesis-local/package.json"
  kl_have="$(node -p "require('./${KL_PKG}').version" 2>/dev/null || true)"
  if [[ "$kl_have" != "$KINESIS_LOCAL_VERSION" ]]; then
    log "installing kinesis-local@${KINESIS_LOCAL_VERSION} into .tools"
    mkdir -p .tools
    npm install --prefix .tools --no-audit --no-fund --save-exact --loglevel=error \
      "kinesis-local@${KINESIS_LOCAL_VERSION}" >&2
  else
    log ".tools: kinesis-local ${kl_have} present"
  fi

  if ((demo_only)); then
    log "done (demo: spark ${SPARK_VERSION})"
    exit 0
  fi

  # --- ministack (own venv: its dependencies must not mix with the test venv) -----------------------
  layered_venv .tools/ministack-venv "$(shared_env .tools/ministack-venv "ministack==${MINISTACK_VERSION}")"

  # --- moto's server (own venv): the Glue Schema Registry API, which ministack lacks ----------------
  layered_venv .tools/moto-venv "$(shared_env .tools/moto-venv "moto[server]==${MOTO_VERSION}")"

  # --- test programs (their own poms, not modules of ours): tests/kcl-app, a real KCL 3.x consumer for
  # tests/test_kcl3_handover.py and tests/test_sink.py; tests/gsr-app, the Glue Schema Registry serde library for
  # tests/test_glue_schema_registry.py. Each is built with Maven once per content of its pom and sources, into the
  # shared cache; its target/<name>.jar and target/dependency/ link there.
  for app in tests/kcl-app tests/gsr-app; do
    name="$(basename "$app")"
    built="$DEV_CACHE/$name/$(cd "$app" && find pom.xml src -type f | sort | xargs sha256sum | sha256sum | cut -c1-16)"
    in_cache "$built" "$name.jar" build_test_app "$app" "$built"
    link_to "$built/dependency" "$app/target/dependency"
    link_to "$built/$name.jar" "$app/target/$name.jar"
    log "$app: built (in $built)"
  done

  # --- Delta Lake's jars, for the MERGE INTO test of examples/dynamodb_changes_merge.py (the default line's Spark) ------
  delta="$DEV_CACHE/delta-lake/$(sha256sum scripts/delta-lake/pom.xml | cut -c1-12)"
  in_cache "$delta" complete fetch_delta_lake "$delta"
  link_to "$delta" .tools/delta-lake
  log ".tools/delta-lake: $(cd "$delta" && ls -- *.jar | tr '\n' ' ')"

fi

# --- the other Spark lines (--lines) -------------------------------------------------------------
# Creates (or completes) .tools/lines/<name>/venv with pyspark==<version> and the test pins, plus pyspark's
# "pipelines" extra where that pyspark has Spark Declarative Pipelines (4.1 and newer).
line_venv() {
  local name="$1" pyspark="$2" venv=".tools/lines/$1/venv"
  local extra=()
  has_pipelines "$pyspark" && extra=("${PIPELINES_PINS[@]}")
  layered_venv "$venv" "$(shared_env "$venv" "pyspark==${pyspark}" "${TEST_PINS[@]}" "${extra[@]}")"
}

# Whether a Spark version (major.minor...) has Spark Declarative Pipelines: 4.1 and newer.
has_pipelines() {
  local major="${1%%.*}" rest="${1#*.}"
  local minor="${rest%%.*}"
  ((major > 4 || (major == 4 && minor >= 1)))
}

# A SPARK_HOME for a Spark release and Scala version that no pyspark on PyPI ships: the release's jars from Maven
# Central and the launch scripts of the (same release's) pyspark in the line's venv. Made once into the shared cache
# (keyed by the release, the Scala version and scripts/spark-home/pom.xml); the clone's .tools/lines/<line>/spark-home
# links to it.
spark_home() {
  local name="$1" spark="$2" scala_binary="$3" link=".tools/lines/$1/spark-home"
  local home
  home="$DEV_CACHE/spark-homes/spark-${spark}-scala${scala_binary}-$(sha256sum scripts/spark-home/pom.xml | cut -c1-12)"
  in_cache "$home" complete make_spark_home "$home" "$name" "$spark" "$scala_binary"
  link_to "$home" "$link"
  log "$link: Spark ${spark} for Scala ${scala_binary} (in $home)"
}

make_spark_home() {
  local home="$1" name="$2" spark="$3" scala_binary="$4"
  log "gathering Spark ${spark} for Scala ${scala_binary} from Maven Central into $home"
  mvn -B -ntp -q -f scripts/spark-home/pom.xml dependency:copy-dependencies -Dspark.version="$spark" \
    -Dscala.binary.version="$scala_binary" -DoutputDirectory="$home/jars" -DincludeScope=runtime >&2
  local pyspark_dir
  pyspark_dir="$(".tools/lines/$name/venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
  cp -r "$pyspark_dir/bin" "$home/bin"
  touch "$home/complete"
}

if ((with_lines)); then
  default_dir="$("$PYTHON" scripts/pominfo.py default-line)"
  while read -r dir _artifact spark _scala scala_binary; do
    name="${dir#lines/}"
    [[ "$dir" == "$default_dir" ]] && continue
    line_venv "$name" "$spark"
    # pyspark on PyPI carries Spark's Scala 2.12 build for 3.x and 2.13 for 4.x.
    default_scala=2.13
    [[ "$spark" == 3.* ]] && default_scala=2.12
    [[ "$scala_binary" != "$default_scala" ]] && spark_home "$name" "$spark" "$scala_binary"
  done < <("$PYTHON" scripts/pominfo.py lines)
  unbuilt="$("$PYTHON" scripts/pominfo.py get pyspark.unbuilt.line)"
  line_venv "pyspark${unbuilt}" "$unbuilt"
fi

log "done (spark ${SPARK_VERSION})"
