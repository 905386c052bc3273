"""Reading Python with the ast module, shared by `_code` (the programs code starts) and `_code_writes` (the files
it writes): parsing without warnings, the names bound once to a string, and an expression's value as text."""

from __future__ import annotations

import ast
import re
import warnings

UNKNOWN = "$__RUNTIME__"  # stands for a value only known at run time, in shell text made from code
# Statements that bind a name other than `NAME = VALUE`: after one, what the name holds is not known.
REBINDS: tuple[type[ast.AST], ...] = (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For)


def parse_python(code: str) -> ast.Module | None:
    """The module `code` is, or None when it is not Python this interpreter reads. Warnings are silenced: `1_x`
    in a string that is not Python warns, and the matcher must stay quiet."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def string_constants(tree: ast.AST, rebinds: tuple[type[ast.AST], ...] = REBINDS) -> dict[str, str | None]:
    """Names assigned once, by `=`, to a string literal, with that string (what `'rm -rf ' + d` means); None for a
    name bound otherwise, or again (also by a statement of a type in `rebinds`)."""
    constants: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, rebinds):
            targets, value = [node.target], None  # type: ignore[attr-defined]
        else:
            continue
        literal = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
        for target in targets:
            if isinstance(target, ast.Name):
                constants[target.id] = literal if target.id not in constants else None
    return constants


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
