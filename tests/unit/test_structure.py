"""The package's shape, checked from the source: no import cycle among app modules, no screen module
that imports another screen module inside a function (the way a cycle hides), and an import-linter
contract that covers every headless module.

Imports are read with ``ast`` (every ``import`` statement, at module level or inside a function), so
the checks see lazy imports too; lazy imports of core modules for start-up time are fine as long as
they make no cycle.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
UI_PACKAGES = ("app.screens", "app.widgets", "app.tui", "app.cli.console")  # app.cli.console: the CLI's rich output


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(APP.rglob("*.py"))}


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    in_function: bool


def _resolve(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str) -> list[Import]:
    """Every import of an app module by ``module``: ``from pkg import sub`` counts as an import of the
    submodule (its package is loaded first, which is no cycle of its own); ``from pkg import name``
    as an import of ``pkg``."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend(Import(module, a.name, child.lineno, in_function) for a in child.names
                             if a.name in MODULES)
            elif isinstance(child, ast.ImportFrom):
                base = _resolve(module, path, child)
                for alias in child.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if sub in MODULES else base
                    if target in MODULES and target != module:
                        found.append(Import(module, target, child.lineno, in_function))
            visit(child, inner)

    visit(tree, False)
    return found


GRAPH = {m: imports_of(m) for m in MODULES}


def cycles(graph: dict[str, list[Import]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for edge in graph[v]:
            w = edge.target
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            connect(v)
    return found


def test_the_walk_sees_imports() -> None:
    """Control: the walk finds known imports, both kinds (a walk that sees nothing passes everything)."""
    assert any(e.target == "app.plan.presets" and not e.in_function for e in GRAPH["app.cli.commands"])
    assert any(e.target == "app.tui" and e.in_function for e in GRAPH["app.cli.commands"])  # the default command
    assert any(e.target == "app.cli.console" and e.in_function for e in GRAPH["app.cli.commands"])  # rich, on a
                                                                                                    # terminal
    assert not any(e.target == "app.cli.console" and not e.in_function for e in GRAPH["app.cli.commands"])
    assert len(MODULES) > 30


def test_no_import_cycle_among_app_modules() -> None:
    found = cycles(GRAPH)
    detail = ["; ".join(f"{e.source}:{e.line} -> {e.target}" for m in c for e in GRAPH[m] if e.target in c)
              for c in found]
    assert not found, "import cycles: " + " | ".join(detail)


def test_a_cycle_through_a_function_level_import_is_found() -> None:
    """Control for the check above, on a made-up graph: a -> b at module level, b -> c -> a in functions."""
    graph = {"a": [Import("a", "b", 1, False)], "b": [Import("b", "c", 1, True)],
             "c": [Import("c", "a", 9, True)], "d": [Import("d", "a", 1, False)]}
    assert cycles(graph) == [["a", "b", "c"]]


# the app shell: it handles the screens' messages and pushes screens, imported when first shown (start-up time)
SHELL = "app.screens.application"


def test_no_screen_imports_another_screen_inside_a_function() -> None:
    """Screens ask the app shell for another screen with a message; only the shell imports screens lazily."""
    hidden = [f"{e.source}:{e.line} imports {e.target}" for m in MODULES if m.startswith("app.screens.")
              and m != SHELL for e in GRAPH[m] if e.in_function and e.target.startswith("app.screens.")]
    assert not hidden, "screens talk through messages, not function-level imports: " + "; ".join(hidden)


def _contract() -> dict:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = data["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"].startswith("The headless core"))


def core_modules() -> list[str]:
    """The contract's source modules, packages expanded to every module below them."""
    sources = _contract()["source_modules"]
    return sorted(m for m in MODULES if any(m == s or m.startswith(s + ".") for s in sources))


def test_contract_covers_every_headless_module() -> None:
    """Every app module is either UI (screens, widgets, tui), the entry point, or under the contract: a
    new core module cannot escape the check by not being listed."""
    ui = [m for m in MODULES if any(m == u or m.startswith(u + ".") for u in UI_PACKAGES)]
    outside = sorted(set(MODULES) - set(core_modules()) - set(ui) - {"app", "app.__main__"})
    assert not outside, f"modules neither UI nor in the import-linter contract: {outside}"
    contract = _contract()
    assert set(UI_PACKAGES) <= set(contract["forbidden_modules"])
    assert contract.get("unmatched_ignore_imports_alerting") == "error"


@pytest.mark.parametrize("module", ["app.engine.sweep", "app.report", "app.cli.commands"])
def test_core_modules_are_in_the_contract(module: str) -> None:
    assert module in core_modules()


def test_every_test_module_has_its_own_basename() -> None:
    # pytest collects tests/unit and tests/integration in one session with rootdir-relative imports: two
    # test files of one name make the second an "import file mismatch" that stops the whole run
    seen: dict[str, Path] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        assert path.name not in seen, f"{path} and {seen[path.name]} share a basename"
        seen[path.name] = path
