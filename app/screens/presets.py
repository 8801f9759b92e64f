"""Preset list with the plan preview (axes, point count, estimated duration) for the chosen target."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Header, Static

from app.core.errors import ProfilerError
from app.core.units import format_duration_short
from app.plan import presets as core
from app.plan.describe import describe_plan
from app.screens import strings
from app.screens.messages import PrepareCustomSweep, ShowCustomSweep, StartRun
from app.screens.state import TargetChoice, app_options, overrides_for
from app.widgets import KeysFooter, StyledOnce, TooSmall
from app.widgets.rowtable import RowTable


def preview_text(preset: core.Preset, target: TargetChoice | None, engine: str, overrides: list[str]) -> Text:
    d = describe_plan(preset)
    text = Text()
    text.append(f"{d.name}", style="bold")
    text.append(f" ({d.kind})\n")
    text.append(d.description + "\n")
    if "--set" in d.description:  # the preset file speaks to the command line; here fields are edited
        text.append(strings.PREVIEW_SET_IN_TUI + "\n", style="italic")
    text.append("\n")
    if d.kind == core.MEMORY:
        text.append(strings.PREVIEW_MEMORY.format(engine=engine) + "\n")
    elif target is not None:
        text.append(f"target: {target.display}\n")
    for key in d.axes:
        text.append(f"axis {key}: ", style="bold")
        text.append(f"{d.axis_text(key)}\n")
    text.append("settings: ", style="bold")
    text.append(d.settings_text + "\n")
    for line in d.procedure:
        name, _, rest = line.partition(": ")
        text.append(f"{name}: ", style="bold")
        text.append(rest + "\n")
    if overrides:
        text.append(strings.PREVIEW_OVERRIDES.format(overrides=" ".join(overrides)) + "\n")
    text.append("\n")
    text.append(d.totals, style="bold")
    if d.kind == core.STORAGE:
        text.append(" — " + d.access, style="yellow" if d.writes else "")
    return text


PREPARE_AFTER_S = 0.2  # the cursor resting this long on a preset: its custom form is made ahead


class PresetsScreen(StyledOnce, Screen[None]):
    BINDINGS = [
        Binding("enter", "run", "Run", priority=True),
        Binding("c", "custom", "Custom sweep"),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, target: TargetChoice) -> None:
        super().__init__()
        self.target = target
        self.presets: dict[str, core.Preset] = {}
        self.errors: dict[str, str] = {}
        self.shadowing: set[str] = set()  # user presets that replace a shipped one of the same name
        self._prepare_timer: Timer | None = None  # the custom form made ahead once the cursor rests

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Horizontal(id="presets-body"):
            with Vertical(id="presets-side"):
                yield RowTable(id="presets", cursor_type="row")
                yield Static("", id="presets-legend")
            with VerticalScroll(id="preview-scroll"):
                yield Static("", id="preview")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = strings.PRESETS_SUBTITLE.format(target=self.target.display)
        table = self.query_one("#presets", DataTable)
        table.add_column("preset", key="name", width=15)  # mem-mlc-default, mem-working-set
        table.add_column("kind", key="kind", width=4)
        table.add_column("pts", key="points", width=4)
        table.add_column("est.", key="est", width=7)
        self.reload()
        table.focus()

    def reload(self) -> None:
        table = self.query_one("#presets", DataTable)
        current = self._current()
        table.clear()
        self.presets, self.errors = {}, {}
        overrides = app_options(self.app).overrides
        shipped = core.shipped_dir()
        user = core.user_presets()
        listed = core.available(user)
        self.shadowing = {name for name, path in listed.items()
                          if path.parent != shipped and (shipped / path.name).is_file()}
        for name in sorted(user.refused):  # another user's preset: listed with why, never read
            self.errors[name] = user.refused[name]
            table.add_row(Text(name, style="red"), "?", "-", "-", key=name)
        for name, path in listed.items():
            try:
                preset = core.load_listed(name, path)
                core.apply_overrides(preset, overrides_for(preset.kind, overrides))
                info = core.summary(preset)
            except ProfilerError as e:
                self.errors[name] = str(e)
                table.add_row(Text(name, style="red"), "?", "-", "-", key=name)
                continue
            self.presets[name] = preset
            kind = "mem" if preset.kind == core.MEMORY else ("io W" if info["writes"] else "io")
            label = Text(name) + (Text("*", style="bold yellow") if name in self.shadowing else Text(""))
            table.add_row(label, kind, str(info["points"]), format_duration_short(info["estimated_seconds"]),
                          key=name)
        legend = strings.PRESETS_LEGEND + (strings.PRESETS_LEGEND_SHADOW if self.shadowing else "")
        self.query_one("#presets-legend", Static).update(legend)
        if current is not None and current in self.presets:
            table.move_cursor(row=table.get_row_index(current))
        self._preview()

    def _current(self) -> str | None:
        table = self.query_one("#presets", DataTable)
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def _preview(self) -> None:
        name = self._current()
        preview = self.query_one("#preview", Static)
        if name is None:
            preview.update("")
        elif name in self.errors:
            preview.update(Text(strings.PRESETS_LOAD_ERROR.format(name=name, error=self.errors[name]), style="red"))
        else:
            preset = self.presets[name]
            options = app_options(self.app)
            text = preview_text(preset, self.target, options.engine, overrides_for(preset.kind, options.overrides))
            if name in self.shadowing:
                text.append("\n" + strings.PRESETS_SHADOWS.format(name=name, path=preset.source), style="yellow")
            preview.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._preview()
        self._prepare_later()

    def _prepare_later(self) -> None:
        """The highlighted preset's custom form made ahead once the cursor rests on it (the key `c` then shows it at
        once): the app shell makes and keeps it."""
        if self._prepare_timer is not None:
            self._prepare_timer.stop()
        self._prepare_timer = self.set_timer(PREPARE_AFTER_S, self._prepare_form)

    def _prepare_form(self) -> None:
        self._prepare_timer = None
        name = self._current()
        if self.app.screen is self and name is not None and name in self.presets:
            self.post_message(PrepareCustomSweep(self.target, self.presets[name]))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_run()

    def on_screen_resume(self) -> None:
        if self.presets or self.errors:
            self.reload()  # a custom sweep may have been saved meanwhile

    def action_run(self) -> None:
        name = self._current()
        if name is None or name not in self.presets:
            return
        # a fresh copy: the run owns its preset (read again under the same rules: it may have changed)
        try:
            preset = core.load_listed(name, Path(self.presets[name].source))
        except ProfilerError as e:
            self.errors[name] = str(e)
            self._preview()
            return
        core.apply_overrides(preset, overrides_for(preset.kind, app_options(self.app).overrides))
        self.post_message(StartRun(preset, self.target))

    def action_custom(self) -> None:
        """The custom form, filled from the highlighted preset's values (its rw modes, block sizes, …)."""
        name = self._current()
        self.post_message(ShowCustomSweep(self.target, self.presets.get(name) if name else None))

    def action_back(self) -> None:
        self.app.pop_screen()
