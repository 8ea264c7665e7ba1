"""Comments cite the documents in docs/ by section (``docs/ducklake-format.md §4.2``); every
cited section exists (a renumbering that leaves a comment pointing nowhere fails here), and
nothing cites what a reader of the repository cannot open: a document not in it, an issue
tracker's thread, a note or seed document the code was written from."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
DOCS = "docs"
TOPS = ("operator", "jobs", "tests", "bench", "docs", "charts", "crds", "examples", "scripts", "docker", ".ci")
TOP_FILES = ("README.md", "Dockerfile", "pyproject.toml")
SKIPPED_DIRS = {"__pycache__", ".venv", ".git", ".tools", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
THIS = os.path.relpath(__file__, ROOT)


def repository_files() -> list[str]:
    """Every file of the repository's own (not the venv's, not caches), relative to its root."""
    out = list(TOP_FILES)
    for top in TOPS:
        for d, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [x for x in dirs if x not in SKIPPED_DIRS and not x.endswith(".egg-info")]
            out += [os.path.relpath(os.path.join(d, f), ROOT) for f in names]
    return out


def sources() -> dict[str, str]:
    """The text of every repository file that is text."""
    out = {}
    for path in repository_files():
        try:
            with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
                out[path] = fh.read()
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # binaries; a dangling symlink
    return out


def documents() -> dict[str, set[str]]:
    """docs/*.md -> the numbers of their sections (``## 4. ...``, ``### 4.2 ...``)."""
    out = {}
    for name in sorted(os.listdir(os.path.join(ROOT, DOCS))):
        if name.endswith(".md"):
            with open(os.path.join(ROOT, DOCS, name), encoding="utf-8") as fh:
                out[f"{DOCS}/{name}"] = set(re.findall(r"^#{2,3} (\d+(?:\.\d+)?)\.? ", fh.read(), re.M))
    return out


def cited_sections(text: str, doc: str) -> set[str]:
    """Sections a text cites of ``doc``: ``docs/ducklake-format.md §3.5-§3.11, §6`` names 3.5,
    3.11 and 6."""
    out: set[str] = set()
    for m in re.finditer(re.escape(doc) + r"((?:[\s,-]*(?:and\s+)?§\d+(?:\.\d+)?)+)", text):
        out |= set(re.findall(r"§(\d+(?:\.\d+)?)", m.group(1)))
    return out


# The documents the code is written against, cited by section from its comments; any other
# document in docs/ (docs/architecture.md: an overview for people) is linked from README.md.
CITED_BY_CODE = ("docs/ducklake-format.md", "docs/ingest-schema-evolution.md")


def test_every_cited_section_exists() -> None:
    texts = sources()
    for doc, headings in documents().items():
        citing = {path: cited_sections(text, doc) for path, text in texts.items()}
        if doc in CITED_BY_CODE:
            assert sum(len(s) for s in citing.values()) > 10, doc  # the code does cite it
        else:
            assert doc in texts["README.md"], doc  # a reader finds it
        missing = {path: sorted(s - headings) for path, s in citing.items() if s - headings}
        assert not missing, doc


# What no reader of the repository can open: notes and seed documents it was written from
# ("memo §3", "the seed's rules"), a session's style notes, an issue ("see the Spark jobs
# issue", "issue 12"). A document named by file (``*.md``) must be one of the repository's.
OUTSIDE = re.compile(
    r"\bmemo §|\bsee STYLE\b|STYLE\.md|reference/ducklake-1\.0"
    r"|\bthe seed\b|\bseed's\b"
    r"|\bthe (?:[\w-]+ ){1,5}issue\b|\bissues? #?\d+\b|\bissue tracker\b",
    re.I,
)
MARKDOWN = re.compile(r"(?<![\w./:-])([\w./-]*\w\.md)\b")  # not in a URL: those a reader opens


def test_nothing_cites_documents_outside_the_repository() -> None:
    files = repository_files()
    known = set(files) | {os.path.basename(f) for f in files}
    found = []
    for path, text in sources().items():
        if path == THIS:
            continue
        found += [(path, m.group(0)) for m in OUTSIDE.finditer(text)]
        found += [(path, name) for name in MARKDOWN.findall(text) if name not in known]
    assert not found
