#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the shaded jar with the Scala unit suites and the
# format check, installs the wheel, lints and type-checks the Python package, then runs pytest
# (unit tests, and end-to-end tests that start the local emulators themselves).
#
#   scripts/test.sh                 everything
#   scripts/test.sh -k restart      extra arguments go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '\n[test] %s\n' "$*" >&2; }

log "setup"
scripts/setup.sh

log "maven: format check, compile, Scala unit suites, shaded jar"
mvn -B -ntp package

log "wheel with the jar inside"
scripts/build.sh --no-maven

log "python: ruff (package, tests, benchmarks, examples) and mypy --strict (package)"
(cd python && ../.venv/bin/ruff check . && ../.venv/bin/ruff format --check src && ../.venv/bin/mypy --strict)
.venv/bin/ruff check tests benchmarks examples

log "pytest"
exec .venv/bin/pytest -q "$@"
