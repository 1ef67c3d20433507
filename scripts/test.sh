#!/usr/bin/env bash
# Runs every test: installs what is missing, then lints and type-checks the Python package, while Maven checks the
# format and builds the shared deps jar; builds and tests every Spark line with Maven (the Scala unit suites of each
# line, the jars; two lines at a time), builds and installs the wheel, then runs at the same time the smoke set on
# every Spark line but the default one (scripts/test-lines.sh, two lines at a time) and the whole pytest suite on the
# default line (unit tests, and end-to-end tests that start the local emulators themselves), the latter in two
# pytest workers. Prints the time of each phase at the end.
#
#   scripts/test.sh                 everything, as CI runs it (.ci/run)
#   scripts/test.sh --quick         the edit loop: the default line's compile and Scala unit suites, its jar in the
#                                   wheel, and the pytest tests that need neither Spark nor an emulator
#   scripts/test.sh -k restart      extra arguments go to pytest; the other lines' smoke runs are then skipped
#
# PYTEST_WORKERS (default 2) sets how many pytest processes share the default line's suite; 0 runs it in one.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '\n[test] %s\n' "$*" >&2; }

source scripts/phases.sh
trap 'phase_report test' EXIT

quick=0
if [[ "${1:-}" == "--quick" ]]; then
  quick=1
  shift
fi
other_lines=1
(($#)) && other_lines=0
default_line="$(python3 scripts/pominfo.py default-line)"

if ((quick)); then
  log "setup"
  scripts/setup.sh
  phase_done setup
  # The shared deps jar of an earlier build (in deps/target and ~/.m2) when it is newer than the poms; else it is
  # built here too (its shading takes about half a minute).
  version="$(python3 scripts/pominfo.py get version)"
  deps_jar="$(python3 scripts/pominfo.py deps-jar)"
  installed="$HOME/.m2/repository/io/sparkkinesis/spark-kinesis-deps/$version/spark-kinesis-deps-$version.jar"
  modules=("$default_line")
  for jar in "$deps_jar" "$installed"; do
    [[ -f "$jar" && "$jar" -nt deps/pom.xml && "$jar" -nt pom.xml ]] || modules=(deps "$default_line")
  done
  log "maven (${modules[*]}): compile, Scala unit suites, jar"
  mvn -B -ntp -q install -Dscaladoc.skip=true -Dmaven.source.skip=true -pl "$(IFS=,; echo "${modules[*]}")"
  phase_done maven
  scripts/build.sh --no-maven --line "${default_line#lines/}"
  phase_done wheel
  log "pytest: the tests that need neither Spark nor an emulator"
  .venv/bin/pytest -q -m unit "$@"
  phase_done pytest
  exit 0
fi

mkdir -p target
# deploy = install, then a copy into target/staging-repository (the pom's altDeploymentRepository, never a remote
# one): the Maven repository that tests/test_packages.py resolves from and scripts/release.sh bundles.
# First the format check and the shared deps jar, which need nothing that setup installs, beside the setup (warm, it
# takes seconds: its venvs are thin layers over the shared cache) and then the Python lint, which needs only what
# setup installs. The Scala suites of the lines need setup's ministack.
log "setup, then the Python lint (their output: target/setup.log, printed when they end), beside Maven: format check and the shared deps jar"
lint() {
  (cd python && ../.venv/bin/ruff check . && ../.venv/bin/ruff format --check . && ../.venv/bin/mypy --strict) &&
    .venv/bin/ruff check tests benchmarks examples
}
{ scripts/setup.sh && log "python: ruff (package, tests, benchmarks, examples) and mypy --strict (package)" && lint; } \
  >target/setup.log 2>&1 &
setup_pid=$!
maven_status=0
mvn -B -ntp deploy -pl deps -am || maven_status=$?
setup_status=0
wait "$setup_pid" || setup_status=$?
cat target/setup.log >&2
((setup_status == 0)) || { echo "[test] setup or lint failed" >&2; exit 1; }
((maven_status == 0)) || { echo "[test] maven (format check, deps) failed" >&2; exit 1; }
phase_done "setup and lint beside format check and deps"

setup_lines_pid=""
if ((other_lines)); then
  # The other lines' venvs (mostly unpacking pyspark) are installed while Maven compiles: only the smoke sets use them.
  log "setup of the other Spark lines, in the background (its output: target/setup-lines.log)"
  scripts/setup.sh --only-lines >target/setup-lines.log 2>&1 &
  setup_lines_pid=$!
fi

# Two line builds at a time: a line's compile keeps about one core busy (.mvn/jvm.config). A third at a time took
# longer. The lines find the deps jar in ~/.m2, where the first step installed it.
log "maven: for every Spark line: compile, Scala unit suites, jars (in ~/.m2 and target/staging-repository)"
mvn -B -ntp -T 2 deploy -pl "$(python3 scripts/pominfo.py lines | awk '{print $1}' | paste -sd,)"
phase_done "maven (lines)"
if [[ -n "$setup_lines_pid" ]]; then
  setup_lines_status=0
  wait "$setup_lines_pid" || setup_lines_status=$?
  cat target/setup-lines.log >&2
  ((setup_lines_status == 0)) || { echo "[test] the other lines' setup failed" >&2; exit 1; }
  phase_done "setup of the other lines (after maven)"
fi

log "wheel with the jars inside"
scripts/build.sh --no-maven
phase_done wheel

lines_pids=()
if ((other_lines)); then
  # Beside the default line's pytest run: most of either is spent waiting on emulators, triggers and JVM starts. Two
  # shards of the lines at a time: one after the other, the smoke sets took as long as the whole default suite.
  log "smoke sets on the other Spark lines, two lines at a time, in the background (their output: target/test-lines-*.log, printed when they end)"
  for shard in 1 2; do
    scripts/test-lines.sh --shard "$shard/2" >"target/test-lines-$shard.log" 2>&1 &
    lines_pids+=($!)
  done
fi

# Two workers: a third (2026-11-28, clean clone) kept both cores busy to the end, but its own session, emulators and
# contention cost as much CPU as it filled (32:26 against 32:20 in all).
workers="${PYTEST_WORKERS:-2}"
log "pytest (default line, $workers workers)"
xdist=()
# Whole modules to a worker, in the order of collection, which tests/conftest.py sorts longest first: without
# --no-loadscope-reorder, xdist would hand out the modules with the most tests first, and the long ones with few
# tests (the cluster's, the pipelines') would end the run in one worker while the other waits.
((workers > 0)) && xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
pytest_status=0
# The slowest tests end the log, where CI time is cut.
.venv/bin/pytest -q "${xdist[@]}" --durations=25 "$@" || pytest_status=$?
phase_done pytest

lines_status=0
if ((${#lines_pids[@]})); then
  for pid in "${lines_pids[@]}"; do
    wait "$pid" || lines_status=$?
  done
  phase_done "smoke sets (after pytest)"
  for shard in 1 2; do
    log "smoke sets of the other lines, shard $shard/2 (from target/test-lines-$shard.log)"
    cat "target/test-lines-$shard.log" >&2
  done
fi
((pytest_status == 0 && lines_status == 0))
