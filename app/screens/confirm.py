"""Modals: the target confirmation (docs/safety.md: type the device name for destructive plans) and yes/no."""

from __future__ import annotations

import os
from typing import Callable

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static
from textual.worker import Worker, WorkerState

from app.core.sanitize import clean_line
from app.core.units import count_text
from app.host import tune
from app.host.audit import WARNINGS, Audit
from app.model.points import Verdict
from app.screens import strings
from app.screens.state import TargetChoice, app_options
from app.screens.words import tui_words
from app.widgets import MIN_HEIGHT, MIN_WIDTH, ErrorLine, too_small

OK, NEEDS, REFUSED = Verdict.OK, Verdict.NEEDS_DESTRUCTIVE, Verdict.REFUSED
COMPACT_BELOW = 24  # rows: below it the confirmation uses borderless field and buttons
INFO_MAX = 12  # rows of verdicts and reasons before they scroll (tui.tcss #confirm-info)


def device_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class ConfirmModal(ModalScreen[TargetChoice | None]):
    """A confirmation returning a :class:`TargetChoice` (None when cancelled): enter in its field or the
    confirm button confirms (``action_confirm``), escape or the other button cancels."""

    BINDINGS = [Binding("enter", "confirm", "Confirm", show=True), Binding("escape", "cancel", "Cancel")]

    def action_confirm(self) -> None:
        raise NotImplementedError

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_confirm()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "confirm":
            self.action_confirm()
        else:
            self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(None)


def _plan(v: object) -> dict[str, object]:
    """A device's verdict on one kind of plan ({} when it has none)."""
    return v if isinstance(v, dict) else {}


def _verdict(plan: dict[str, object]) -> tuple[str, list[str]]:
    """The verdict and its reasons, as text (a device listed by another host is untrusted)."""
    reasons = plan.get("reasons")
    return str(plan.get("verdict") or REFUSED), [str(r) for r in reasons] if isinstance(reasons, list) else []


def bullets(items: list[str]) -> Table:
    """``items`` as bullets ("  • "), each wrapped under its own text rather than under the bullet."""
    grid = Table.grid()
    grid.add_column(width=4, no_wrap=True)
    grid.add_column(ratio=1)
    for item in items:
        grid.add_row("  • ", Text(item))
    return grid


def audit_text(found: Audit, target: str) -> Text:
    """The audit's warnings, one line each (what, value, why), and how many settings it checked: what the user
    sees of the host's settings before confirming a target (the text is read from sysfs: cleaned, bounded)."""
    # the count first: the reasons above may leave room for a line or two before the box scrolls
    text = Text(strings.CONFIRM_AUDIT_SUMMARY.format(settings=count_text(len(found.items), "setting"),
                                                     warnings=count_text(len(found.warnings), "warning"),
                                                     target=clean_line(target, 200)))
    for i in found.warnings:
        why = WARNINGS.get(i.warning or "") or i.why
        text.append("\n" + strings.CONFIRM_AUDIT_WARNING.format(
            what=clean_line(i.label, 60), value=clean_line(i.value or "not available here", 60),
            why=clean_line(why, 200)), style="yellow")
    return text


def tune_text(changes: int, on: bool) -> Text:
    """The tuning toggle's line: how many settings it would change, and whether it is on."""
    return Text(strings.CONFIRM_TUNE.format(
        state=strings.CONFIRM_TUNE_ON if on else strings.CONFIRM_TUNE_OFF,
        changes=count_text(changes, "setting")), style="bold" if on else "")


def read_for_confirm(read: Callable[[str], Audit], path: str) -> tuple[Audit, int]:
    """In the worker: the audit, and how many files --tune would change (0 unless root: only root may)."""
    found = read(path)
    if os.geteuid() != 0:
        return found, 0
    changes, _ = tune.plan_changes(found)
    return found, len(changes)


