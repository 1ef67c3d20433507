#!/usr/bin/env bash
# One command, one table: installs and builds what is missing, runs every benchmark scenario against its
# baseline in the same run, then prints the table in Markdown with the run's conditions (benchmarks/report.py: what
# benchmarks/README.md's recorded results show; each scenario also prints its own details on the way). The results file
# (JSON lines) is kept: its path is printed at the end.
#
#   benchmarks/run.sh [--records N] [--size BYTES] [--shards N]
#   benchmarks/run.sh soak [--minutes N ...]    only the soak run (an hour by default; not in the default set):
#                                               benchmarks/soak.py, whose options follow "soak"
#
# Environment: WRITE_ROWS (sink rows, default 100000), WRITE_LATENCY_SECONDS (sink latency runs, default 30; 0: none),
# IDLE_MINUTES (idle scenario, default 10),
# LATENCY_RATES / LATENCY_SECONDS (steady input of the latency scenario, default 1000 and 10000 records/s for 20 s),
# BACKLOG_GB (default 1), AFFINITY_SECONDS (each run of the cluster scenario, default 60), MANY_SHARDS (shard
# counts of the grouping scenario, default 16,256,1024). Scenarios and
# conditions: benchmarks/README.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
soak=0
if [[ "${1:-}" == soak ]]; then
  soak=1
  shift
  scripts/setup.sh --benchmarks
else
  scripts/setup.sh
fi
# The baselines (bare SDK and KPL loops in Java) run on the shaded libraries of the shared deps jar; the connector
# runs on the default Spark line (the .venv's pyspark), and one read scenario on Spark 3.5.
# When every line's jar is already built (scripts/test.sh or scripts/build.sh ran), the wheel keeps carrying every
# line, so the tests that check the installed wheel still pass after a benchmark run; otherwise only the two lines
# the benchmarks use are built.
JAR="$(python3 scripts/pominfo.py deps-jar)"
all_built=1
[[ -f "$JAR" ]] || all_built=0
while read -r line _; do
  [[ -f "$(python3 scripts/pominfo.py line-jar "${line#lines/}")" ]] || all_built=0
done < <(python3 scripts/pominfo.py lines)
if ((all_built)); then
  scripts/build.sh --no-maven
else
  scripts/build.sh --line "$(python3 scripts/pominfo.py default-line)" --line spark3.5_2.12
fi
if ((soak)); then
  exec .venv/bin/python benchmarks/soak.py "$@"
fi
RESULTS="$(mktemp -t spark-kinesis-bench.XXXXXX.jsonl)"
PY=.venv/bin/python
$PY benchmarks/results.py conditions "$RESULTS"
$PY benchmarks/read_throughput.py --jar "$JAR" --results "$RESULTS" "$@"
# The same read on Spark 3.5 (Scala 2.12: EMR 7, Glue 5), with that line's pyspark and jar, against its own
# baseline of the same run.
scripts/setup.sh --lines
LINE35=.tools/lines/spark3.5_2.12/venv/bin/python
$LINE35 -m pip install --disable-pip-version-check -q --no-deps --force-reinstall \
  "dist/spark_kinesis-$(python3 scripts/pominfo.py get version)-py3-none-any.whl"
$LINE35 benchmarks/read_throughput.py --jar "$JAR" --results "$RESULTS" --spark-line-row "$@"
$PY benchmarks/latency.py --jar "$JAR" --results "$RESULTS" \
  --rates "${LATENCY_RATES:-1000,10000}" --seconds "${LATENCY_SECONDS:-20}"
$PY benchmarks/write_throughput.py --jar "$JAR" --results "$RESULTS" --rows "${WRITE_ROWS:-100000}" \
  --latency-seconds "${WRITE_LATENCY_SECONDS:-30}"
$PY benchmarks/backlog.py --results "$RESULTS" --gigabytes "${BACKLOG_GB:-1}"
$PY benchmarks/idle_calls.py --results "$RESULTS" --minutes "${IDLE_MINUTES:-10}"
$PY benchmarks/affinity.py --results "$RESULTS" --seconds "${AFFINITY_SECONDS:-60}"
$PY benchmarks/metadata_calls.py --results "$RESULTS"
$PY benchmarks/many_shards.py --results "$RESULTS" --shards "${MANY_SHARDS:-16,256,1024}"
echo
echo "== spark-kinesis benchmarks ($(python3 scripts/pominfo.py jar | xargs basename); results: $RESULTS) =="
$PY benchmarks/report.py "$RESULTS"
