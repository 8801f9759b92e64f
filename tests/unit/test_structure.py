"""The package's shape, checked from the source: no import cycle among app modules, no screen module
that imports another screen module inside a function (the way a cycle hides), and an import-linter
contract that covers every headless module.

The layers (docs/architecture.md) are checked here too, beside the import-linter layers contract: no module
imports another module's ``_private`` name, no two app packages import each other (a package cycle; the
contract's listed exceptions aside), and only ``app.store`` names the files of a results directory.  Each rule
runs on a small made-up tree as well, where it must fail.

Imports are read with ``ast`` (every ``import`` statement, at module level or inside a function), so
the checks see lazy imports too; lazy imports of core modules for start-up time are fine as long as
they make no cycle.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections import Counter
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
    # app.cli itself is a package of a docstring: the contract names its modules, as app.cli.console is UI
    outside = sorted(set(MODULES) - set(core_modules()) - set(ui) - {"app", "app.__main__", "app.cli"})
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


# --- the layers ---------------------------------------------------------------------------------------------------


def modules_in(root: Path) -> dict[str, Path]:
    """The modules of the ``app`` package under ``root``, by dotted name."""
    out = {}
    for path in sorted((root / "app").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def from_imports(modules: dict[str, Path]) -> list[tuple[str, str, str, int]]:
    """(module, the module it imports from, the name, line) of every ``from … import name`` of an app module
    (``import app.x`` gives the name "")."""
    found: list[tuple[str, str, str, int]] = []
    for module, path in modules.items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(module, path, node)
                found.extend((module, base, a.name, node.lineno) for a in node.names if base.split(".")[0] == "app")
            elif isinstance(node, ast.Import):
                found.extend((module, a.name, "", node.lineno) for a in node.names if a.name.split(".")[0] == "app")
    return found


def private_imports(modules: dict[str, Path]) -> list[tuple[str, str, str, int]]:
    """Every import of another module's ``_private`` name (dunder names are public)."""
    return [(m, base, name, line) for m, base, name, line in from_imports(modules)
            if name.startswith("_") and not name.startswith("__") and base != m and f"{base}.{name}" not in modules]


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _pattern(text: str) -> re.Pattern[str]:
    """An import-linter module pattern: ``*`` one name, ``**`` one or more."""
    parts = [r"[^.]+(\.[^.]+)*" if p == "**" else r"[^.]+" if p == "*" else re.escape(p) for p in text.split(".")]
    return re.compile(r"\.".join(parts) + "$")


def package_cycles(modules: dict[str, Path], allowed: list[str]) -> list[list[str]]:
    """The cycles between app packages (``app.host``, ``app.report``, ``app.tui`` …) through any import, at
    module level or in a function; ``allowed``: imports "a -> b" (import-linter's patterns) left out."""
    rules = [tuple(_pattern(side.strip()) for side in rule.split("->")) for rule in allowed]
    edges: dict[str, set[str]] = {package_of(m): set() for m in modules if m != "app"}
    for module, base, name, line in from_imports(modules):
        target = f"{base}.{name}" if f"{base}.{name}" in modules else base
        a, b = package_of(module), package_of(target)
        if a == b or "app" in (a, b) or b not in edges:
            continue
        if any(src.match(module) and dst.match(target) for src, dst in rules):
            continue
        edges[a].add(b)
    graph = {p: [Import(p, t, 0, False) for t in sorted(ts)] for p, ts in edges.items()}
    return cycles(graph)


RESULTS_FILES = ("run.json", "results.jsonl", "raw")


def results_file_names(modules: dict[str, Path]) -> Counter[str]:
    """Per module outside ``app.store``: the string literals that name a results directory's files (``run.json``,
    ``results.jsonl``, ``raw`` or a path under ``raw/``): where such a file is opened or its path is made."""
    found: Counter[str] = Counter()
    for module, path in modules.items():
        if module == "app.store" or module.startswith("app.store."):
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in RESULTS_FILES or node.value.startswith("raw/"):
                    found[module] += 1
    return found


def _layers_contract() -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["type"] == "layers")


