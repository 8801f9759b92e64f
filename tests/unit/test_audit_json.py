"""run.json's ``audit`` (app.host.audit.to_json / from_json) and the ``audit`` command's answers and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.host.audit as audit_mod
import app.host.devstat
from app.cli.commands import main
from app.host.audit import ITEMS, STATUSES, WARNINGS, Audit, Item, from_json, to_json
from tests.helpers.audit_tree import NUMBER, build, put

# what the writer keeps of foreign text: printable, one word (clean_line folds white space)
PRINTABLE = st.characters(min_codepoint=32, max_codepoint=0x2FF,
                          blacklist_categories=("Cc", "Cs", "Cf", "Co", "Cn", "Z"))
TEXT = st.text(PRINTABLE, min_size=1, max_size=40)


@st.composite
def items(draw: st.DrawFn) -> Item:
    status = draw(st.sampled_from(STATUSES))
    return Item(draw(st.sampled_from(list(ITEMS))), None if status == "unavailable" else draw(TEXT), draw(TEXT),
                draw(TEXT), status, draw(st.sampled_from(list(WARNINGS))) if status == "warn" else None,
                draw(st.none() | TEXT))


@st.composite
def audits(draw: st.DrawFn) -> Audit:
    found = draw(st.lists(items(), max_size=len(ITEMS), unique_by=lambda i: i.key))
    cpus = tuple(sorted(draw(st.sets(st.integers(0, 300), max_size=8))))
    return Audit(draw(st.none() | TEXT), draw(st.none() | TEXT), cpus, tuple(found), draw(st.none() | TEXT),
                 read_at="2026-01-02T03:04:05+00:00")


@settings(max_examples=40, deadline=None)
@given(audits())
def test_an_audit_reads_back_as_it_was_written(a: Audit) -> None:
    back = from_json(json.loads(json.dumps(to_json(a))))
    assert back == a


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
                    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                                max_size=6),
                    max_leaves=12)
ITEM_LIKE = st.fixed_dictionaries({"key": st.sampled_from([*ITEMS, "nope"]),
                                   "status": st.sampled_from([*STATUSES, "x"])},
                                  optional={"value": JSON, "want": JSON, "why": JSON, "note": JSON,
                                            "warning": st.sampled_from([*WARNINGS, "made-up", 3])})


@settings(max_examples=50, deadline=None)
@given(st.one_of(JSON, st.fixed_dictionaries({"items": st.lists(ITEM_LIKE | JSON, max_size=24)},
                                              optional={"cpus": JSON, "target": JSON, "container": JSON,
                                                        "read_at": JSON, "device": JSON})))
def test_an_edited_audit_reads_as_none_or_as_a_typed_bounded_one(obj: object) -> None:
    a = from_json(obj)
    if a is None:
        return
    assert len(a.items) <= len(ITEMS) and len({i.key for i in a.items}) == len(a.items)
    for i in a.items:
        assert i.key in ITEMS and i.status in STATUSES
        assert i.warning is None or (i.warning in WARNINGS and i.status == "warn")
        for text in (i.value, i.want, i.why, i.note):
            assert text is None or (isinstance(text, str) and text.isprintable() and len(text) <= audit_mod.MAX_TEXT)
    assert all(isinstance(c, int) and c >= 0 for c in a.cpus)


def test_unknown_keys_statuses_and_a_warning_on_an_ok_item_are_dropped() -> None:
    a = from_json({"cpus": "0-2,9", "target": "/dev/x\x1b[2J", "items": [
        {"key": "scheduler", "status": "ok", "value": "none", "warning": "scheduler", "want": "none", "why": "w"},
        {"key": "scheduler", "status": "warn", "value": "again"},
        {"key": "flux", "status": "ok"}, {"key": "wbt", "status": "broken"}, "text", None]})
    assert a is not None and a.cpus == (0, 1, 2, 9) and a.target == "/dev/x"
    assert [(i.key, i.value, i.warning) for i in a.items] == [("scheduler", "none", None)]
    assert from_json({"items": "no"}) is None and from_json([1]) is None


# --- the command --------------------------------------------------------------------------------------------


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    sys, proc = build(tmp_path)
    monkeypatch.setenv("PROFILER_TUI_SYSFS", str(sys))
    monkeypatch.setenv("PROFILER_TUI_PROCFS", str(proc))
    monkeypatch.setattr(app.host.devstat, "device_number", lambda target: NUMBER)
    monkeypatch.setattr(audit_mod, "device_number", lambda target: NUMBER)
    monkeypatch.setattr(audit_mod, "_pause", lambda s: None)
    monkeypatch.setattr(audit_mod, "run_nvme", lambda args: "apsta : 0\nCurrent value:0x0\n")
    monkeypatch.setattr(audit_mod, "container_engine", lambda: None)
    put(sys / "devices/pci0000:00/0000:00:01.0/0000:01:00.0/nvme/nvme0/nvme0n1/queue/wbt_lat_usec", "75000\n")
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["audit", *args])
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def test_audit_json_lists_every_item_and_exits_0_with_a_warning(fake_host: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, str(fake_host / "new-file"), "--json", "--cpus", "0")
    data = json.loads(out)
    assert rc == 0 and data["device"] == "nvme0n1" and data["cpus"] == "0"
    assert [i["key"] for i in data["items"]] == list(ITEMS)
    assert [i["warning"] for i in data["items"] if i["status"] == "warn"] == ["wbt-on"]
    assert from_json(data) is not None


def test_audit_table_shows_values_wants_and_the_warning(fake_host: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = cli(capsys, str(fake_host / "new-file"))
    assert rc == 0 and out.splitlines()[0].startswith(f"audit of {fake_host / 'new-file'}: nvme0n1")
    for label in ITEMS.values():
        assert label in out
    assert "WARNING wbt-on" in out and "warning wbt-on: " + WARNINGS["wbt-on"] in out


@pytest.mark.parametrize("args,said", [
    (("/dev/null",), "not a block device or a regular file"),
    (("/nonexistent-dir/file",), "its folder does not exist"),
    (("/",), "a directory; give a file in it"),
    (("--cpus", "x-y"), "expected a CPU list"),
    (("--cpus", "60000"), "is not one this process may run on"),
])
def test_a_bad_target_or_cpu_list_exits_2_with_one_sentence(capsys: pytest.CaptureFixture[str], args: tuple[str, ...],
                                                            said: str) -> None:
    rc, out, err = cli(capsys, *args)
    assert rc == 2 and out == "" and said in err and len(err.strip().splitlines()) == 1


def test_on_a_terminal_the_rich_table_holds_the_items_and_the_warning(fake_host: Path) -> None:
    import io

    from app.cli.console import print_audit
    from app.host.audit import audit

    stream = io.StringIO()
    print_audit(audit(str(fake_host / "new-file"), (0,), swap_interval=0, engine=None), stream)
    text = stream.getvalue()
    assert "─" in text and "WARNING" in text and "warning wbt-on" in text  # rich's table, the warning named
    assert all(word in text for word in ("scheduler", "governor", "swap"))


def test_the_swap_watch_lasts_what_the_environment_says_within_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.host.audit import SWAP_INTERVAL_S, SWAP_WATCH_ENV, swap_watch_seconds

    for text, seconds in (("0.05", 0.05), ("2", 2.0), ("0", SWAP_INTERVAL_S), ("11", SWAP_INTERVAL_S),
                          ("nan", SWAP_INTERVAL_S), ("x" * 10_000, SWAP_INTERVAL_S), ("", SWAP_INTERVAL_S)):
        monkeypatch.setenv(SWAP_WATCH_ENV, text)
        assert swap_watch_seconds() == seconds, text
