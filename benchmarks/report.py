"""Prints the benchmark table from the JSON-lines file the scenario scripts wrote (see results.py).

python benchmarks/report.py RESULTS.jsonl
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    with open(path, encoding="utf-8") as source:
        rows = [json.loads(line) for line in source if line.strip()]
    if not rows:
        print(f"no benchmark rows in {path}", file=sys.stderr)
        return 1
    header = ("scenario", "measure", "value", "baseline", "baseline value", "ratio", "notes")
    cells = [
        (
            r["scenario"],
            r["measure"],
            r["value"],
            r["baseline"],
            r["baselineValue"],
            "" if r["ratio"] is None else f"{r['ratio']:.2f}",
            r["notes"],
        )
        for r in rows
    ]
    widths = [max(len(str(c[i])) for c in [header, *cells]) for i in range(len(header) - 1)]
    for line in [header, (*("-" * w for w in widths), "-----"), *cells]:
        print(" | ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=False)) + " | " + str(line[-1]))
    print("ratio = value / baseline value, both measured in this run (for CPU per million records: lower is better)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
