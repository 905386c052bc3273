"""Data flows one way, and the layout says so: every package of trialrun stands on a floor, a module imports only
from its own floor or lower ones, and no two modules import each other, not even lazily inside a function or for
type checkers only (suite files -> cases -> run -> report -> render, with the helpers underneath)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

import trialrun

ROOT = Path(trialrun.__file__).resolve().parent

#: The floors, lowest first: the package (or root module) of each stage. What a floor may import is every floor
#: before it; each package's `__init__` docstring says the same in words.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("_version", "_util"),   # helpers: the standard library and dependencies only
    ("_contain",),           # the keeper and the sandbox around what an agent runs
    ("trajectory",),         # what an agent did: the one data model everything reads
    ("_shell",),             # what a shell command ran and wrote
    ("wire",),               # the providers' HTTP traffic <-> trajectories
    ("_scrub",),             # credentials out of everything written or printed (it reads SSE through wire)
    ("models",),             # the model seam: scripted, cassette, live, guard
    ("endpoint",),           # the seam served on a loopback port
    ("agent",),              # the reference agent
    ("expect",),             # the graders
    ("case", "_case_checks"),  # a case and its trial context, and the checks of its fields
    ("report",),             # results, the files that keep them, and what is computed from them
    ("run",),                # the runner and its executors
    ("agents",),             # agents in another process (CLI coding agents)
    ("suite",),              # suite files and configuration -> cases
    ("render",),             # terminal, Markdown, HTML, JUnit
    ("view",),               # the local web app
    ("pytest_plugin", "cli", "__main__"),  # the two ways in
)
FLOOR = {stage: number for number, stages in enumerate(FLOORS) for stage in stages}


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ("trialrun", *path.relative_to(ROOT).with_suffix("").parts)
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """Every trialrun module `name` imports anywhere in its source (module level, in functions, TYPE_CHECKING)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            module = (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
            targets.update(f"{module}.{alias.name}" for alias in node.names)
            targets.add(module)
        elif isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
    # the top package is imported before any of its modules anyway: `from .. import _shell` is not an import of it;
    # nor is a module's own package (`from . import x` runs the package's `__init__`, which only gathers names)
    return {t for t in targets if t in MODULES and t not in (name, "trialrun") and not name.startswith(t + ".")}


GRAPH = {name: _imports(name) for name in MODULES}


def _stage(name: str) -> str:
    return name.split(".")[1]


def _reaches(start: str, goal: str) -> list[str] | None:
    """An import chain from any module of `start` (a module or package) to any module of `goal`, or None."""
    inside = lambda name, prefix: name == prefix or name.startswith(prefix + ".")  # noqa: E731
    todo = [[m] for m in MODULES if inside(m, start)]
    seen = {chain[0] for chain in todo}
    while todo:
        chain = todo.pop()
        for target in GRAPH[chain[-1]]:
            if inside(target, goal):
                return [*chain, target]
            if target not in seen and not inside(target, start):
                seen.add(target)
                todo.append([*chain, target])
    return None


def _circles() -> list[list[str]]:
    """The groups of modules that import each other (strongly connected, Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(MODULES)))
    try:
        for node in sorted(GRAPH):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return found


def test_every_package_stands_on_a_floor() -> None:
    stages = {_stage(name) for name in MODULES if name != "trialrun"}
    assert stages - set(FLOOR) == set(), "a package or root module with no floor: add it to FLOORS"
    assert set(FLOOR) - stages == set(), "a floor names a package that does not exist"


def test_no_module_imports_from_a_higher_floor() -> None:
    upward = [f"{name} -> {target}" for name, targets in sorted(GRAPH.items()) if name != "trialrun"
              for target in sorted(targets) if FLOOR[_stage(target)] > FLOOR[_stage(name)]]
    assert upward == []


def test_no_two_modules_import_each_other() -> None:
    assert _circles() == []


@pytest.mark.parametrize("start, goal", [("trialrun.suite._tests_file", "trialrun.suite._build"),
                                         ("trialrun.expect", "trialrun.case"), ("trialrun.report", "trialrun.run"),
                                         ("trialrun.run", "trialrun.suite"), ("trialrun.report", "trialrun.render")])
def test_no_import_runs_against_the_data_flow(start: str, goal: str) -> None:
    assert _reaches(start, goal) is None, " -> ".join(_reaches(start, goal) or [])


def test_the_checker_sees_the_imports_it_forbids(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above pass because the imports are absent, not because the checker is blind: it finds the forward
    imports, and an upward import or a circle written into the graph fails them."""
    assert _reaches("trialrun.suite._build", "trialrun.suite._tests_file") == ["trialrun.suite._build",
                                                                             "trialrun.suite._tests_file"]
    assert _reaches("trialrun.case", "trialrun.expect")
    assert "trialrun.report.results" in GRAPH["trialrun.run.runner"]  # lazy and TYPE_CHECKING imports count too
    monkeypatch.setitem(GRAPH, "trialrun.report.results", GRAPH["trialrun.report.results"] | {"trialrun.run.runner"})
    assert any({"trialrun.report.results", "trialrun.run.runner"} <= set(group) for group in _circles())
    with pytest.raises(AssertionError):
        test_no_module_imports_from_a_higher_floor()


def test_every_package_says_its_job_and_what_it_may_import() -> None:
    packages = sorted(ROOT.glob("*/__init__.py"))
    assert len(packages) >= 15
    for path in packages:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 20, f"{path.parent.name}/__init__.py: no docstring saying its job"
        assert "May import" in doc, f"{path.parent.name}/__init__.py does not say what it may import"


def test_the_layout_page_shows_every_floor_in_order() -> None:
    """docs/development.md's table of floors is the one above: every package on its floor, in the same order."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "development.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert len(rows) == len(FLOORS)
    for number, (row, stages) in enumerate(zip(rows, FLOORS)):
        cells = row.split("|")
        assert cells[1].strip() == str(number), row
        named = set(re.findall(r"`([\w.]+?)(?:/|\.py)`", cells[2]))
        assert named == {stage for stage in stages if stage not in ("_version", "__main__")}, row