# the imports of another module's private name that are left (each a shared helper of the report's figures and
# sections still private to its module): a new one fails, and the count may only fall
KNOWN_PRIVATE = {  # (module, the module it imports from): the names
    ("app.report.figures.fleet_plots", "app.report.figures.plots"):
        {"_page_name", "_page_title", "_plain_log", "_plt", "_save"},
    ("app.report.fleet_render", "app.report.render"):
        {"_environment", "_figures", "_run", "_storage_table"},
    ("app.report.figures.heat", "app.report.figures.plots"):
        {"_page_name", "_page_title", "_plain_log", "_plt", "_save"},
    ("app.report.figures.queue_plots", "app.report.figures.plots"):
        {"_grid", "_log2_axis", "_plain_log", "_plt", "_save"},
    ("app.report.figures.suite_plots", "app.report.figures.plots"):
        {"_bright", "_contended_entry", "_legend_with", "_mark_contended", "_plain_log", "_plt", "_save"},
    ("app.report.figures.tail_plots", "app.report.figures.fleet_plots"):
        {"_colours", "_legend_width"},
    ("app.report.figures.tail_plots", "app.report.figures.plots"):
        {"_colour_scale", "_grid", "_page_name", "_page_title", "_pages", "_plain_log", "_plt", "_save"},
}

# the modules outside app.store that still name a results directory's files, with how many times: a new module
# fails, and a count may only fall (the store's readers and writers are the place for a new one)
KNOWN_RESULTS_FILES = {
    "app.model.records": 5,
    "app.engine.replay": 4,
    "app.engine.importer": 5,
    "app.engine.sweep": 1,
    "app.host.telemetry": 2,
    "app.report.sections.drive": 1,
    "app.report.figures.series": 1,
    "app.screens.replay": 1,
    "app.screens.report": 2,
    "app.screens.results": 2,
    "app.screens.state": 2,
}


def test_no_module_imports_another_modules_private_name() -> None:
    found = private_imports(MODULES)
    new = [f"{m}:{line} imports {base}.{name}" for m, base, name, line in found
           if name not in KNOWN_PRIVATE.get((m, base), set())]
    assert not new, "a private name is the module's own; make it public where it is shared: " + "; ".join(new)
    assert len(found) <= sum(len(names) for names in KNOWN_PRIVATE.values())


def test_no_cycle_between_app_packages() -> None:
    found = package_cycles(MODULES, _layers_contract().get("ignore_imports", []))
    assert not found, f"app packages that import each other: {found}"


def test_only_the_store_names_the_results_files() -> None:
    found = results_file_names(MODULES)
    over = {m: n for m, n in found.items() if n > KNOWN_RESULTS_FILES.get(m, 0)}
    assert not over, f"modules outside app.store that name run.json, results.jsonl or raw/ (app.store's work): {over}"


def test_the_layers_contract_names_every_package() -> None:
    """A new package is placed in a layer, or the contract says nothing of it."""
    named = {p.strip() for layer in _layers_contract()["layers"] for p in re.split(r"[|:]", layer)}
    packages = {package_of(m) for m in MODULES} - {"app", "app.__main__"}
    assert packages == named, f"not a layer: {sorted(packages - named)}; a layer but gone: {sorted(named - packages)}"


def _fake_tree(root: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in {"app/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return modules_in(root)


def test_each_layer_rule_fails_on_a_violation(tmp_path: Path) -> None:
    """Control: a made-up tree with one of each violation; each rule finds its own and nothing else."""
    bad = _fake_tree(tmp_path / "bad", {
        "app/store/__init__.py": "",
        "app/store/files.py": "def path(d):\n    return d / 'run.json'\n",  # the store may
        "app/a/__init__.py": "",
        "app/a/x.py": "from app.b.y import _hidden, shown\n\n\ndef load(d):\n    return open(d / 'results.jsonl')\n",
        "app/b/__init__.py": "",
        "app/b/y.py": "_hidden = shown = 1\n\n\ndef later():\n    from app.a import x\n    return x\n",
    })
    assert private_imports(bad) == [("app.a.x", "app.b.y", "_hidden", 1)]
    assert package_cycles(bad, []) == [["app.a", "app.b"]]
    assert package_cycles(bad, ["app.b.** -> app.a.*"]) == []  # a listed exception breaks it
    assert results_file_names(bad) == Counter({"app.a.x": 1})
    good = _fake_tree(tmp_path / "good", {
        "app/store/__init__.py": "",
        "app/store/files.py": "def path(d):\n    return d / 'run.json'\n",
        "app/a/__init__.py": "",
        "app/a/x.py": "from app.b.y import shown\nfrom app.store.files import path\n",
        "app/b/__init__.py": "",
        "app/b/y.py": "_hidden = shown = 1\n",
    })
    assert private_imports(good) == [] and package_cycles(good, []) == [] and results_file_names(good) == Counter()
