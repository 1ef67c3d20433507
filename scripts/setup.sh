#!/usr/bin/env bash
# Installs everything the Python tests and the emulators need. Safe to run again:
# each step first checks what is already there and does nothing when it matches.
#
#   .venv/                      pyspark (same version as <spark.version> in pom.xml), test and lint tools,
#                               and the spark_kinesis package (editable, until scripts/build.sh installs the wheel)
#   .tools/node_modules/        kinesis-local (the kinesis-mock emulator, as an npm package)
#   .tools/ministack-venv/      ministack (a multi-service AWS emulator), in a venv of its own
#
# It does not build the jar: scripts/build.sh does that.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
KINESIS_LOCAL_VERSION="0.6.2"
MINISTACK_VERSION="1.5.33"

SPARK_VERSION="$("$PYTHON" scripts/pominfo.py get spark.version)"

# Everything in .venv is pinned; pyspark follows the pom.
VENV_PINS=(
  "pyspark==${SPARK_VERSION}"
  "pytest==9.2.0"
  "boto3==1.44.5"
  "build==1.6.1"
  "wheel==0.48.0"
  "setuptools==65.5.0"
  "aws-kinesis-agg==1.2.3"
  "protobuf==7.36.2"
  "mypy==2.4.1"
  "ruff==0.17.6"
  "hpack==4.2.0"
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

# --- .venv -------------------------------------------------------------------------------------
if [[ ! -x .venv/bin/python ]]; then
  log "creating .venv"
  "$PYTHON" -m venv .venv
fi
mapfile -t todo < <(missing_pins .venv/bin/python "${VENV_PINS[@]}")
if ((${#todo[@]})); then
  log "installing into .venv: ${todo[*]}"
  .venv/bin/python -m pip install --disable-pip-version-check -q "${VENV_PINS[@]}"
else
  log ".venv: all pins present"
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

# --- ministack (own venv: its dependencies must not mix with the test venv) -----------------------
if [[ ! -x .tools/ministack-venv/bin/python ]]; then
  log "creating .tools/ministack-venv"
  "$PYTHON" -m venv .tools/ministack-venv
fi
mapfile -t todo < <(missing_pins .tools/ministack-venv/bin/python "ministack==${MINISTACK_VERSION}")
if ((${#todo[@]})); then
  log "installing ministack==${MINISTACK_VERSION} into .tools/ministack-venv"
  .tools/ministack-venv/bin/python -m pip install --disable-pip-version-check -q "ministack==${MINISTACK_VERSION}"
else
  log ".tools: ministack ${MINISTACK_VERSION} present"
fi

log "done (spark ${SPARK_VERSION})"
