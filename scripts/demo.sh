#!/usr/bin/env bash
# The demo, end to end on this machine: install, build the default Spark line's jar and the wheel, start the local Kinesis
# emulator, run a PySpark streaming job that reads page-view events and counts them per page, and
# stop everything (also on failure or Ctrl-C).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/setup.sh
# The .venv's pyspark is the default line's; the other lines are built and tested by scripts/test.sh.
scripts/build.sh --line "$(python3 scripts/pominfo.py default-line)"

endpoint="$(scripts/emulator.sh start kinesis-local)"
trap 'scripts/emulator.sh stop kinesis-local >/dev/null 2>&1 || true' EXIT
echo "[demo] kinesis-local emulator at $endpoint"

# Dummy credentials: the emulator accepts any; the connector uses the AWS default chain.
export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1
.venv/bin/python examples/clickstream_demo.py --endpoint "$endpoint" "$@"
