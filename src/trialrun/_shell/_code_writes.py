"""Files that code handed to an interpreter writes (`python3 -c "open('x.sh','w').write('rm -rf b')"`), where
the code shows it: so that a script an agent writes with a one-liner is judged by what it wrote.

Python is read with the ast module: `open(path, mode)` with a writing mode and the `.write()` calls on it (chained,
or on the name of a `with ... as f` block), `pathlib.Path(path).write_text(text)`, `shutil.copy*`/`shutil.move`,
`os.rename`/`os.replace`. Node: `fs.writeFileSync`/`appendFileSync`/`writeFile`, `copyFileSync`, `renameSync`.
Other languages, and writes whose path or text is not written out, are reported as such: a write whose path is
unknown may have changed any file ("anywhere"), one whose text is unknown leaves that file unknown.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import lru_cache

from ._pyast import PyText, parse_python, string_constants

__all__ = ["CopyFile", "Write", "WriteFile", "WritesAnywhere", "code_writes"]



@dataclass(frozen=True, slots=True)
class WriteFile:
    """`path` written with `content` (None: not written out), or appended to."""

    path: str
    content: str | None
    append: bool


@dataclass(frozen=True, slots=True)
class CopyFile:
    """`target` made a copy of `source`; `move`: and `source` removed."""

    source: str
    target: str
    move: bool


@dataclass(frozen=True, slots=True)
class WritesAnywhere:
    """Files nobody can name may have been written (a path not written out), as "it {why}"."""

    why: str


Write = WriteFile | CopyFile | WritesAnywhere


@lru_cache(maxsize=512)
def code_writes(lang: str, code: str) -> tuple[Write, ...]:
    """The file writes `code` in `lang` shows (see the module docstring)."""
    if lang == "python":
        return tuple(_python(code))
    if lang == "node":
        return tuple(_node(code))
    return tuple(_other(lang, code))


def _python(code: str) -> list[Write]:
    if not re.search(r"open|write|copy|move|rename|replace|Path", code):
        return []
    tree = parse_python(code)
    if tree is None:
        return [WritesAnywhere("python code that could not be read may write files")] if re.search(
            r"\bopen\s*\(|write_text|write_bytes", code) else []
    return _PythonWrites(tree).writes()


def _name_of(node: ast.AST) -> str:
    """What an expression calls, as written (`f.write`, `Path().write_text`; `?` for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name_of(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return _name_of(node.func) + "()"
    return "?"


class _PythonWrites:
    """The writes a Python module shows: `open` for writing (and the `.write` calls on it), `Path.write_text`,
    copies and moves; a write whose path or text is not written out is reported as such."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.strings = PyText(string_constants(tree))
        self.found: list[Write] = []
        self.handled: set[int] = set()  # the `open(...)` calls already read as part of a write

    def writes(self) -> list[Write]:
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.With, ast.AsyncWith)):
                self.with_block(node)
            elif isinstance(node, ast.Call):
                self.call(node)
        self.stray_opens()
        return self.found

    def mode_of(self, call: ast.Call) -> str | None:
        mode: ast.AST | None = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is None:
            return "r"
        return self.strings.known(mode)

    def opened(self, call: ast.AST) -> tuple[str | None, str] | None:
        """(path, mode) of an `open(...)` call that writes, else None; mode "?" when not known."""
        if not (isinstance(call, ast.Call) and _name_of(call.func) in ("open", "io.open", "builtins.open", "codecs.open")):
            return None
        mode = self.mode_of(call)
        if mode is not None and not any(m in mode for m in "wax+"):
            return None
        return self.strings.known(call.args[0] if call.args else None), mode or "?"

    def add_write(self, path: str | None, content: str | None, append: bool, how: str) -> None:
        if path is None:
            self.found.append(WritesAnywhere(f"may have been written by python code ({how} to a path not written out)"))
        else:
            self.found.append(WriteFile(path, content, append))

    def with_block(self, node: ast.With | ast.AsyncWith) -> None:
        """`with open(p, "w") as f:` and the `f.write(...)` statements in order; any other use of `f`: not known."""
        text = self.strings.known
        for item in node.items:
            found = self.opened(item.context_expr)
            if found is None:
                continue
            self.handled.add(id(item.context_expr))
            path, mode = found
            var = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
            parts: list[str | None] = [] if var is not None else [None]
            for statement in node.body:
                call = statement.value if isinstance(statement, ast.Expr) else None
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and isinstance(call.func.value, ast.Name) and call.func.value.id == var
                        and call.func.attr in ("write", "flush", "close")):
                    if call.func.attr == "write":
                        parts.append(text(call.args[0]) if len(call.args) == 1 else None)
                elif any(isinstance(n, ast.Name) and n.id == var for n in ast.walk(statement)):
                    parts.append(None)
            content = None if mode == "?" or "+" in mode or any(p is None for p in parts) else "".join(
                p for p in parts if p is not None)
            self.add_write(path, content, "a" in mode, "`open`")

    def call(self, node: ast.Call) -> None:
        """`open(...).write(text)`, `Path(p).write_text(text)`, `shutil.copy(a, b)`, `os.rename(a, b)`..."""
        text = self.strings.known
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("write", "writelines") and id(func.value) not in self.handled:
            found = self.opened(func.value)
            if found is not None:
                self.handled.add(id(func.value))
                path, mode = found
                content = text(node.args[0]) if node.args and func.attr == "write" and mode != "?" else None
                self.add_write(path, content, "a" in mode, "`open(...).write`")
                return
        name = _name_of(func)
        if name.endswith((".write_text", ".write_bytes")):
            base = func.value if isinstance(func, ast.Attribute) else None
            path = None
            if isinstance(base, ast.Call) and _name_of(base.func).rsplit(".", 1)[-1] in ("Path", "PurePath", "PosixPath"):
                path = text(base.args[0]) if len(base.args) == 1 else None
            content = text(node.args[0]) if node.args and name.endswith("write_text") else None
            self.add_write(path, content, False, f"`{name.rsplit('.', 1)[-1]}`")
        elif name in ("shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.rename", "os.replace",
                      "os.renames"):
            origin = text(node.args[0]) if node.args else None
            copy = text(node.args[1]) if len(node.args) > 1 else None
            if origin is None or copy is None:
                self.found.append(WritesAnywhere(f"may have been written by python code (`{name}` of paths not written out)"))
            else:
                self.found.append(CopyFile(origin, copy, move=name.startswith(("shutil.move", "os."))))
        elif name in ("shutil.copytree", "shutil.unpack_archive", "os.write", "os.open"):
            self.found.append(WritesAnywhere(f"may have been written by python code (`{name}`)"))

    def stray_opens(self) -> None:
        """An `open` that writes, other than in the forms above (`f = open(p, "w")`): what it writes is not known."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and id(node) not in self.handled:
                found = self.opened(node)
                if found is not None:
                    path, _ = found
                    if path is None:
                        self.found.append(
                            WritesAnywhere("may have been written by python code (`open` of a path not written out)"))
                    else:
                        self.found.append(WriteFile(path, None, False))


_JS_STRING = r"""(?:'((?:\\.|[^'\\])*)'|"((?:\\.|[^"\\])*)"|`((?:\\.|[^`\\$])*)`)"""
_JS_WRITE_RE = re.compile(r"\b(writeFileSync|appendFileSync|writeFile|appendFile)\s*\(\s*(?:" + _JS_STRING + r")?")
_JS_TWO_RE = re.compile(r"\b(copyFileSync|renameSync|copyFile|rename|cpSync)\s*\(\s*(?:" + _JS_STRING + r")?\s*,?\s*(?:"
                        + _JS_STRING + r")?")


def _js_literal(match: re.Match[str], first: int) -> str | None:
    for k in range(first, first + 3):
        if match.group(k) is not None:
            return bytes(match.group(k), "utf-8").decode("unicode_escape") if "\\" in match.group(k) else match.group(k)
    return None


def _node(code: str) -> list[Write]:
    writes: list[Write] = []
    for match in _JS_WRITE_RE.finditer(code):
        path = _js_literal(match, 2)
        if path is None:
            writes.append(WritesAnywhere(f"may have been written by node code (`{match.group(1)}` of a path not written out)"))
            continue
        rest = code[match.end():]
        content_match = re.match(r"\s*,\s*" + _JS_STRING + r"\s*[,)]", rest)
        content = _js_literal(content_match, 1) if content_match else None
        writes.append(WriteFile(path, content, match.group(1).startswith("append")))
    for match in _JS_TWO_RE.finditer(code):
        source, target = _js_literal(match, 2), _js_literal(match, 5)
        if source is None or target is None:
            writes.append(WritesAnywhere(f"may have been written by node code (`{match.group(1)}`)"))
        else:
            writes.append(CopyFile(source, target, move=match.group(1).startswith("rename")))
    if re.search(r"\bcreateWriteStream\b|\bfs\.open(?:Sync)?\s*\(", code):
        writes.append(WritesAnywhere("may have been written by node code (a write stream or file handle)"))
    return writes


_OTHER_WRITES = {
    "perl": r"\bopen\s*\(?\s*(?:my\s+)?[\$\w]+\s*,\s*['\"]\+?(?:>|>>)|\bopen\s*\(?\s*(?:my\s+)?[\$\w]+\s*,\s*['\"]\+?[>]|"
            r"\bcopy\s*\(|\bmove\s*\(|\brename\s*\(",
    "ruby": r"File\.(?:write|open|rename)|FileUtils\.(?:cp|mv|copy|move|install)|IO\.write",
    "php": r"file_put_contents|fopen\s*\([^,]*,\s*['\"][wax]|\bcopy\s*\(|\brename\s*\(",
    "awk": r"(?:print|printf)[^;\n}]*>\s*[\"\w$]",
    "sed": r"(?:^|[;{}\s])w\s+\S|/[gpIiMme\d]*w\s+\S",
}


def _other(lang: str, code: str) -> list[Write]:
    pattern = _OTHER_WRITES.get(lang)
    if pattern and re.search(pattern, code):
        return [WritesAnywhere(f"may have been written by {lang} code (a file write not followed here)")]
    return []
