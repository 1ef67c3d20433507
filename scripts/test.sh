#!/usr/bin/env bash
# Runs every test: installs what is missing, then lints and type-checks the Python package, while Maven checks the
# format and builds the shared deps jar; builds and tests the default Spark line and one other with Maven (their
# Scala unit suites, their jars), then runs the default line's pytest suite in two workers while, beside it, Maven
# builds and tests the other lines, the wheel takes every jar, and then the tests that need every line's jar run
# beside the smoke set on every line but the default one (scripts/test-lines.sh, two lines at a time). Prints the
# time of each phase at the end.
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

# The default line and one other first (two line builds at a time: a line's compile keeps about one core busy,
# .mvn/jvm.config; a third at a time took longer); the lines find the deps jar in ~/.m2, where the first step
# installed it. Then the default line's suite starts while the other lines build beside it: what the default line's
# jar serves, in the first stage; the tests that need every line's jar wait for the second.
mapfile -t lines < <(python3 scripts/pominfo.py lines | awk -v default="$default_line" '$1 != default {print $1}')
first=("$default_line" "${lines[0]}")
rest=("${lines[@]:1}")
log "maven, for ${first[*]}: compile, Scala unit suites, jars (in ~/.m2 and target/staging-repository)"
mvn -B -ntp -T 2 deploy -pl "$(IFS=,; echo "${first[*]}")"
phase_done "maven (${first[*]#lines/})"
scripts/build.sh --no-maven --line "${default_line#lines/}"
phase_done "wheel (default line)"

# Two workers: a third (2026-11-28, clean clone) kept both cores busy to the end, but its own session, emulators and
# contention cost as much CPU as it filled (32:26 against 32:20 in all).
workers="${PYTEST_WORKERS:-2}"
xdist=()
# Whole modules to a worker, in the order of collection, which tests/conftest.py sorts longest first: without
# --no-loadscope-reorder, xdist would hand out the modules with the most tests first, and the long ones with few
# tests (the cluster's, the pipelines') would end the run in one worker while the other waits.
((workers > 0)) && xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
# pytest with the tests of one stage (tests/conftest.py); exit status 5 means that none matched the extra arguments.
run_stage() {
  local status=0
  SPARK_KINESIS_TEST_STAGE="$1" .venv/bin/pytest -q "${@:2}" || status=$?
  ((status == 0 || status == 5)) || return "$status"
}
VERSION="$(python3 scripts/pominfo.py get version)"
WHEEL="dist/spark_kinesis-$VERSION-py3-none-any.whl"

# In the background, meanwhile: the other lines' builds, then the wheel with every jar (into dist/; .venv keeps the
# default line's until the first stage has ended), then beside each other: the second stage of the pytest suite (the
# tests that need every line's jar, in one process that finds the full wheel's package in target/all-lines-site,
# ahead of .venv's), and the smoke sets on every line but the default one, in two shards (most of each is spent
# waiting on emulators, triggers and JVM starts; one after the other, the smoke sets took as long as the whole
# default suite). The other lines' venvs (mostly unpacking pyspark) are installed while Maven compiles: only the
# smoke sets use them.
others() {
  local started=$SECONDS setup_pid status=0 pids=()
  if ((other_lines)); then
    scripts/setup.sh --only-lines >target/setup-lines.log 2>&1 &
    setup_pid=$!
  fi
  mvn -B -ntp -T 2 deploy -pl "$(IFS=,; echo "${rest[*]}")" >target/maven-rest.log 2>&1 ||
    { echo "[test] maven (${rest[*]}) failed: target/maven-rest.log" >&2; return 1; }
  echo "maven_rest $((SECONDS - started))" >target/phases-rest.txt
  scripts/build.sh --no-maven --no-install || return 1
  rm -rf target/all-lines-site
  .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --target target/all-lines-site "$WHEEL"
  started=$SECONDS
  PYTHONPATH="$ROOT/target/all-lines-site" run_stage all-lines "$@" >target/pytest-all-lines.log 2>&1 &
  pids+=($!)
  if ((other_lines)); then
    wait "$setup_pid" || { cat target/setup-lines.log >&2; echo "[test] the other lines' setup failed" >&2; return 1; }
    for shard in 1 2; do
      scripts/test-lines.sh --shard "$shard/2" >"target/test-lines-$shard.log" 2>&1 &
      pids+=($!)
    done
  fi
  for pid in "${pids[@]}"; do
    wait "$pid" || status=$?
  done
  echo "smoke_sets_and_second_stage $((SECONDS - started))" >>target/phases-rest.txt
  return "$status"
}
log "in the background: maven for ${rest[*]}, the wheel with every jar, then the tests that need every line's jar$( ((other_lines)) && echo " and the smoke sets of the other lines in two shards") (output: target/others.log, target/maven-rest.log, target/pytest-all-lines.log, target/test-lines-*.log)"
rm -f target/phases-rest.txt
others "$@" >target/others.log 2>&1 &
others_pid=$!

log "pytest, first stage: the tests that the default line's jar serves ($workers workers)"
pytest_status=0
# The slowest tests end the log, where CI time is cut.
run_stage default-line "${xdist[@]}" --durations=25 "$@" || pytest_status=$?
phase_done "pytest, first stage"

others_status=0
wait "$others_pid" || others_status=$?
phase_done "the rest beside it (after the first stage)"
while read -r name seconds; do phase_add "  beside: $name" "$seconds"; done < <(cat target/phases-rest.txt 2>/dev/null)
cat target/others.log >&2
log "pytest, second stage: the tests that need every line's jar (from target/pytest-all-lines.log)"
cat target/pytest-all-lines.log >&2 || true
if ((other_lines)); then
  for shard in 1 2; do
    log "smoke sets of the other lines, shard $shard/2 (from target/test-lines-$shard.log)"
    cat "target/test-lines-$shard.log" >&2 || true
  done
fi
if ((others_status != 0)); then
  log "the other lines' build, the second stage or a smoke set failed; the other lines' Maven log (target/maven-rest.log):"
  cat target/maven-rest.log >&2 || true
  exit 1
fi
# .venv ends with the wheel of every line, as after scripts/build.sh.
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps --force-reinstall "$WHEEL"
((pytest_status == 0))
