"""Import from the TUI: paths typed with completion, a preview of what the importer recognises in each file
(points, tool versions, warnings), then a new results directory under the results root, opened."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.suggester import Suggester
from textual.widgets import Footer, Header, Input, Static
from textual.worker import Worker, WorkerState

from app.screens import strings
from app.screens.messages import ShowResults
from app.screens.state import app_options
from app.widgets import TooSmall

MAX_LISTED = 2000  # directory entries looked at for one completion


SHELL_SPECIAL = " \t\n'\"\\"  # what shlex.split (split_paths) would not take literally outside quotes


def last_word(value: str) -> tuple[str, str | None] | None:
    """The path being typed at the end of ``value`` as split_paths will read it (quotes and backslashes
    undone), and the quote still open around it; None when the field ends between paths."""
    word: list[str] = []
    quote: str | None = None
    escaped = in_word = False
    for ch in value:
        if escaped:
            word.append(ch)
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = in_word = True
        elif quote:
            if ch == quote:
                quote = None
            else:
                word.append(ch)
        elif ch in "'\"":
            quote, in_word = ch, True
        elif ch.isspace():
            word, in_word = [], False
        else:
            word.append(ch)
            in_word = True
    return ("".join(word), quote) if in_word and not escaped else None


def quoted_tail(tail: str, quote: str | None, finished: bool) -> str:
    """``tail`` written so split_paths reads it back as is, continuing the word's quoting; a finished path
    (a file, not a directory to go on into) closes its quote."""
    if quote == "'":
        return tail.replace("'", "'\\''") + ("'" if finished else "")
    if quote == '"':
        return "".join("\\" + c if c in '"\\$`' else c for c in tail) + ('"' if finished else "")
    return "".join("\\" + c if c in SHELL_SPECIAL else c for c in tail)


class PathSuggester(Suggester):
    """Completes the last path of the field from the filesystem (the first entry that starts with it). The
    completion only adds to what is typed and escapes what it adds (``my\\ fio\\ out.json``, or inside the
    quote the path was opened with), so a name with spaces stays one path."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        typed = last_word(value)
        if typed is None or not typed[0]:
            return None
        last, quote = typed
        directory, stem = os.path.split(os.path.expanduser(last))
        try:
            with os.scandir(directory or ".") as it:
                names = sorted(e.name + ("/" if e.is_dir() else "") for _, e in zip(range(MAX_LISTED), it))
        except OSError:
            return None
        for name in names:
            if name.startswith(stem) and name != stem and (stem.startswith(".") or not name.startswith(".")):
                return value + quoted_tail(name[len(stem):], quote, finished=not name.endswith("/"))
        return None


@dataclass
class Preview:
    files: list[tuple[str, str, int, str]] = field(default_factory=list)  # file, kind, points, versions
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def points(self) -> int:
        return sum(n for _, _, n, _ in self.files)

    @property
    def by_kind(self) -> dict[str, int]:
        """Points per kind of run: a fio JSON gives storage points, an MLC text memory points."""
        counts: dict[str, int] = {}
        for _, kind, n, _ in self.files:
            key = "storage" if kind == FIO_FILE else "memory"
            counts[key] = counts.get(key, 0) + n
        return counts


FIO_FILE = "fio JSON"


