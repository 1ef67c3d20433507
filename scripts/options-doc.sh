#!/usr/bin/env bash
# Regenerates docs/options.md from the option table inside the built jar (target/), with the Python
# package's renderer. tests/test_options_table.py fails when the checked-in file is stale.
#
#   scripts/options-doc.sh          rewrite docs/options.md
#   scripts/options-doc.sh --check  exit 1 (and show the diff) if docs/options.md is stale
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
JAR="$(python3 scripts/pominfo.py jar)"
[[ -f "$JAR" ]] || { echo "options-doc: $JAR is missing; run scripts/build.sh first" >&2; exit 1; }
PY=.venv/bin/python
[[ -x "$PY" ]] || PY=python3
fresh="$(mktemp)"
trap 'rm -f "$fresh"' EXIT
PYTHONPATH=python/src "$PY" - "$JAR" >"$fresh" <<'PY'
import sys
from spark_kinesis.option_table import load_option_table, render_markdown
sys.stdout.write(render_markdown(load_option_table(sys.argv[1])))
PY
if [[ "${1:-}" == "--check" ]]; then
  diff -u docs/options.md "$fresh" || { echo "options-doc: docs/options.md is stale; run scripts/options-doc.sh" >&2; exit 1; }
  exit 0
fi
cp "$fresh" docs/options.md
echo "options-doc: wrote docs/options.md" >&2
