"""Writes the benchmark table, in Markdown, from the JSON-lines file the scenario scripts wrote (see results.py).

python benchmarks/report.py RESULTS.jsonl [RESULTS.jsonl ...]

First the run's conditions (date, commit, machine, Java, Python, and each scenario's own: Spark, emulator, record
counts and sizes), then one table row per measure. The output is what benchmarks/README.md's recorded results
show: paste it there as it is.
"""

from __future__ import annotations

import json
import sys


def cell(text: object) -> str:
    """A Markdown table cell: pipes escaped, on one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def main(paths: list[str]) -> int:
    rows: list[dict[str, object]] = []
    conditions: dict[str, str] = {}
    for path in paths:
        with open(path, encoding="utf-8") as source:
            for line in source:
                if not line.strip():
                    continue
                entry = json.loads(line)
                if "conditions" in entry:
                    conditions.update(entry["conditions"])
                else:
                    rows.append(entry)
    if not rows:
        print(f"no benchmark rows in {', '.join(paths)}", file=sys.stderr)
        return 1
    for name, value in conditions.items():
        print(f"- {name}: {value}")
    print()
    print("| scenario | measure | connector | baseline (same run) | ratio | notes |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        baseline = f"{r['baseline']}: {r['baselineValue']}" if r["baseline"] else str(r["baselineValue"])
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.2f}"
        cells = (r["scenario"], r["measure"], r["value"], baseline, ratio, r["notes"])
        print("| " + " | ".join(cell(c) for c in cells) + " |")
    print()
    print(
        "ratio = connector / baseline, both measured in this run: higher is better for throughput, lower for CPU "
        "per million records and for calls."
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python benchmarks/report.py RESULTS.jsonl [RESULTS.jsonl ...]")
    sys.exit(main(sys.argv[1:]))