def split_paths(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    return [os.path.expanduser(w) for w in words]


def preview(paths: list[str]) -> Preview:
    """In a thread: what app.engine.importer recognises in each file (nothing is written)."""
    from app.core.errors import ProfilerError
    from app.engine.importer import MAX_IMPORT_POINTS, parse_file

    out = Preview()
    budget = MAX_IMPORT_POINTS
    for p in paths:
        try:
            kind, points, info = parse_file(p, budget)
        except ProfilerError as e:
            out.errors.append(str(e))
            continue
        budget -= len(points)
        versions = info.get("fio_versions") or ([str(info["version"])] if info.get("version") else [])
        out.files.append((p, FIO_FILE if kind == "fio" else "MLC text", len(points),
                          f" ({', '.join(map(str, sorted(set(versions))))})" if versions else ""))
        out.warnings += [f"{os.path.basename(p)}: {w}" for w in info.get("warnings") or []]
    return out


def do_import(paths: list[str], root: Path) -> tuple[Path, dict[str, int]]:
    """In a thread: the import into a new results directory under ``root``; it and its points per kind."""
    from app.engine.importer import import_files
    from app.store.results import new_run_dir

    out, sources = import_files(paths, new_run_dir(root, "import"))
    counts: dict[str, int] = {}
    for src in sources:
        key = "storage" if src.get("format") == "fio" else "memory"
        counts[key] = counts.get(key, 0) + int(src.get("points") or 0)
    return Path(out), counts


class ImportScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "preview", "Preview"),
        Binding("ctrl+s", "import_now", "Import", priority=True),
        Binding("escape", "back", "Back"),
    ]

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="import-body"):
            yield Static(strings.IMPORT_HINT.format(root=app_options(self.app).results_dir), id="import-hint")
            yield Input(placeholder=strings.IMPORT_PLACEHOLDER, suggester=PathSuggester(), id="import-paths")
            with VerticalScroll(id="import-preview-box"):
                yield Static("", id="import-preview")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = strings.IMPORT_TITLE
        self.query_one("#import-paths", Input).focus()

    def paths(self) -> list[str]:
        return split_paths(self.query_one("#import-paths", Input).value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_preview()

    def action_preview(self) -> None:
        paths = self.paths()
        if not paths:
            self.say(Text(strings.IMPORT_NOTHING, style="yellow"))
            return
        self.say(strings.IMPORT_PREVIEWING)
        self.run_worker(lambda: preview(paths), thread=True, group="import-preview", exclusive=True,
                        exit_on_error=False)

    def action_import_now(self) -> None:
        paths = self.paths()
        if not paths:
            self.say(Text(strings.IMPORT_NOTHING, style="yellow"))
            return
        root = app_options(self.app).results_dir
        self.run_worker(lambda: do_import(paths, root), thread=True, group="import", exclusive=True,
                        exit_on_error=False)

    def say(self, text: str | Text) -> None:
        self.query_one("#import-preview", Static).update(text)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "import-preview":
            event.stop()
            if event.state == WorkerState.SUCCESS and isinstance(event.worker.result, Preview):
                self.say(self.preview_text(event.worker.result))
            elif event.state == WorkerState.ERROR:
                self.say(Text(strings.IMPORT_FAILED.format(error=event.worker.error), style="red"))
        elif event.worker.group == "import":
            event.stop()
            if event.state == WorkerState.SUCCESS and event.worker.result is not None:
                out, counts = event.worker.result
                self.notify(strings.IMPORT_DONE.format(points=strings.kind_counts(counts), path=out), timeout=8)
                self.app.pop_screen()
                self.app.post_message(ShowResults(out))
            elif event.state == WorkerState.ERROR:
                self.say(Text(strings.IMPORT_FAILED.format(error=event.worker.error), style="red"))

    @staticmethod
    def preview_text(p: Preview) -> Text:
        text = Text()
        for file, kind, points, versions in p.files:
            text.append(strings.IMPORT_PREVIEW_FILE.format(file=file, kind=kind, points=points, versions=versions)
                        + "\n", style="green")
        for e in p.errors:
            text.append(strings.IMPORT_PREVIEW_ERROR.format(error=e) + "\n", style="red")
        for w in p.warnings:
            text.append("warning: " + w + "\n", style="yellow")
        text.append(strings.IMPORT_PREVIEW_TOTAL.format(points=strings.kind_counts(p.by_kind), files=len(p.files)))
        return text

    def action_back(self) -> None:
        self.app.pop_screen()
