"""The TUI's words for the core's sentences that name a CLI flag (app.screens.words): each phrase the safety rules
write says what to do in the TUI instead, and nothing else of the sentence changes."""

from __future__ import annotations

import pytest

from app.screens.words import tui_words


@pytest.mark.parametrize(("cli", "tui"), [
    ("needs --allow-destructive", "needs the device name typed"),
    ("a read-only plan never writes /dev/sdz; it needs confirmation (--yes)",
     "a read-only plan never writes /dev/sdz; it needs confirmation"),
    ("/dev/sdz carries a signature. Pass --allow-destructive to destroy it.",
     "/dev/sdz carries a signature. Type the device name in its confirmation to destroy it."),
    ("/dev/loop7: pass --yes to confirm the read-only run on it.",
     "/dev/loop7: confirm the read-only run on it first."),
    ("destruction confirmed with --allow-destructive", "destruction confirmed by typing the device name"),
    ("ok with --yes", "ok, confirm"),
    ("put back when it ends (--tune)", "put back when it ends"),
    ("nothing to translate -- here", "nothing to translate -- here"),
])
def test_a_cli_flag_is_said_in_the_tuis_words(cli: str, tui: str) -> None:
    assert tui_words(cli) == tui

