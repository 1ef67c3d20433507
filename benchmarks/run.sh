#!/usr/bin/env bash
# One command, one table: installs and builds what is missing, runs every benchmark scenario against its
# baseline in the same run, then prints the table (each scenario also prints its own details on the way).
#
#   benchmarks/run.sh [--records N] [--size BYTES] [--shards N]
#
# Environment: WRITE_ROWS (sink rows, default 100000), IDLE_MINUTES (idle scenario, default 10),
# LATENCY_RATE / LATENCY_SECONDS (steady input of the latency scenario, default 1000 records/s for 20 s),
# BACKLOG_GB (default 1). Scenarios and conditions: benchmarks/README.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/setup.sh
# The baselines (bare SDK and KPL loops in Java) run on the shaded libraries of the shared deps jar; the connector
# runs on the default Spark line (the .venv's pyspark).
DEFAULT_LINE="$(python3 scripts/pominfo.py default-line)"
JAR="$(python3 scripts/pominfo.py deps-jar)"
[[ -f "$JAR" && -f "$(python3 scripts/pominfo.py jar)" ]] || scripts/build.sh --line "$DEFAULT_LINE"
.venv/bin/python -c 'import spark_kinesis' 2>/dev/null || scripts/build.sh --no-maven
RESULTS="$(mktemp -t spark-kinesis-bench.XXXXXX.jsonl)"
PY=.venv/bin/python
$PY benchmarks/read_throughput.py --jar "$JAR" --results "$RESULTS" "$@"
$PY benchmarks/latency.py --jar "$JAR" --results "$RESULTS" \
  --rate "${LATENCY_RATE:-1000}" --seconds "${LATENCY_SECONDS:-20}"
$PY benchmarks/write_throughput.py --jar "$JAR" --results "$RESULTS" --rows "${WRITE_ROWS:-100000}"
$PY benchmarks/backlog.py --results "$RESULTS" --gigabytes "${BACKLOG_GB:-1}"
$PY benchmarks/idle_calls.py --results "$RESULTS" --minutes "${IDLE_MINUTES:-10}"
echo
echo "== spark-kinesis benchmarks ($(nproc) cores, $(java -version 2>&1 | head -1), $(python3 scripts/pominfo.py jar | xargs basename)) =="
$PY benchmarks/report.py "$RESULTS"
