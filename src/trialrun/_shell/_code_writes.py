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
import warnings
from functools import lru_cache

__all__ = ["code_writes"]

#: ("write", path, text or None, append) | ("copy", source, target) | ("move", source, target) | ("anywhere", why)
Write = tuple


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
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return [("anywhere", "python code that could not be read may write files")] if re.search(
            r"\bopen\s*\(|write_text|write_bytes", code) else []
    constants: dict[str, str | None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    value = node.value
                    literal = value.value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None
                    constants[target.id] = literal if target.id not in constants else None

    def text(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = text(node.left), text(node.right)
            return None if a is None or b is None else a + b
        if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
            return "".join(str(v.value) for v in node.values)  # type: ignore[attr-defined]
        return None

    def name_of(node: ast.AST) -> str:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return f"{name_of(node.value)}.{node.attr}"
        if isinstance(node, ast.Call):
            return name_of(node.func) + "()"
        return "?"

    def mode_of(call: ast.Call) -> str | None:
        mode: ast.AST | None = call.args[1] if len(call.args) > 1 else next(
            (k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is None:
            return "r"
        return text(mode)

    def opened(call: ast.AST) -> tuple[str | None, str] | None:
        """(path, mode) of an `open(...)` call that writes, else None; mode "?" when not known."""
        if not (isinstance(call, ast.Call) and name_of(call.func) in ("open", "io.open", "builtins.open", "codecs.open")):
            return None
        mode = mode_of(call)
        if mode is not None and not any(m in mode for m in "wax+"):
            return None
        return text(call.args[0] if call.args else None), mode or "?"

    writes: list[Write] = []
    handled: set[int] = set()

    def add_write(path: str | None, content: str | None, append: bool, how: str) -> None:
        if path is None:
            writes.append(("anywhere", f"may have been written by python code ({how} to a path not written out)"))
        else:
            writes.append(("write", path, content, append))

    for node in ast.walk(tree):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                found = opened(item.context_expr)
                if found is None:
                    continue
                handled.add(id(item.context_expr))
                path, mode = found
                var = item.optional_vars.id if isinstance(item.optional_vars, ast.Name) else None
                parts: list[str | None] = [] if var is not None else [None]
                for statement in node.body:  # `f.write(...)` statements in order; any other use of `f`: not known
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
                add_write(path, content, "a" in mode, "`open`")
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("write", "writelines") and id(func.value) not in handled:
                found = opened(func.value)
                if found is not None:
                    handled.add(id(func.value))
                    path, mode = found
                    content = text(node.args[0]) if node.args and func.attr == "write" and mode != "?" else None
                    add_write(path, content, "a" in mode, "`open(...).write`")
                    continue
            name = name_of(func)
            if name.endswith((".write_text", ".write_bytes")):
                base = func.value if isinstance(func, ast.Attribute) else None
                path = None
                if isinstance(base, ast.Call) and name_of(base.func).rsplit(".", 1)[-1] in ("Path", "PurePath", "PosixPath"):
                    path = text(base.args[0]) if len(base.args) == 1 else None
                content = text(node.args[0]) if node.args and name.endswith("write_text") else None
                add_write(path, content, False, f"`{name.rsplit('.', 1)[-1]}`")
            elif name in ("shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.move", "os.rename", "os.replace",
                          "os.renames"):
                origin = text(node.args[0]) if node.args else None
                copy = text(node.args[1]) if len(node.args) > 1 else None
                if origin is None or copy is None:
                    writes.append(("anywhere", f"may have been written by python code (`{name}` of paths not written out)"))
                else:
                    writes.append(("move" if name.startswith(("shutil.move", "os.")) else "copy", origin, copy))
            elif name in ("shutil.copytree", "shutil.unpack_archive", "os.write", "os.open"):
                writes.append(("anywhere", f"may have been written by python code (`{name}`)"))
    for node in ast.walk(tree):  # an `open` that writes, other than in the forms above (`f = open(p, "w")`)
        if isinstance(node, ast.Call) and id(node) not in handled:
            found = opened(node)
            if found is not None:
                path, _ = found
                if path is None:
                    writes.append(("anywhere", "may have been written by python code (`open` of a path not written out)"))
                else:
                    writes.append(("write", path, None, False))
    return writes


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
            writes.append(("anywhere", f"may have been written by node code (`{match.group(1)}` of a path not written out)"))
            continue
        rest = code[match.end():]
        content_match = re.match(r"\s*,\s*" + _JS_STRING + r"\s*[,)]", rest)
        content = _js_literal(content_match, 1) if content_match else None
        writes.append(("write", path, content, match.group(1).startswith("append")))
    for match in _JS_TWO_RE.finditer(code):
        source, target = _js_literal(match, 2), _js_literal(match, 5)
        if source is None or target is None:
            writes.append(("anywhere", f"may have been written by node code (`{match.group(1)}`)"))
        else:
            writes.append(("move" if match.group(1).startswith("rename") else "copy", source, target))
    if re.search(r"\bcreateWriteStream\b|\bfs\.open(?:Sync)?\s*\(", code):
        writes.append(("anywhere", "may have been written by node code (a write stream or file handle)"))
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
        return [("anywhere", f"may have been written by {lang} code (a file write not followed here)")]
    return []
