"""The README and the docs link only to files and headings that exist, and the README stays a short user guide.

Relative Markdown links (``[text](path)``, ``[text](path#anchor)``, ``[text](#anchor)``) in README.md, docs/**/*.md,
benchmarks/README.md and examples/**/*.md must name a file of the repository and, with an anchor, a heading of that
file (GitHub's anchor rule: lower case, punctuation dropped, spaces to hyphens). No JVM is started.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^(```|~~~)")


def documents() -> list[Path]:
    """The Markdown files whose links are checked."""
    found = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    found += sorted((ROOT / "docs").rglob("*.md"))
    found += sorted((ROOT / "examples").rglob("*.md"))
    return [p for p in found if p.is_file()]


def _prose(text: str) -> list[str]:
    """The lines of ``text`` outside fenced code blocks."""
    kept, fenced = [], False
    for line in text.splitlines():
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            kept.append(line)
    return kept


def anchors(text: str) -> set[str]:
    """GitHub's anchors for the headings of a Markdown text (a repeated heading gets ``-1``, ``-2``, ...)."""
    seen: dict[str, int] = {}
    result = set()
    for line in _prose(text):
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        result.add(slug if count == 0 else f"{slug}-{count}")
    return result


def broken_links(doc: Path, root: Path = ROOT) -> list[str]:
    """The relative links of ``doc`` whose file (inside ``root``) or heading does not exist, as ``target (line n)``."""
    problems = []
    text = doc.read_text(encoding="utf-8")
    fenced = False
    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            continue
        for match in _LINK.finditer(re.sub(r"`[^`]*`", "", line)):
            target = match.group(1) or match.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            path_part, _, anchor = target.partition("#")
            file = (doc.parent / path_part).resolve() if path_part else doc
            if not file.exists() or root.resolve() not in file.parents:
                problems.append(f"{target} (line {number}): no such file")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
                problems.append(f"{target} (line {number}): no such heading")
    return problems


def test_every_relative_link_resolves() -> None:
    docs = documents()
    assert len(docs) >= 20, docs
    broken = {str(d.relative_to(ROOT)): broken_links(d) for d in docs}
    assert {k: v for k, v in broken.items() if v} == {}


def test_the_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "options.md").write_text("# Options\n", encoding="utf-8")
    doc = tmp_path / "docs" / "guide" / "probe.md"
    doc.write_text(
        "# Probe\n\n## A heading, with `code`\n\n[ok](#a-heading-with-code) [ok](../options.md)\n"
        "[bad](missing.md) [bad](#nope) [bad](../options.md#nope)\n```\n[in code](nowhere.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc, root=tmp_path) == [
        "missing.md (line 6): no such file",
        "#nope (line 6): no such heading",
        "../options.md#nope (line 6): no such heading",
    ]


def test_the_readme_is_a_short_guide_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    code = "\n".join(line for line in text.splitlines() if line.startswith("scripts/"))
    # .ci/run runs the README's test command; the demo is the other command of the house.
    assert "exec scripts/test.sh" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^scripts/test\.sh\s", code, re.M), code
    assert re.search(r"^scripts/demo\.sh\s", code, re.M), code
