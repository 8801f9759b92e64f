"""Block devices as the device tables show them: the device tree walked in order, a verdict as a coloured word
(the devices screen and a fleet host's connection test)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, Mapping, TypeVar

from rich.text import Text

from app.host.devices import human_size

if TYPE_CHECKING:
    from textual.widgets import DataTable

VERDICT_STYLE = {"ok": "green", "needs --allow-destructive": "yellow", "refused": "red"}


D = TypeVar("D", bound=Mapping[str, object])  # a device as lsblk lists it, or as another host reported it


def walk(devs: list[D], depth: int = 0) -> Iterator[tuple[int, D]]:
    """Every device and its children, depth first, with its depth in the tree."""
    for d in devs:
        yield depth, d
        children = d.get("children")
        yield from walk(children if isinstance(children, list) else [], depth + 1)


def add_device_columns(table: DataTable[object], first: str, *, fs: bool) -> None:
    """The device table's columns (a DataTable): ``first`` (the device), size, type, fs/pt when ``fs``,
    mounted and the write plan's verdict."""
    table.add_column(first, key=first, width=22)
    table.add_column("size", key="size", width=7)
    table.add_column("type", key="type", width=5)
    if fs:
        table.add_column("fs/pt", key="fs", width=8)
    table.add_column("mounted", key="mounted", width=11)
    table.add_column("write plan", key="verdict", width=11)


def device_cells(depth: int, d: dict[str, object], key: str, *, fs: bool) -> tuple[object, ...]:
    """One device's cells for the columns of :func:`add_device_columns` (values from another host are
    untrusted: every one is made text)."""
    mounts, size = d.get("mountpoints"), d.get("size")
    mounted = ",".join(str(m) for m in (mounts if isinstance(mounts, list) else [])) or "-"
    cells: list[object] = [" " * depth + key, human_size(size if isinstance(size, (int, float)) else None),
                           str(d.get("type") or "-")]
    if fs:
        cells.append(str(d.get("fstype") or d.get("pttype") or "-"))
    return (*cells, mounted, verdict_text(str(d.get("verdict", "refused"))))


def verdict_text(verdict: str, block: bool = True) -> Text:
    shown = {"needs --allow-destructive": "type name"}.get(verdict, verdict)
    if verdict == "ok" and block:
        shown = "ok, confirm"
    return Text(shown, style=VERDICT_STYLE.get(verdict, ""))
