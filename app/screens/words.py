"""The TUI's words for what the core says to the command line: a reason or an error that names a CLI flag
(``(--yes)``, ``needs --allow-destructive``, ``pass --yes``) says instead what to do in the TUI, where the
confirmation and the typed device name are those flags."""

from __future__ import annotations

import re

# (pattern, replacement), in order: the specific phrases first, then any "(--flag)" aside left
_PHRASES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    (r"needs --allow-destructive", "needs the device name typed"),
    (r"confirmed with --allow-destructive", "confirmed by typing the device name"),
    (r"confirmed with --yes", "confirmed"),
    (r"ok with --yes", "ok, confirm"),
    (r"Pass --allow-destructive to destroy it\.", "Type the device name in its confirmation to destroy it."),
    (r"pass --yes to confirm the ([\w-]+) run on it\.", r"confirm the \1 run on it first."),
    (r"\s*\((?:the TUI's )?--[a-z][a-z-]*\)", ""),
))


def tui_words(text: str) -> str:
    """``text`` with the CLI's flags said as the TUI does it (the text is otherwise unchanged)."""
    if "--" not in text:
        return text
    for pattern, replacement in _PHRASES:
        text = pattern.sub(replacement, text)
    return text
