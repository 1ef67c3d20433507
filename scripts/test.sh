#!/usr/bin/env bash
# Runs every test: installs what is missing, builds and tests every Spark line with Maven (format check, the Scala
# unit suites of each line, the jars), builds and installs the wheel, lints and type-checks the Python package,
# runs the smoke set on every Spark line but the default one (scripts/test-lines.sh), then the whole pytest suite
# on the default line (unit tests, and end-to-end tests that start the local emulators themselves).
#
#   scripts/test.sh                 everything
#   scripts/test.sh -k restart      extra arguments go to pytest; the other lines' smoke runs are then skipped
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '\n[test] %s\n' "$*" >&2; }

other_lines=1
(($#)) && other_lines=0

log "setup"
if ((other_lines)); then scripts/setup.sh --lines; else scripts/setup.sh; fi

# deploy = install, then a copy into target/staging-repository (the pom's altDeploymentRepository, never a remote
# one): the Maven repository that tests/test_packages.py resolves from and scripts/release.sh bundles.
log "maven: format check, then for every Spark line: compile, Scala unit suites, jars (in ~/.m2 and target/staging-repository)"
mvn -B -ntp deploy

log "wheel with the jars inside"
scripts/build.sh --no-maven

log "python: ruff (package, tests, benchmarks, examples) and mypy --strict (package)"
(cd python && ../.venv/bin/ruff check . && ../.venv/bin/ruff format --check . && ../.venv/bin/mypy --strict)
.venv/bin/ruff check tests benchmarks examples

if ((other_lines)); then
  log "smoke set on the other Spark lines"
  scripts/test-lines.sh
fi

log "pytest (default line)"
exec .venv/bin/pytest -q --durations=25 "$@"  # the slowest tests end the log, where CI time is cut
