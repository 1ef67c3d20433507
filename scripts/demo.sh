#!/usr/bin/env bash
# The demo, end to end on this machine: install only what it needs (pyspark, boto3, kinesis-local) while the
# default Spark line's jars build, make the wheel, start the local Kinesis emulator, run a PySpark streaming job
# that reads page-view events and counts them per page, and stop everything (also on failure or Ctrl-C). Prints
# the time of each phase at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

source scripts/phases.sh

# The install (downloads, mostly) runs while Maven builds the jars (compiling, mostly): both at once.
mkdir -p .run
(
  started=$SECONDS
  scripts/setup.sh --demo >.run/demo-install.log 2>&1
  echo $((SECONDS - started)) >.run/demo-install.seconds
) &
install_pid=$!
# The .venv's pyspark is the default line's; the other lines are built and tested by scripts/test.sh.
line="$(python3 scripts/pominfo.py default-line)"
scripts/build.sh --jars-only --line "$line"
phase_done "build (beside the install)"
if ! wait "$install_pid"; then
  cat .run/demo-install.log >&2
  exit 1
fi
cat .run/demo-install.log >&2
phase_add install "$(cat .run/demo-install.seconds)"
phase_started=$SECONDS  # the wait for the install is in its own time
scripts/build.sh --no-maven --line "$line"
phase_done wheel

endpoint="$(scripts/emulator.sh start kinesis-local)"
trap 'scripts/emulator.sh stop kinesis-local >/dev/null 2>&1 || true; phase_report demo' EXIT
echo "[demo] kinesis-local emulator at $endpoint"
phase_done emulator

# Dummy credentials: the emulator accepts any; the connector uses the AWS default chain.
export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1
.venv/bin/python examples/clickstream_demo.py --endpoint "$endpoint" "$@"
phase_done job
