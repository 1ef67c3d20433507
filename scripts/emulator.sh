#!/usr/bin/env bash
# Start, stop or inspect a local Kinesis emulator (a thin wrapper over tests/harness/emulators.py).
#
#   scripts/emulator.sh start kinesis-local     prints the endpoint, e.g. http://127.0.0.1:41234
#   scripts/emulator.sh start ministack [--port 4566] [--timeout 60]
#   scripts/emulator.sh status kinesis-local
#   scripts/emulator.sh stop kinesis-local
#   scripts/emulator.sh measure kinesis-local   behaviour checks + a small throughput measurement
#
# The pid, endpoint and log live under .run/ (.run/<kind>.json, .run/<kind>.endpoint, .run/<kind>-<port>.log).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
[[ -x "$PY" ]] || { echo "error: $PY missing; run scripts/setup.sh" >&2; exit 1; }
export PYTHONPATH="$ROOT/tests${PYTHONPATH:+:$PYTHONPATH}"
if [[ "${1:-}" == "measure" ]]; then
  shift
  exec "$PY" -m harness.measure "$@"
fi
exec "$PY" -m harness.emulators "$@"
