"""Comments cite docs/ducklake-format.md by section; every cited section exists (a renumbering
that leaves a comment pointing nowhere fails here), and nothing cites a document a reader of
the repository cannot open."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
DOC = "docs/ducklake-format.md"


def sources() -> dict[str, str]:
    out = {}
    for top in ("operator", "jobs", "tests", "bench", "README.md"):
        path = os.path.join(ROOT, top)
        files = (
            [path]
            if os.path.isfile(path)
            else [os.path.join(d, f) for d, _, names in os.walk(path) for f in names if f.endswith((".py", ".md"))]
        )
        for f in files:
            with open(f, encoding="utf-8") as fh:
                out[os.path.relpath(f, ROOT)] = fh.read()
    return out


def cited_sections(text: str) -> set[str]:
    """Sections a text cites: ``docs/ducklake-format.md §3.5-§3.11, §6`` names 3.5, 3.11 and 6."""
    out: set[str] = set()
    for m in re.finditer(re.escape(DOC) + r"((?:[\s,-]*(?:and\s+)?§\d+(?:\.\d+)?)+)", text):
        out |= set(re.findall(r"§(\d+(?:\.\d+)?)", m.group(1)))
    return out


def test_every_cited_section_exists() -> None:
    with open(os.path.join(ROOT, DOC), encoding="utf-8") as fh:
        headings = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", fh.read(), re.M))
    citing = {path: cited_sections(text) for path, text in sources().items()}
    assert sum(len(s) for s in citing.values()) > 20  # the code does cite it
    missing = {path: sorted(s - headings) for path, s in citing.items() if s - headings}
    assert not missing


def test_nothing_cites_documents_outside_the_repository() -> None:
    pattern = re.compile(r"\bmemo §|\bsee STYLE\b|STYLE\.md|reference/ducklake-1\.0")
    assert not [
        path for path, text in sources().items() if pattern.search(text) and not path.endswith(__name__ + ".py")
    ]
