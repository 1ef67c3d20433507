#!/usr/bin/env bash
# One command for the benchmark table: installs and builds what is missing, then measures.
#   benchmarks/run.sh [--records N] [--size BYTES] [--shards N]   read throughput, latency, then the write table
# The write table (sink next to the bare KPL) writes WRITE_ROWS rows of 100 B (default 100000); the idle scenario
# watches an idle 4-shard stream for IDLE_MINUTES (default 10) and prints API calls per minute by type.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/setup.sh
JAR="$(python3 scripts/pominfo.py jar)"
[[ -f "$JAR" ]] || scripts/build.sh
.venv/bin/python -c 'import spark_kinesis' 2>/dev/null || scripts/build.sh --no-maven
.venv/bin/python benchmarks/read_throughput.py --jar "$JAR" "$@"
.venv/bin/python benchmarks/latency.py --jar "$JAR" "$@"
.venv/bin/python benchmarks/write_throughput.py --jar "$JAR" --rows "${WRITE_ROWS:-100000}"
.venv/bin/python benchmarks/idle_calls.py --minutes "${IDLE_MINUTES:-10}"
