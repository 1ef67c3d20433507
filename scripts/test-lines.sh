#!/usr/bin/env bash
# Smoke-tests the connector on every Spark line other than the default one, each with that line's pyspark from
# PyPI (installed by scripts/setup.sh --lines): the tests marked `smoke` (reads with polling, KPL aggregates and
# enhanced fan-out, a restart from a checkpoint, Trigger.AvailableNow, a sink round trip, the jar that
# configure_spark and `spark-kinesis jar` pick, the line's artifact fetched by `spark-submit --packages` from the
# staging repository of `mvn deploy`, a Spark Declarative Pipeline on 4.1 and newer) run against the local emulators, through the jars that
# spark_kinesis resolves for that pyspark, and check that they are the expected line's.
#
#   scripts/test-lines.sh                       every line (the wheel must be built: scripts/build.sh)
#   scripts/test-lines.sh spark3.5_2.12 ...     some lines (names as under lines/, or pyspark<version>)
#   scripts/test-lines.sh --shard 1/2           every second line of the plan, from the first (scripts/test.sh runs
#                                               two shards at a time)
#   scripts/test-lines.sh -- -k restart         extra arguments after -- go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '\n[test-lines] %s\n' "$*" >&2; }

wanted=()
shard=1
shards=1
while (($#)); do
  case "$1" in
    --) shift; break ;;
    --shard)
      [[ "${2:-}" =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] && ((BASH_REMATCH[1] <= BASH_REMATCH[2])) \
        || { echo "[test-lines] error: --shard takes I/N with 1 <= I <= N, not '${2:-}'" >&2; exit 2; }
      shard="${BASH_REMATCH[1]}"
      shards="${BASH_REMATCH[2]}"
      shift 2 ;;
    *) wanted+=("$1"); shift ;;
  esac
done

VERSION="$(python3 scripts/pominfo.py get version)"
WHEEL="dist/spark_kinesis-${VERSION}-py3-none-any.whl"
[[ -f "$WHEEL" ]] || { echo "[test-lines] error: $WHEEL missing; run scripts/build.sh" >&2; exit 1; }

# name, expected line jar, SPARK_HOME (or "-")
plan=()
default_dir="$(python3 scripts/pominfo.py default-line)"
while read -r dir _artifact _spark _scala _scala_binary; do
  name="${dir#lines/}"
  [[ "$dir" == "$default_dir" ]] && continue
  home="-"
  # The real path (the link's target, in the shared cache): the one the line's class-data archive is made for.
  [[ -d ".tools/lines/$name/spark-home" ]] && home="$(realpath ".tools/lines/$name/spark-home")"
  plan+=("$name $name $home")
done < <(python3 scripts/pominfo.py lines)
plan+=("pyspark$(python3 scripts/pominfo.py get pyspark.unbuilt.line) ${default_dir#lines/} -")

ran=0
passed=()
failed=()
position=0
for entry in "${plan[@]}"; do
  read -r name expected home <<<"$entry"
  position=$((position + 1))
  (((position - shard) % shards == 0)) || continue
  if ((${#wanted[@]})) && [[ " ${wanted[*]} " != *" $name "* ]]; then
    continue
  fi
  venv=".tools/lines/$name/venv"
  [[ -x "$venv/bin/python" ]] || { echo "[test-lines] error: $venv missing; run scripts/setup.sh --lines" >&2; exit 1; }
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-compile -q --no-deps --force-reinstall "$WHEEL"
  pyspark="$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')"
  log "$name: pyspark $pyspark${home:+ }$([[ $home != - ]] && echo "(SPARK_HOME $home)"), expecting the $expected jar"
  env_args=("SPARK_KINESIS_EXPECTED_LINE=$expected")
  [[ "$home" != "-" ]] && env_args+=("SPARK_HOME=$home")
  if env "${env_args[@]}" "$venv/bin/python" -m pytest -q -m smoke -p no:cacheprovider --durations=5 "$@"; then
    passed+=("$name")
  else
    failed+=("$name")
  fi
  ran=$((ran + 1))
done
((ran)) || { echo "[test-lines] error: no line matched: ${wanted[*]}" >&2; exit 2; }
log "smoke set passed on: ${passed[*]:-none}; failed on: ${failed[*]:-none}"
((${#failed[@]} == 0))
