"""Rooms a newcomer can read. Modules are cut by concept, not by count (docs/development.md, "Size"): a module over
800 lines says at its top why its concept is kept whole, and no function is over 80 lines unless its docstring says
why it must stay whole (a grammar that reads best in one piece, say)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import trialrun

ROOT = Path(trialrun.__file__).resolve().parent
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80
#: How a long function's docstring says why it is long: a sentence with "whole" in it ("kept whole: ...").
_WHOLE = re.compile(r"\bwhole\b", re.I)


def _sources() -> list[Path]:
    found = sorted(ROOT.rglob("*.py"))
    assert len(found) > 100, "the walk found too few modules to be looking at trialrun's source"
    return found


def _long_functions(tree: ast.AST, limit: int) -> list[tuple[str, int, str]]:
    """(name, lines, docstring) of every function or method in `tree` longer than `limit` lines."""
    return [(node.name, node.end_lineno - node.lineno + 1, ast.get_docstring(node) or "")
            for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > limit]


def _long_modules(sources: dict[str, str], limit: int) -> list[str]:
    """The modules over `limit` lines whose docstring does not say why they are kept whole."""
    return [name for name, text in sources.items() if len(text.splitlines()) > limit
            and not _WHOLE.search(ast.get_docstring(ast.parse(text)) or "")]


def test_a_module_over_800_lines_says_why_it_is_kept_whole() -> None:
    sources = {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8") for path in _sources()}
    assert _long_modules(sources, MAX_MODULE_LINES) == []


def test_no_function_is_over_80_lines_without_a_stated_reason() -> None:
    unexplained = []
    for path in _sources():
        for name, lines, doc in _long_functions(ast.parse(path.read_text(encoding="utf-8")), MAX_FUNCTION_LINES):
            if not _WHOLE.search(doc):
                unexplained.append(f"{path.relative_to(ROOT).as_posix()}:{name} ({lines} lines)")
    assert unexplained == []


def test_the_measure_sees_long_functions_and_reasons() -> None:
    """The checks pass because the code is short, not because the measure is blind."""
    body = "\n".join(f"    x{i} = {i}" for i in range(90))
    long = ast.parse(f"def f():\n{body}\n\nasync def g():\n    '''Kept whole: a grammar.'''\n{body}\n")
    found = {name: (lines, bool(_WHOLE.search(doc))) for name, lines, doc in _long_functions(long, MAX_FUNCTION_LINES)}
    assert found == {"f": (91, False), "g": (92, True)}
    lines = "\n".join(f"x{i} = {i}" for i in range(801))
    modules = {"plain.py": f'"""A module."""\n{lines}\n', "whole.py": f'"""Kept whole: one grammar."""\n{lines}\n',
               "short.py": '"""A module."""\nx = 1\n'}
    assert _long_modules(modules, MAX_MODULE_LINES) == ["plain.py"]
