"""Reading Python with the ast module, shared by `_code` (the programs code starts) and `_code_writes` (the files
it writes): parsing without warnings, the names bound once to a string, and an expression's value as text."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterator

UNKNOWN = "$__RUNTIME__"  # stands for a value only known at run time, in shell text made from code


def parse_python(code: str) -> ast.Module | None:
    """The module `code` is, or None when it is not Python this interpreter reads. Warnings are silenced: `1_x`
    in a string that is not Python warns, and the matcher must stay quiet."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def string_constants(tree: ast.AST) -> dict[str, str | None]:
    """Names bound once, by `NAME = "literal"`, with that string (what `'rm -rf ' + d` means); None for a name
    bound in any other way as well, anywhere in the code (`+=`, `for`, `with ... as`, a parameter, an import, an
    `except ... as`, a walrus, a second `=`): what it holds when it is used is then not known from the text."""
    constants: dict[str, str | None] = {}
    literal_targets: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            name = node.targets[0].id
            constants[name] = node.value.value if name not in constants else None
            literal_targets.add(id(node.targets[0]))
    for name in _other_bindings(tree, literal_targets):
        constants[name] = None
    return constants


def _other_bindings(tree: ast.AST, skip: set[int]) -> Iterator[str]:
    """Every name the code binds other than by the `NAME = "literal"` statements whose target ids are in `skip`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in skip:
            yield node.id  # `=` of anything else, `+=`, `for`, `with ... as`, unpacking, a walrus, `del`
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.alias):
            yield node.asname or node.name.split(".")[0]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs,
                               ast.MatchStar)) and node.name:
            yield node.name  # a def, a class, `except ... as`, a pattern's capture
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest


class PyText:
    """Python expressions read as the text they make, given the names bound to strings (see `string_constants`)."""

    __slots__ = ("constants",)

    def __init__(self, constants: dict[str, str | None]) -> None:
        self.constants = constants

    def text(self, node: ast.AST) -> tuple[str, bool]:
        """An expression as text, and whether all of it is known; the parts that are not stand as `UNKNOWN`."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value, True
        if isinstance(node, ast.Name) and self.constants.get(node.id) is not None:
            return self.constants[node.id] or "", True
        if isinstance(node, ast.JoinedStr):
            parts = [self.text(v) if not isinstance(v, ast.FormattedValue) else (UNKNOWN, False) for v in node.values]
            return "".join(p for p, _ in parts), all(k for _, k in parts)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            (a, ka), (b, kb) = self.text(node.left), self.text(node.right)
            return a + b, ka and kb
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            a, _ = self.text(node.left)
            return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfx]", UNKNOWN, a), False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            a, _ = self.text(node.func.value)
            return re.sub(r"\{[^{}]*\}", UNKNOWN, a), False
        return UNKNOWN, False

    def known(self, node: ast.AST | None) -> str | None:
        """An expression's text when all of it is known, else None."""
        if node is None:
            return None
        value, known = self.text(node)
        return value if known else None
