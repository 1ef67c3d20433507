#!/usr/bin/env bash
# The working tree against commit BASE, in one run: builds the default Spark line's jars of both (BASE in a
# temporary git worktree), then runs benchmarks/compare.py, which reads the same streams with both builds taking
# turns and prints one table of new/base ratios. Use it whenever main code changes, and quote its table.
#
#   benchmarks/compare.sh BASE [--records N] [--rounds N] [--seconds N]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
[[ $# -ge 1 && "$1" != -* ]] || { echo "usage: benchmarks/compare.sh BASE [compare.py options]" >&2; exit 2; }
BASE="$(git rev-parse --verify "$1^{commit}")"
shift
scripts/setup.sh
LINE="$(python3 scripts/pominfo.py default-line)"
LINE="${LINE#lines/}"
jars_of() { # the line jar and the deps jar of the checkout in $1, comma-separated
  (cd "$1" && echo "$(python3 scripts/pominfo.py line-jar "$LINE"),$(python3 scripts/pominfo.py deps-jar)")
}
echo "[compare] building the working tree's $LINE jars" >&2
scripts/build.sh --jars-only --line "$LINE"
WORKTREE="$(mktemp -d -t spark-kinesis-base.XXXXXX)"
trap 'git worktree remove --force "$WORKTREE" >/dev/null 2>&1 || rm -rf "$WORKTREE"' EXIT
git worktree add --detach --quiet "$WORKTREE" "$BASE"
echo "[compare] building $LINE jars of ${BASE:0:10}" >&2
(cd "$WORKTREE" && scripts/build.sh --jars-only --line "$LINE")
.venv/bin/python benchmarks/compare.py --base-jars "$(jars_of "$WORKTREE")" --jars "$(jars_of "$ROOT")" "$@"
