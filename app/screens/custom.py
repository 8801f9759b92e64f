"""The custom-sweep form: inline validation by the core's own key parsers, save as a user preset, run.  The form
edits the preset it starts from (app.plan.formplan): it shows the keys the plan's modes read, keeps the preset's
pairing and labels, and says in the form when an edit cannot keep them."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Input, Label, Select, Static

from app.core.errors import ProfilerError
from app.plan import formplan
from app.plan import presets as core
from app.plan.describe import PlanDescription, describe_plan
from app.plan.formplan import FIELDS, Field, check_field
from app.screens import strings
from app.screens.confirm import YesNo
from app.screens.messages import StartRun
from app.screens.state import TargetChoice, app_options, overrides_for
from app.widgets import ErrorLine, KeysFooter, StyledOnce, TooSmall


class CustomSweepScreen(StyledOnce, Screen[None]):
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
    # the first field takes the focus as the form is composed (on_mount focuses it too): focused first, the form's
    # scrolling box styled all its fields again on taking the focus and again on handing it to the field
    AUTO_FOCUS = ".fields Input"

    def __init__(self, target: TargetChoice, kind: str = core.STORAGE, start: core.Preset | None = None,
                 ahead: bool = False) -> None:
        super().__init__()
        if ahead:  # composed off screen: no focus until shown (else its first field took it twice, made and shown)
            self.__dict__["AUTO_FOCUS"] = ""
        self.target = target
        self.initial_kind = start.kind if start is not None else kind
        self.start = formplan.start_values(start) if start is not None else {}
        self.start_from = start.name if start is not None else None
        # the preset the form edits: its groups, labels, procedure and the keys without a field are kept
        self.base = {k: formplan.blank(k, "custom-sweep", strings.CUSTOM_DESCRIPTION) for k in FIELDS}
        if start is not None:
            table = formplan.table_of(start)
            table.description = strings.CUSTOM_FROM_DESCRIPTION.format(name=start.name)
            self.base[start.kind] = table
        # the fields' values as the form first showed them: a field left so changes nothing (empty: a form
        # without a preset, where every field is the plan)
        self.first: dict[str, dict[str, list[object]]] = {k: {} for k in FIELDS}
        self.plan: formplan.FormPlan | None = None
        self.shown = False  # shown once: kept for the next visit (restart), else still as made

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Before Screen's own handler (Textual calls one of ``_on_screen_resume`` and ``on_screen_resume`` a
        class): a form made ahead gives the focus to its first field as it is shown."""
        self.__dict__.pop("AUTO_FOCUS", None)
        self.shown = True

    def restart(self) -> None:
        """The form of a new visit, as a new form would show it: each field at the preset's value (the edits of
        the last visit gone), the preset's kind, no name, no errors, the first field focused."""
        if not self.is_mounted:
            return
        for kind in FIELDS:
            if not self.query_one(f"#fields-{kind}", Vertical).children:
                continue
            for f in FIELDS[kind]:
                self.query_one(f"#{kind}-{f.key}", Input).value = self._initial(kind, f)
                self.query_one(f"#err-{kind}-{f.key}", ErrorLine).show("")
            if kind == core.MEMORY:
                self.query_one("#engine", Select).value = app_options(self.app).engine
        self.query_one("#kind", Select).value = self.initial_kind
        self.query_one("#name", Input).value = ""
        for error in ("#err-name", "#form-status"):
            self.query_one(error, ErrorLine).show("")
        self._show_kind()
        self.query_one(f"#{self.kind}-{FIELDS[self.kind][0].key}", Input).focus()
        self.query_one("#form", VerticalScroll).scroll_home(animate=False)

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
            yield Static("", id="form-pairing")  # on top: what the edits keep of the preset's pairing
            with Horizontal(classes="form-row"):
                yield Label("kind", classes="form-label")
                yield Select([("storage (fio)", core.STORAGE), ("memory", core.MEMORY)], value=self.initial_kind,
                             allow_blank=False, id="kind", compact=True)
            for kind in FIELDS:
                # only the kind shown is made now (half the form's widgets, composed on the key that opens it);
                # the other's fields are made when the kind is switched to it (build_kind)
                yield Vertical(*(self.kind_widgets(kind) if kind == self.initial_kind else ()), id=f"fields-{kind}",
                               classes="fields")
            with Horizontal(classes="form-row"):
                yield Label("save as", classes="form-label")
                yield Input("", placeholder="my-sweep", id="name", compact=True)
            yield ErrorLine(id="err-name")
            yield Static("", id="form-plan")
            yield ErrorLine(id="form-status")
        yield KeysFooter()

    def kind_widgets(self, kind: str) -> list[Widget]:
        """The rows of a kind's fields (a label, the field, the error line under it; memory: the engine too)."""
        out: list[Widget] = []
        for f in FIELDS[kind]:
            out.append(Horizontal(Label(f.label, classes="form-label"),
                                  Input(self._initial(kind, f), id=f"{kind}-{f.key}", compact=True,
                                        placeholder="default" if f.optional else ""),
                                  classes="form-row", id=f"row-{kind}-{f.key}"))
            out.append(ErrorLine(id=f"err-{kind}-{f.key}"))
        if kind == core.MEMORY:
            out.append(Horizontal(Label("engine", classes="form-label"),
                                  Select([(e, e) for e in core.ENGINES], value=app_options(self.app).engine,
                                         allow_blank=False, id="engine", compact=True),
                                  classes="form-row"))
        return out

    async def build_kind(self, kind: str) -> None:
        """The fields of ``kind``, made the first time the form shows that kind."""
        box = self.query_one(f"#fields-{kind}", Vertical)
        if not box.children:
            await box.mount_all(self.kind_widgets(kind))

    def on_mount(self) -> None:
        self.sub_title = strings.CUSTOM_TITLE + " — " + self.target.display
        if self.start_from is not None:
            self.sub_title = strings.CUSTOM_FROM.format(name=self.start_from) + " — " + self.target.display
            self.first[self.initial_kind] = {
                f.key: parsed for f in FIELDS[self.initial_kind]
                if (parsed := self._parse(self.initial_kind, f)[0]) is not None}
        self._show_kind()
        if self.is_current:  # made ahead off screen: its first field takes the focus as it is shown (AUTO_FOCUS)
            first = FIELDS[self.kind][0]
            self.query_one(f"#{self.kind}-{first.key}", Input).focus()

    def _parse(self, kind: str, f: Field) -> tuple[list[object] | None, str]:
        return check_field(kind, f.key, self.query_one(f"#{kind}-{f.key}", Input).value, f.optional)

    @property
    def kind(self) -> str:
        value = self.query_one("#kind", Select).value
        return value if isinstance(value, str) else core.STORAGE

    def _show_kind(self) -> None:
        for kind in FIELDS:
            self.query_one(f"#fields-{kind}").display = kind == self.kind
        self.validate()

    def shown_fields(self, kind: str) -> list[Field]:
        """The fields of the keys the plan's modes read (memory: its modes' keys; storage: the mix only for
        rw/randrw), from the mode field as typed, else as the form first showed it."""
        key = formplan.mode_key(kind)
        modes = self._parse(kind, next(f for f in FIELDS[kind] if f.key == key))[0]
        if modes is None:
            modes = self.first[kind].get(key) or []
        keys = formplan.shown_keys(kind, modes)
        return [f for f in FIELDS[kind] if f.key in keys]

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Marks the focused field's row (-focused, app/tui.tcss): its label shows in reverse video. A class,
        since Textual leaves a :focus-within style on the label after the focus moves on."""
        for row in self.query(".form-row"):
            row.set_class(row is event.widget.parent, "-focused")

    async def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "kind":
            await self.build_kind(self.kind)
            self._show_kind()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "name":
            self.query_one("#err-name", ErrorLine).show("")
            return
        self.validate(only=event.input.id)
        self.query_one("#form-status", ErrorLine).show("")

    def validate(self, only: str | None = None) -> dict[str, list[object]] | None:
        """Check every shown field of the current kind; show errors inline, and what the plan keeps of the
        preset's pairing; the parsed values when all are valid."""
        kind = self.kind
        shown = self.shown_fields(kind)
        for f in FIELDS[kind]:
            visible = f in shown
            self.query_one(f"#row-{kind}-{f.key}").display = visible
            if not visible:
                self.query_one(f"#err-{kind}-{f.key}", ErrorLine).show("")
        values: dict[str, list[object]] = {}
        ok = True
        for f in shown:
            wid = f"{kind}-{f.key}"
            parsed, error = self._parse(kind, f)
            if only is None or only == wid or only == f"{kind}-{formplan.mode_key(kind)}":
                self.query_one(f"#err-{wid}", ErrorLine).show(error)
            if parsed is None:
                ok = False
            else:
                values[f.key] = parsed
        plan = self.query_one("#form-plan", Static)
        pairing = self.query_one("#form-pairing", Static)
        self.plan = None
        pairing.display = False
        if not ok:
            plan.update("")
            return None
        try:  # e.g. a plan above the point cap, or a name the preset format refuses
            self.plan = formplan.form_plan(self.base[kind], values, self.first[kind])
            d = describe_plan(self._preset())
        except ProfilerError as e:
            self.plan = None
            plan.update(Text(str(e), style="bold red"))
            return None
        note = self.plan.note
        pairing.update(Text(note, style="" if self.plan.kept else "bold yellow"))
        pairing.display = bool(note)
        plan.update(self.plan_text(d) + (" — " + d.access if kind == core.STORAGE else ""))
        return values

    @staticmethod
    def plan_text(d: PlanDescription) -> str:
        """The plan's count, its tests apart from their replicates: "8 tests × 3 replicates: 24 points, …"."""
        replicates = max((getattr(p, "replicate", None) or 1 for p in d.points), default=1)
        if replicates > 1:
            return strings.CUSTOM_REPLICATES.format(tests=len(d.points) // replicates, replicates=replicates,
                                                    totals=d.totals)
        return d.totals

    def preset_name(self) -> str:
        return self.query_one("#name", Input).value.strip()

    def _table(self, name: str | None = None) -> formplan.Table:
        assert self.plan is not None
        table = self.plan.table
        table.name = name or self.preset_name() or "custom-sweep"
        return table

    def _preset(self) -> core.Preset:
        return formplan.preset_of(self._table())

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
        self.post_message(StartRun(self._preset(), self.target, engine))

    def action_save(self) -> None:
        values = self._valid_values()
        if values is None:
            return
        name = self.preset_name()
        if not name:
            self.query_one("#err-name", ErrorLine).show(strings.NAME_REQUIRED)
            self.query_one("#name", Input).focus()
            return
        text = formplan.to_toml(self._table(name))
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

