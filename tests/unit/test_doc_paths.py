"""Every repository path that README.md and docs/*.md name exists.

The rule, precisely:

- Read: README.md and docs/*.md, outside fenced code blocks (``` lines; those hold shell sessions and
  output, not references).
- Candidates: each whitespace-separated word of an inline code span (`...`), and the target of each
  Markdown link `[text](target)`.  A link target is relative to the document's folder and loses its
  `#anchor`; a link to a URL (`scheme:`) or to an anchor alone is not a path.  A code-span word is
  relative to the repository root and loses a pytest node id's `::test` part and trailing punctuation.
- A candidate is a repository path when it starts with one of the repository's top-level folders
  (`app/`, `tests/`, `native/`, `presets/`, `docs/`, `bench/`, `container/`) or is one of its top-level
  files (Makefile, README.md, Dockerfile, pyproject.toml).  Everything else is left alone: the results
  directory's layout (`raw/NNNN-…`, `plots/*.svg`), user paths (`~/.config/…`), devices (`/dev/…`).
- A path with a placeholder (`*`, `…`, `<`, or an upper-case word such as NAME or NNNN as a name) is a
  pattern: its folder must exist.  A path under `native/memlat/build/` (what `make native` builds) or
  `app/bin/` (where a wheel's build puts the memory engine) is built, not a file of the repository,
  and is left out.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TOP_FOLDERS = ("app/", "tests/", "native/", "presets/", "docs/", "bench/", "container/")
TOP_FILES = ("Makefile", "README.md", "Dockerfile", "pyproject.toml")
BUILT = ("native/memlat/build/", "app/bin/")

FENCE = re.compile(r"^\s*```.*?^\s*```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s]+)\)")
PLACEHOLDER = re.compile(r"[*…<]|(^|/)[A-Z]{3,}(\.|/|$)")


def _is_repo_path(word: str) -> bool:
    return word.startswith(TOP_FOLDERS) or word in TOP_FILES


def named_paths(text: str, folder: Path) -> set[str]:
    """The repository paths a document in `folder` with this text names, relative to the repository root
    (see the module's rule)."""
    text = FENCE.sub("", text)
    found: set[str] = set()
    for span in CODE_SPAN.findall(text):
        for word in span.split():
            word = word.split("::", 1)[0].rstrip(".,;:)")
            if _is_repo_path(word):
                found.add(word)
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        path = (folder / target.split("#", 1)[0]).resolve()
        if path.is_relative_to(ROOT):
            rel = path.relative_to(ROOT).as_posix()
            found.add(rel + "/" if target.endswith("/") else rel)
    return {p for p in found if not p.startswith(BUILT)}


def missing(path: str) -> bool:
    if PLACEHOLDER.search(path):
        return not (ROOT / path).parent.is_dir() if not path.endswith("/") else not (ROOT / path).is_dir()
    return not (ROOT / path).exists()


def test_every_repository_path_the_docs_name_exists() -> None:
    stale = [f"{doc.relative_to(ROOT)} names {path}, which does not exist"
             for doc in DOCS for path in sorted(named_paths(doc.read_text(encoding="utf-8"), doc.parent))
             if missing(path)]
    assert not stale, "\n".join(stale)


def test_the_rule_finds_what_it_should_and_leaves_the_rest() -> None:
    """A stale path is caught in a code span and in a link; results-layout, user and device paths are not
    candidates; a pattern is checked by its folder; fenced blocks are skipped."""
    text = ("See `app/no_such.py` and [gone](../tests/gone.py), `app/stats/frame.py`, `raw/0001-x.json`, "
            "`~/.config/profiler-tui/presets/NAME.toml`, `/dev/loop0`, `presets/references/NAME.toml`, "
            "`tests/unit/test_doc_paths.py::test_x`, [web](https://example.org/app/x.py), [top](#top),\n"
            "```\ncat app/fenced_only.py `app/fenced_only.py`\n```\n")
    paths = named_paths(text, ROOT / "docs")
    assert paths == {"app/no_such.py", "tests/gone.py", "app/stats/frame.py", "presets/references/NAME.toml",
                     "tests/unit/test_doc_paths.py"}
    assert sorted(p for p in paths if missing(p)) == ["app/no_such.py", "tests/gone.py"]

