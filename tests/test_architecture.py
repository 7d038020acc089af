"""The package structure stays learnable: no import cycles between the packages of ``app/``,
and nothing in a package imports the wiring modules at the top of ``app/`` (``main``, ``lifespan``,
``__main__``). What ``sandbox/`` may import is checked by ``tests/sandbox/test_boundaries.py``.

Imports are read from the source (every ``import``, including those inside functions: a lazy
import still couples two packages), so nothing is executed.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from app.core.config import REPO_ROOT
from tests.support.imports import imports, modules

# An edge between two packages, and the places (file:line) that make it.
Graph = dict[str, dict[str, list[str]]]


def package_graph(root: Path, top: str) -> Graph:
    """Edges between the direct subpackages (or top-level modules) of ``root`` (named ``top``
    when imported)."""
    graph: Graph = defaultdict(lambda: defaultdict(list))
    for source in modules(root):
        relative = source.relative_to(root)
        here = relative.parts[0].removesuffix(".py")
        for found in imports(source):
            parts = found.module.split(".")
            if found.level:
                continue  # relative: within its own package
            if parts[0] != top or len(parts) < 2 or parts[1] == here:
                continue
            graph[here][parts[1]].append(f"{top}/{relative}:{found.line}")
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one package (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
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
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _describe(graph: Graph, component: list[str]) -> str:
    edges = [
        f"  {a} -> {b}: {', '.join(graph[a][b][:3])}"
        for a in component
        for b in component
        if b in graph.get(a, {})
    ]
    return " <-> ".join(component) + "\n" + "\n".join(edges)


def test_no_import_cycles_between_app_packages() -> None:
    graph = package_graph(REPO_ROOT / "app", "app")
    found = cycles(graph)
    assert not found, "import cycles between app/ packages:\n" + "\n".join(
        _describe(graph, c) for c in found
    )


def test_no_package_imports_the_wiring_modules() -> None:
    """``app.main``, ``app.lifespan`` and ``app.__main__`` import every package; a package that
    imported them back would close a cycle through the whole service."""
    graph = package_graph(REPO_ROOT / "app", "app")
    wiring = {"main", "lifespan", "__main__"}
    wrong = [
        f"{a} -> {b}: {places[0]}"
        for a, targets in graph.items()
        if a not in wiring
        for b, places in targets.items()
        if b in wiring
    ]
    assert not wrong, "\n".join(wrong)


def test_the_cycle_check_finds_a_cycle(tmp_path: Path) -> None:
    """The check itself can fail: a three-package cycle hidden in a function-level import."""
    for package, body in {
        "alpha": "from pkg.beta import x\n",
        "beta": "def f():\n    from pkg.gamma.deep import y\n",
        "gamma": "import pkg.delta\n",
        "delta": "",
    }.items():
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
        (tmp_path / package / "mod.py").write_text(body)
    (tmp_path / "gamma" / "deep.py").write_text("from pkg.alpha.mod import z\n")
    graph = package_graph(tmp_path, "pkg")
    assert cycles(graph) == [["alpha", "beta", "gamma"]]
    assert graph["beta"]["gamma"] == ["pkg/beta/mod.py:2"]
