"""Data flows one way (suite files -> cases -> runner): `suite` never imports `_build`, and the graders (`expect`)
never import `case`, not even lazily inside a function or for type checkers only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import trialrun

ROOT = Path(trialrun.__file__).resolve().parent


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
    # the top package is imported before any of its modules anyway: `from .. import _shell` is not an import of it
    return {t for t in targets if t in MODULES and t not in (name, "trialrun")}


def _reaches(start: str, goal: str) -> list[str] | None:
    """An import chain from any module of `start` (a module or package) to any module of `goal`, or None."""
    inside = lambda name, prefix: name == prefix or name.startswith(prefix + ".")  # noqa: E731
    todo = [[m] for m in MODULES if inside(m, start)]
    seen = {chain[0] for chain in todo}
    while todo:
        chain = todo.pop()
        for target in _imports(chain[-1]):
            if inside(target, goal):
                return [*chain, target]
            if target not in seen and not inside(target, start):
                seen.add(target)
                todo.append([*chain, target])
    return None


@pytest.mark.parametrize("start, goal", [("trialrun.suite", "trialrun._build"), ("trialrun.expect", "trialrun.case")])
def test_no_import_runs_against_the_data_flow(start: str, goal: str) -> None:
    assert _reaches(start, goal) is None, " -> ".join(_reaches(start, goal) or [])


def test_the_checker_sees_the_forward_imports() -> None:
    assert _reaches("trialrun._build", "trialrun.suite") == ["trialrun._build", "trialrun.suite"]
    assert _reaches("trialrun.case", "trialrun.expect")
