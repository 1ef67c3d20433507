#!/usr/bin/env bash
# The demo, end to end on this machine: install only what it needs (pyspark, boto3, kinesis-local), build the
# default Spark line's jars and the wheel, start the local Kinesis emulator, run a PySpark streaming job that reads
# page-view events and counts them per page, and stop everything (also on failure or Ctrl-C). Prints the time of
# each phase at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

phases=()
phase_started=$SECONDS
# Ends the running phase: records its name and seconds.
phase_done() {
  phases+=("$1 $((SECONDS - phase_started))s")
  phase_started=$SECONDS
}
report() {
  ((${#phases[@]})) && echo "[demo] phases: ${phases[*]}; total ${SECONDS}s" >&2
}

scripts/setup.sh --demo
phase_done install
# The .venv's pyspark is the default line's; the other lines are built and tested by scripts/test.sh.
scripts/build.sh --jars-only --line "$(python3 scripts/pominfo.py default-line)"
phase_done build

endpoint="$(scripts/emulator.sh start kinesis-local)"
trap 'scripts/emulator.sh stop kinesis-local >/dev/null 2>&1 || true; report' EXIT
echo "[demo] kinesis-local emulator at $endpoint"
phase_done emulator

# Dummy credentials: the emulator accepts any; the connector uses the AWS default chain.
export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1
.venv/bin/python examples/clickstream_demo.py --endpoint "$endpoint" "$@"
phase_done job
