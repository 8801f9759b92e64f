"""The custom-sweep form: inline validation by the core's own key parsers, save as a user preset, run."""

from __future__ import annotations

import json
from dataclasses import dataclass

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, Select, Static

from app import presets as core
from app.describe import describe_plan
from app.errors import ProfilerError, UsageError
from app.screens import strings
from app.screens.confirm import YesNo
from app.screens.messages import StartRun
from app.screens.state import TargetChoice, app_options, overrides_for
from app.units import setting_text
from app.widgets import ErrorLine, TooSmall


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    default: str
    optional: bool = False


STORAGE_FIELDS = (
    Field("rw", "rw modes", "randread"),
    Field("bs", "block sizes", "4k"),
    Field("iodepth", "queue depths", "1"),
    Field("numjobs", "jobs", "1"),
    Field("rwmixread", "mix (% read)", "", optional=True),
    Field("runtime", "runtime (s)", "10"),
    Field("size", "size", "1g"),
)
MEMORY_FIELDS = (
    Field("traffic", "traffic", "R"),
    Field("delay", "delays", ",".join(str(d) for d in core.MLC_DELAYS)),
    Field("stride", "stride", "64"),
    Field("duration", "duration (s)", "2"),
)
FIELDS: dict[str, tuple[Field, ...]] = {core.STORAGE: STORAGE_FIELDS, core.MEMORY: MEMORY_FIELDS}


def toml_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def build_toml(name: str, kind: str, values: dict[str, list[object]],
               description: str = strings.CUSTOM_DESCRIPTION) -> str:
    """A preset file: one-value keys under [settings], the rest as [matrix] axes."""
    lines = [f"name = {toml_value(name)}", f"kind = {toml_value(kind)}", f"description = {toml_value(description)}",
             "", "[settings]"]
    if kind == core.MEMORY:
        lines.append('mode = "loaded"')
    axes = {}
    for key, vals in values.items():
        if len(vals) == 1:
            lines.append(f"{key} = {toml_value(vals[0])}")
        else:
            axes[key] = vals
    if axes:
        lines += ["", "[matrix]"]
        lines += [f"{key} = [{', '.join(toml_value(v) for v in vals)}]" for key, vals in axes.items()]
    return "\n".join(lines) + "\n"


def check_field(kind: str, key: str, raw: str, optional: bool) -> tuple[list[object] | None, str]:
    """Parse a comma list with the core's parser: (values or None, error message or '')."""
    raw = raw.strip()
    if not raw:
        return ([], "") if optional else (None, strings.FIELD_REQUIRED)
    try:
        return core.parse_overrides(kind, [f"{key}={raw}"])[key], ""
    except UsageError as e:
        text = str(e)
        prefix = f"--set {key}={raw}: "
        return None, text[len(prefix):] if text.startswith(prefix) else text


def start_values(preset: core.Preset) -> dict[str, str]:
    """The form's fields as ``preset`` (overrides applied) has them, written as a person types them; a value
    the form's own check would refuse (none expected) is left to the field's default."""
    d = describe_plan(preset)
    found: dict[str, str] = {}
    for f in FIELDS.get(preset.kind, ()):
        if f.key in d.axes:
            text = d.axis_text(f.key)
        elif d.settings.get(f.key) is not None:
            text = setting_text(f.key, d.settings[f.key])
        else:
            continue
        text = text.replace(", ", ",")
        if check_field(preset.kind, f.key, text, f.optional)[0] is not None:
            found[f.key] = text
    return found


class CustomSweepScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "run", "Run", priority=True),
        Binding("ctrl+s", "save", "Save preset", priority=True),
        Binding("escape", "back", "Back"),
        # Priority: the focus moves as the app reads the key, before it hands the next keys on.  As an
        # ordinary binding, tab ran only after bubbling up from the focused field, so the keys of a burst
        # behind it (a paste, a laggy ssh link) had already been given to the field it left.
        Binding("tab", "app.focus_next", "Next field", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", "Previous field", show=False, priority=True),
    ]

    def __init__(self, target: TargetChoice, kind: str = core.STORAGE, start: core.Preset | None = None) -> None:
        super().__init__()
        self.target = target
        self.initial_kind = start.kind if start is not None else kind
        self.start = start_values(start) if start is not None else {}
        self.start_from = (start.name, len(start.expand())) if start is not None else None

    def _initial(self, kind: str, field: Field) -> str:
        """The starting preset's value, else the field's default or the app-wide override for that key (e.g.
        runtime=1 in tests)."""
        if kind == self.initial_kind and field.key in self.start:
            return self.start[field.key]
        value = field.default
        for item in overrides_for(kind, app_options(self.app).overrides):
            key, _, v = item.partition("=")
            if key.strip() == field.key:
                value = v.strip()
        return value

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with VerticalScroll(id="form"):
            yield Static(strings.CUSTOM_HINT, id="form-hint")
            with Horizontal(classes="form-row"):
                yield Label("kind", classes="form-label")
                yield Select([("storage (fio)", core.STORAGE), ("memory", core.MEMORY)], value=self.initial_kind,
                             allow_blank=False, id="kind", compact=True)
            for kind, fields in FIELDS.items():
                with Vertical(id=f"fields-{kind}", classes="fields"):
                    for f in fields:
                        with Horizontal(classes="form-row"):
                            yield Label(f.label, classes="form-label")
                            yield Input(self._initial(kind, f), id=f"{kind}-{f.key}", compact=True,
                                        placeholder="default" if f.optional else "")
                        yield ErrorLine(id=f"err-{kind}-{f.key}")
                    if kind == core.MEMORY:
                        with Horizontal(classes="form-row"):
                            yield Label("engine", classes="form-label")
                            yield Select([(e, e) for e in core.ENGINES], value=app_options(self.app).engine,
                                         allow_blank=False, id="engine", compact=True)
            with Horizontal(classes="form-row"):
                yield Label("save as", classes="form-label")
                yield Input("", placeholder="my-sweep", id="name", compact=True)
            yield ErrorLine(id="err-name")
            yield Static("", id="form-plan")
            yield ErrorLine(id="form-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = strings.CUSTOM_TITLE + " — " + self.target.display
        self._show_kind()
        first = FIELDS[self.kind][0]
        self.query_one(f"#{self.kind}-{first.key}", Input).focus()
        if self.start_from is not None:
            self.say_start(*self.start_from)

    def say_start(self, name: str, points: int) -> None:
        """Where the fields came from; a preset that pairs its values (quick: SEQ1M Q8T1, RND4K Q32T1, …)
        becomes every combination here, and the count says so."""
        self.sub_title = strings.CUSTOM_FROM.format(name=name) + " — " + self.target.display
        values = self.validate()
        n = len(describe_plan(self._preset(values)).points) if values is not None else points
        if n != points:
            self.notify(strings.CUSTOM_FROM_MATRIX.format(name=name, points=points, n=n), severity="warning",
                        timeout=10)

    @property
    def kind(self) -> str:
        value = self.query_one("#kind", Select).value
        return value if isinstance(value, str) else core.STORAGE

    def _show_kind(self) -> None:
        for kind in FIELDS:
            self.query_one(f"#fields-{kind}").display = kind == self.kind
        self.validate()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Marks the focused field's row (-focused, app/tui.tcss): its label shows in reverse video. A class,
        since Textual leaves a :focus-within style on the label after the focus moves on."""
        for row in self.query(".form-row"):
            row.set_class(row is event.widget.parent, "-focused")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "kind":
            self._show_kind()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "name":
            self.query_one("#err-name", ErrorLine).show("")
            return
        self.validate(only=event.input.id)
        self.query_one("#form-status", ErrorLine).show("")

    def validate(self, only: str | None = None) -> dict[str, list[object]] | None:
        """Check every field of the current kind; show errors inline; the parsed values when all are valid."""
        kind = self.kind
        values: dict[str, list[object]] = {}
        ok = True
        for f in FIELDS[kind]:
            wid = f"{kind}-{f.key}"
            parsed, error = check_field(kind, f.key, self.query_one(f"#{wid}", Input).value, f.optional)
            if only is None or only == wid:
                self.query_one(f"#err-{wid}", ErrorLine).show(error)
            if parsed is None:
                ok = False
            elif parsed:
                values[f.key] = parsed
        plan = self.query_one("#form-plan", Static)
        if not ok:
            plan.update("")
            return None
        try:  # e.g. a plan above the point cap, or a name the preset format refuses
            d = describe_plan(self._preset(values))
        except ProfilerError as e:
            plan.update(Text(str(e), style="bold red"))
            return None
        plan.update(d.totals + (" — " + d.access if kind == core.STORAGE else ""))
        return values

    def preset_name(self) -> str:
        return self.query_one("#name", Input).value.strip()

    def _preset(self, values: dict[str, list[object]]) -> core.Preset:
        import tomllib

        text = build_toml(self.preset_name() or "custom-sweep", self.kind, values)
        return core.parse_preset(tomllib.loads(text), "custom sweep (TUI)")

    def _engine(self) -> str:
        value = self.query_one("#engine", Select).value
        return value if isinstance(value, str) else "auto"

    def _valid_values(self) -> dict[str, list[object]] | None:
        """The form's values when every field is valid; otherwise None, and the form says so."""
        values = self.validate()
        self.query_one("#form-status", ErrorLine).show(strings.FORM_INVALID if values is None else "")
        return values

    def action_run(self) -> None:
        values = self._valid_values()
        if values is None:
            return
        engine = self._engine() if self.kind == core.MEMORY else None
        self.post_message(StartRun(self._preset(values), self.target, engine))

    def action_save(self) -> None:
        values = self._valid_values()
        if values is None:
            return
        name = self.preset_name()
        if not name:
            self.query_one("#err-name", ErrorLine).show(strings.NAME_REQUIRED)
            self.query_one("#name", Input).focus()
            return
        text = build_toml(name, self.kind, values)
        question = self.save_question(name)
        if question is None:
            self._write(name, text)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._write(name, text)
            else:
                self.query_one("#err-name", ErrorLine).show(strings.SAVE_KEPT.format(name=name))

        self.app.push_screen(YesNo(question), answered)

    @staticmethod
    def save_question(name: str) -> str | None:
        """What to ask before saving ``name``: overwriting a user preset, or shadowing a shipped one."""
        mine = core.user_dir() / f"{name}.toml"
        if mine.exists():
            return strings.SAVE_OVERWRITE.format(name=name, path=mine)
        if (core.shipped_dir() / f"{name}.toml").exists():
            return strings.SAVE_SHADOW.format(name=name)
        return None

    def _write(self, name: str, text: str) -> None:
        try:
            path = core.save_user_preset(text, name)
        except (ProfilerError, OSError) as e:
            self.query_one("#err-name", ErrorLine).show(strings.SAVE_FAILED.format(error=e))
            return
        self.query_one("#form-status", ErrorLine).show("")
        self.notify(strings.SAVED.format(path=path))

    def action_back(self) -> None:
        self.app.pop_screen()

