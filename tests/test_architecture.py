"""The package's shape: one import name, layers that import only downwards, no cycles,
plugins that need nothing but the public api.

Every import of every module is read from its source (imports inside functions and under
TYPE_CHECKING included), so an arrow cannot hide in a function body.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import ROOT, read_records

# Lower layers first; a module may import its own package and the layers below it.
LAYERS = {
    "lifebench.api": 0, "lifebench.splits": 0,
    "lifebench.registry": 1, "lifebench.embedding_store": 1, "lifebench.embeddings": 2,
    "lifebench.config": 2,
    "lifebench.llm": 3, "lifebench.store": 3,
    "lifebench.runner": 4,
    "lifebench.data": 4,
    "lifebench.leaderboard": 5, "lifebench.testing": 5,
    "lifebench.planning": 6,
    "lifebench.cli": 7,
}
# Plugins import the api (methods also the llm layer and the embeddings their matching
# and retrieval share) and their own kind's packages.
PLUGINS = {
    "lifebench.benchmarks": ("lifebench.api", "lifebench.splits", "lifebench.benchmarks"),
    "lifebench.methods": ("lifebench.api", "lifebench.llm", "lifebench.embeddings",
                          "lifebench.methods"),
}
OLD_NAMES = ("harness", "benchmarks", "methods", "leaderboard", "splits")


def folders() -> dict[str, Path]:
    """setup.py's map from package to folder (read, not run)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "FOLDERS":
            return {k: ROOT / v for k, v in ast.literal_eval(node.value).items()}
    raise AssertionError("setup.py has no FOLDERS")


def modules() -> dict[str, Path]:
    """Every module of the installed package, by its import name."""
    out = {}
    for package, folder in folders().items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join((package, *parts))] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules `name` imports (submodules resolved), wherever in the file."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + int(is_package)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in known else base)
    return out


def owner(module: str, table: dict) -> str | None:
    """The longest key of `table` that is `module` or a package holding it."""
    found = [k for k in table if module == k or module.startswith(k + ".")]
    return max(found, key=len) if found else None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def test_every_module_is_placed(graph):
    unplaced = [m for m in graph if m != "lifebench" and not owner(m, {**LAYERS, **PLUGINS})]
    assert not unplaced, f"modules in no layer: {unplaced}"


def test_layers_point_down_and_plugins_import_only_the_api(graph):
    wrong = []
    for module, targets in graph.items():
        for target in targets:
            top = target.split(".")[0]
            if top in OLD_NAMES:
                wrong.append(f"{module} -> {target} (not under lifebench)")
            if top != "lifebench" or target == "lifebench":
                continue  # other projects' modules; the root holds only the version
            plugin = owner(module, PLUGINS)
            if plugin:
                if not owner(target, dict.fromkeys(PLUGINS[plugin])):
                    wrong.append(f"{module} -> {target} (a plugin imports the api only)")
                continue
            if owner(target, PLUGINS):
                wrong.append(f"{module} -> {target} (core code names a plugin)")
                continue
            mine, theirs = owner(module, LAYERS), owner(target, LAYERS)
            if theirs == "lifebench.cli" and mine != "lifebench.cli":
                wrong.append(f"{module} -> {target} (nothing imports the cli)")
            elif mine and theirs and mine != theirs and LAYERS[theirs] >= LAYERS[mine]:
                wrong.append(f"{module} -> {target} (layer {LAYERS[mine]} imports layer {LAYERS[theirs]})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_import_cycles(graph):
    """Tarjan's strongly connected components over the module graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in graph:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for node in graph:
        if node not in index:
            visit(node)
    assert not cycles, f"import cycles: {cycles}"


def test_the_checker_sees_what_it_must(tmp_path):
    """The walk finds imports in function bodies, relative imports and submodules."""
    path = tmp_path / "mod.py"
    path.write_text("def f():\n    from lifebench.cli import main\n"
                    "from . import sibling\nfrom .other import x\n")
    known = {"lifebench.runner.sibling"}
    assert imports("lifebench.runner.mod", path, known) == {
        "lifebench.cli", "lifebench.runner.sibling", "lifebench.runner.other"}


def test_only_lifebench_is_installed(tmp_path):
    """From outside the repository the old top-level names are gone, the api is there."""
    probe = ("import importlib.util, lifebench.api\n"
             f"print([n for n in {OLD_NAMES!r} if importlib.util.find_spec(n) is not None])\n"
             "print(len(lifebench.api.__all__))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    found, count = result.stdout.splitlines()
    assert found == "[]" and int(count) > 20


def test_a_plugin_importing_only_the_api_runs(cli, tmp_path):
    """The test plugin is a package of its own that imports lifebench.api and nothing else
    of lifebench's; its methods run through the harness."""
    source = ROOT / "tests" / "fixtures" / "testplugin"
    used = defaultdict(set)
    for path in source.rglob("*.py"):
        for target in imports("lifebench_testplugin." + path.stem, path, set()):
            if target.split(".")[0] == "lifebench":
                used[target].add(path.name)
    assert set(used) == {"lifebench.api"}, dict(used)
    out = tmp_path / "out"
    result = cli("run", "--no-progress", "--benchmark", "plancraft", "--split", "val.small",
                 "--method", "counter", "--limit", "4", "--workers", "0", "--out", str(out))
    assert result.returncode == 0, result.stderr
    records = read_records(out)
    assert len(records) == 4 and [r["extra"]["memory_size"] for r in records] == [1, 2, 3, 4]


def test_api_exports_what_it_lists():
    import lifebench.api as api

    assert all(hasattr(api, name) for name in api.__all__)
    assert {"Benchmark", "Method", "EpisodeRecord", "Metric", "Table", "Budget",
            "ChatModel", "Teacher", "UserError"} <= set(api.__all__)
