"""The module graph: no import cycle anywhere in the app, the engine free of the framework."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    modules = sorted(graph.modules)
    edges = {
        m: sorted(set(graph.find_modules_directly_imported_by(m)) & set(modules)) for m in modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            if child < len(edges[node]):
                work.append((node, child + 1))
                nxt = edges[node][child]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            for succ in edges[node]:
                if succ in on_stack:
                    low[node] = min(low[node], low[succ])
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
    return found


def test_no_module_of_the_app_takes_part_in_an_import_cycle() -> None:
    """Lazy imports inside functions count too: a cycle closed by one is still a cycle."""
    assert _cycles(grimp.build_graph("annotations")) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    class Graph:
        modules = {"a", "b", "c"}

        @staticmethod
        def find_modules_directly_imported_by(module: str) -> set[str]:
            return {"a": {"b"}, "b": {"a"}, "c": {"a"}}[module]

    assert _cycles(Graph()) == [["a", "b"]]  # type: ignore[arg-type]


def test_the_import_contracts_hold() -> None:
    """The engine imports no framework or model; the layers import downwards only
    (pyproject.toml's [tool.importlinter], also run by `make lint`)."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