class ConfirmTarget(ConfirmModal):
    """Shows both verdicts with their reasons and returns the confirmed :class:`TargetChoice`.  When the audit
    finds settings --tune would change (root only), ctrl+t (or t outside the name field) toggles tuning them."""

    BINDINGS = [Binding("t,ctrl+t", "toggle_tune", "Tune", show=False)]

    def __init__(self, device: dict[str, object]) -> None:
        super().__init__()
        self.device = device
        self.path: str = str(device.get("path") or device.get("name") or "?")
        self.name_: str = device_name(self.path)
        write = _plan(device.get("write")) or {"verdict": device.get("verdict", REFUSED),
                                               "reasons": device.get("reasons", [])}
        read = _plan(device.get("read")) or write
        self.write_verdict, self.write_reasons = _verdict(write)
        self.read_verdict, self.read_reasons = _verdict(read)
        self.audit_shown: Text | None = None
        self.tunable = 0  # files --tune would change, from the audit
        self.tune = False

    @property
    def refused(self) -> bool:
        return self.write_verdict == REFUSED and self.read_verdict == REFUSED

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Label(strings.CONFIRM_TITLE.format(path=self.path), classes="modal-title")
            # the reasons scroll; what to do, the name field and the buttons always stay in view
            with VerticalScroll(id="confirm-info"):
                yield Static(self._verdicts(), id="confirm-verdicts")
                if app_options(self.app).audit is not None and not self.refused:
                    yield Static(strings.CONFIRM_AUDIT_READING, id="confirm-audit")
            if self.refused:
                yield Static(Text(tui_words(strings.CONFIRM_REFUSED.format(path=self.path, reasons="; ".join(
                    self.write_reasons or self.read_reasons))), style="bold red"), id="confirm-refused")
                with Horizontal(classes="buttons"):
                    yield Button(strings.CLOSE_BUTTON, id="cancel", variant="primary")
                yield Footer()
                return
            # the tuning toggle (when the audit names settings to tune): under the reasons, never scrolled away
            yield Static("", id="confirm-tune")
            if self.write_verdict == NEEDS:
                yield Static(strings.CONFIRM_TYPE_NAME.format(path=self.path, name=self.name_), id="confirm-explain")
                yield Input(placeholder=self.name_, id="confirm-name")
                yield ErrorLine(id="confirm-error")
            elif self.write_verdict == REFUSED:
                yield Static(strings.CONFIRM_READ_ONLY.format(path=self.path), id="confirm-explain")
            else:
                yield Static(strings.CONFIRM_OK_BLOCK, id="confirm-explain")
            yield Static(strings.CONFIRM_TOO_SMALL.format(w=MIN_WIDTH, h=MIN_HEIGHT), id="confirm-too-small")
            with Horizontal(classes="buttons"):
                yield Button(strings.CONFIRM_BUTTON, id="confirm", variant="primary")
                yield Button(strings.CANCEL_BUTTON, id="cancel")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        """Compact field and buttons (no borders) on a short terminal; nothing to confirm below the
        smallest supported size (see :meth:`too_small`)."""
        compact = self.size.height < COMPACT_BELOW
        for widget in self.query("#confirm-box Input, #confirm-box Button"):
            if isinstance(widget, (Input, Button)):
                widget.compact = compact
        self.set_class(compact, "-compact")
        self.refresh_bindings()
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """When the box at its natural height does not fit, it takes the whole height and the reasons
        scroll in what is left (``-fill``); otherwise it stays as small as its content."""
        box = self.query_one("#confirm-box")
        info = self.query_one("#confirm-info")
        natural = 2 + min(info.virtual_size.height, INFO_MAX) + info.styles.margin.height + sum(
            w.outer_size.height + w.styles.margin.height for w in box.children if w is not info and w.display)
        available = self.size.height - 1  # the footer
        self.set_class(natural > available, "-fill")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm" and not self.refused and self.too_small():
            return False  # enter authorises nothing (and the footer does not offer it)
        return True

    def too_small(self) -> bool:
        return too_small(self.app.size.width, self.app.size.height)

    def on_mount(self) -> None:
        if self.query("#confirm-name"):
            self.query_one("#confirm-name", Input).focus()
        else:
            self.query_one("#confirm" if not self.refused else "#cancel", Button).focus()
        read = app_options(self.app).audit
        if read is not None and self.query("#confirm-audit"):  # sysfs, maybe a drive's log page: off the UI thread
            self.run_worker(lambda: read_for_confirm(read, self.path), thread=True, group="audit",
                            exit_on_error=False, name="audit")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "audit" or event.state not in (WorkerState.SUCCESS, WorkerState.ERROR):
            return
        result = event.worker.result
        if event.state == WorkerState.SUCCESS and isinstance(result, tuple) and isinstance(result[0], Audit):
            shown = audit_text(result[0], self.path)
            self.tunable = result[1] if not self.refused else 0
        else:
            shown = Text(strings.CONFIRM_AUDIT_FAILED.format(error=clean_line(str(event.worker.error), 200),
                                                             target=clean_line(self.path, 200)), style="yellow")
        self.audit_shown = shown
        self._show_audit()

    def _show_audit(self) -> None:
        if self.audit_shown is None:
            return
        self.query_one("#confirm-audit", Static).update(self.audit_shown)
        tune = self.query_one("#confirm-tune", Static)
        tune.update(tune_text(self.tunable, self.tune) if self.tunable else "")
        tune.display = bool(self.tunable)
        self.call_after_refresh(self._fit)

    def action_toggle_tune(self) -> None:
        if not self.tunable:
            return
        self.tune = not self.tune
        self._show_audit()

    def _verdicts(self) -> Group:
        """Both verdicts, each with its reasons as bullets whose wrapped lines stay under their text (a hanging
        indent), in the TUI's words (app.screens.words: no CLI flag)."""
        style: dict[str, str] = {OK: "green", NEEDS: "yellow", REFUSED: "red"}
        parts: list[RenderableType] = []
        for line, verdict, reasons in ((strings.CONFIRM_WRITE, self.write_verdict, self.write_reasons),
                                       (strings.CONFIRM_READ, self.read_verdict, self.read_reasons)):
            parts.append(Text(tui_words(line.format(verdict=verdict)), style=style.get(verdict, "")))
            parts.append(bullets([tui_words(r) for r in reasons]))
        return Group(*parts)

    def action_confirm(self) -> None:
        if self.refused:
            self.dismiss(None)
            return
        if self.too_small():  # the user may not see what enter would authorise
            self.app.bell()
            return
        allow_writes = self.write_verdict == OK
        destructive = False
        if self.write_verdict == NEEDS:
            typed = self.query_one("#confirm-name", Input).value.strip()
            if typed:
                if typed not in (self.name_, self.path):
                    self.query_one("#confirm-error", ErrorLine).show(
                        strings.CONFIRM_NAME_MISMATCH.format(name=self.name_))
                    self.call_after_refresh(self._fit)
                    return
                allow_writes = destructive = True
        self.dismiss(TargetChoice(label=self.path, path=self.path, allow_writes=allow_writes, yes=True,
                                  allow_destructive=destructive, tune=self.tune))


class YesNo(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Yes"), Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="yesno-box"):
            yield Static(self.question, id="yesno-question")
            with Horizontal(classes="buttons"):
                yield Button(strings.YES + " (y)", id="yes", variant="error")
                yield Button(strings.NO + " (n)", id="no", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
