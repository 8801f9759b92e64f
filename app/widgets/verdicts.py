"""Block devices as the device tables show them: the device tree walked in order, a verdict as a coloured word
(the devices screen and a fleet host's connection test)."""

from __future__ import annotations

from typing import Any, Iterator

from rich.text import Text

VERDICT_STYLE = {"ok": "green", "needs --allow-destructive": "yellow", "refused": "red"}


def walk(devs: list[dict[str, Any]], depth: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every device and its children, depth first, with its depth in the tree."""
    for d in devs:
        yield depth, d
        yield from walk(d.get("children") or [], depth + 1)


def verdict_text(verdict: str, block: bool = True) -> Text:
    shown = {"needs --allow-destructive": "type name"}.get(verdict, verdict)
    if verdict == "ok" and block:
        shown = "ok, confirm"
    return Text(shown, style=VERDICT_STYLE.get(verdict, ""))
