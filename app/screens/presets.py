"""Preset list with the plan preview (axes, point count, estimated duration) for the chosen target."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from app import presets as core
from app.errors import ProfilerError
from app.screens import messages as msg
from app.widgets import TooSmall
from app.screens.state import RunRequest, TargetChoice, run_dir
from app.units import format_size

__all__ = ["PresetsScreen", "TargetChoice", "preview_text", "overrides_for", "start_run"]


def show_value(key: str, value: Any) -> str:
    if value is None:
        return "-"
    if key in ("bs", "size", "buffer", "stride") and isinstance(value, int):
        return format_size(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def overrides_for(kind: str, overrides: tuple[str, ...] | list[str]) -> list[str]:
    """The app-wide overrides this kind of preset knows (runtime/size mean nothing to memory)."""
    keys = core.KEYS[kind]
    return [o for o in overrides if o.partition("=")[0].strip() in keys]


def preview_text(preset: core.Preset, target: TargetChoice | None, engine: str, overrides: list[str]) -> Text:
    points = [p.to_dict() for p in preset.expand()]
    info = core.summary(preset)
    axes = core.describe_axes(preset)
    text = Text()
    text.append(f"{preset.name}", style="bold")
    text.append(f" ({preset.kind})\n")
    text.append(preset.description + "\n\n")
    if preset.kind == core.MEMORY:
        text.append(msg.PREVIEW_MEMORY.format(engine=engine) + "\n")
    elif target is not None:
        text.append(f"target: {target.display}\n")
    for key, values in axes.items():
        shown = ", ".join(show_value(key, v) for v in values)
        text.append(f"axis {key}: ", style="bold")
        text.append(f"{shown}\n")
    fixed = {k: v for k, v in points[0].items() if k not in axes and k != "group"}
    text.append("settings: ", style="bold")
    text.append(", ".join(f"{k}={show_value(k, v)}" for k, v in fixed.items()) + "\n")
    if overrides:
        text.append(msg.PREVIEW_OVERRIDES.format(overrides=" ".join(overrides)) + "\n")
    text.append("\n")
    text.append(msg.PREVIEW_POINTS.format(points=len(points), estimated=info["estimated"]), style="bold")
    if preset.kind == core.STORAGE:
        text.append(" — " + (msg.PREVIEW_WRITES if info["writes"] else msg.PREVIEW_READS),
                    style="yellow" if info["writes"] else "")
    return text


def start_run(screen: Screen[Any], preset: core.Preset, target: TargetChoice | None,
              engine: str | None = None) -> bool:
    """Push the run screen for ``preset`` (overrides already applied); False when it may not run."""
    from app.screens.run import RunScreen

    options = screen.app.options  # type: ignore[attr-defined]
    if preset.kind == core.STORAGE:
        target = target or TargetChoice.test_file(options.results_dir)
        if preset.writes() and not target.allow_writes:
            screen.notify(msg.WRITES_NOT_CONFIRMED.format(preset=preset.name, target=target.display),
                          severity="error", timeout=8)
            return False
    else:
        target = None
    request = RunRequest(preset=preset, target=target, out=run_dir(options.results_dir, preset.name),
                         engine=engine or options.engine,
                         overrides=overrides_for(preset.kind, options.overrides))
    screen.app.push_screen(RunScreen(request))
    return True


class PresetsScreen(Screen[None]):
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

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Horizontal(id="presets-body"):
            yield DataTable(id="presets", cursor_type="row")
            with VerticalScroll(id="preview-scroll"):
                yield Static("", id="preview")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = msg.PRESETS_SUBTITLE.format(target=self.target.display)
        table = self.query_one("#presets", DataTable)
        table.add_column("preset", key="name", width=13)
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
        overrides = self.app.options.overrides  # type: ignore[attr-defined]
        for name, path in core.available().items():
            try:
                preset = core.load_file(path)
                core.apply_overrides(preset, overrides_for(preset.kind, overrides))
                info = core.summary(preset)
            except ProfilerError as e:
                self.errors[name] = str(e)
                table.add_row(Text(name, style="red"), "?", "-", "-", key=name)
                continue
            self.presets[name] = preset
            kind = "mem" if preset.kind == core.MEMORY else ("io W" if info["writes"] else "io")
            table.add_row(name, kind, str(info["points"]), info["estimated"], key=name)
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
            preview.update(Text(msg.PRESETS_LOAD_ERROR.format(name=name, error=self.errors[name]), style="red"))
        else:
            preset = self.presets[name]
            preview.update(preview_text(preset, self.target, self.app.options.engine,  # type: ignore[attr-defined]
                                        overrides_for(preset.kind, self.app.options.overrides)))  # type: ignore[attr-defined]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._preview()

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
        # a fresh copy: the run owns its preset
        preset = core.load_file(self.presets[name].source)
        core.apply_overrides(preset, overrides_for(preset.kind, self.app.options.overrides))  # type: ignore[attr-defined]
        start_run(self, preset, self.target)

    def action_custom(self) -> None:
        from app.screens.custom import CustomSweepScreen

        self.app.push_screen(CustomSweepScreen(self.target))

    def action_back(self) -> None:
        self.app.pop_screen()
