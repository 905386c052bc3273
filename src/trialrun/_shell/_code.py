"""Code handed to another interpreter (`python -c`, `perl -e`, `node -e`, `ruby -e`, `php -r`, awk, sed): which
commands it starts, as shell text or argv, and where that is only known at run time.

This reads code the way a reviewer skims it, not the way the interpreter runs it: it finds the calls that start
programs (`os.system`, `subprocess.run`, `system`, backticks, `child_process.execSync`, awk's `system()` and pipes,
sed's `e`), the library calls that delete a tree (`shutil.rmtree`, `FileUtils.rm_rf`, `fs.rmSync`: read as
`rm -rf`), and what makes any of that unknowable (`eval` of text not written out, `getattr`, `__import__` of a
name built at run time). A value it cannot read becomes `$__RUNTIME__`, a variable no shell has set, so that
`os.system('rm -rf ' + d)` is still `rm -rf ...` and `os.system(cmd)` a command only known at run time.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from functools import lru_cache

from ._actions import CodeAction, FeedsShell, Opaque, RunText, RunWords
from ._expand import Field
from ._pyast import UNKNOWN, PyText, parse_python, string_constants

_MAX_NESTED = 8  # `eval("...")` inside code inside code: levels followed before giving up (fail closed)


LANGUAGES = ("python", "perl", "ruby", "node", "php", "awk", "sed")


@lru_cache(maxsize=1024)
def language_of(program: str) -> str | None:
    """The language an interpreter program reads (`python3.12` -> python), or None."""
    if re.fullmatch(r"(?:python|pypy)[\d.]*|python[\d.]*[dmu]?", program):
        return "python"
    if re.fullmatch(r"perl[\d.]*", program):
        return "perl"
    if re.fullmatch(r"ruby[\d.]*|jruby", program):
        return "ruby"
    if program in ("node", "nodejs", "bun", "deno", "tsx", "ts-node"):
        return "node"
    if re.fullmatch(r"php[\d.]*(?:-cli)?", program):
        return "php"
    if program in ("awk", "gawk", "mawk", "nawk", "busybox-awk"):
        return "awk"
    if program in ("sed", "gsed"):
        return "sed"
    return None


def language_of_script(text: str, path: str) -> str:
    """The language of a script file, from its `#!` line or its name; shell when neither says."""
    first = text.split("\n", 1)[0]
    if first.startswith("#!"):
        words = first[2:].split()
        if words:
            prog = words[0].rsplit("/", 1)[-1]
            if prog == "env" and len(words) > 1:
                prog = next((w for w in words[1:] if not w.startswith("-")), prog)
            lang = language_of(prog.rsplit("/", 1)[-1])
            if lang is not None:
                return lang
        return "sh"
    for suffix, lang in ((".py", "python"), (".pl", "perl"), (".rb", "ruby"), (".js", "node"), (".mjs", "node"),
                         (".cjs", "node"), (".ts", "node"), (".php", "php"), (".awk", "awk"), (".sed", "sed")):
        if path.endswith(suffix):
            return lang
    return "sh"


def analyse_code(lang: str, code: str, depth: int = 0) -> list[CodeAction]:
    """The commands `code` in `lang` starts (see the module docstring)."""
    if depth > _MAX_NESTED:
        return [Opaque(f"the {lang} code nests code too deeply to follow")]
    if lang == "python":
        return _python(code, depth)
    if lang == "sed":
        return _sed(code)
    return _generic(lang, code, depth)


# -- Python: read with the ast module ----------------------------------------------------------------------------

_PY_SHELL = {"os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput", "commands.getoutput",
             "asyncio.create_subprocess_shell", "platform.popen"}
_PY_RUN = {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
           "subprocess.Popen", "asyncio.create_subprocess_exec", "pty.spawn"}
_PY_EXEC_PREFIXES = ("os.exec", "os.spawn", "os.posix_spawn")
_PY_DELETE = {"shutil.rmtree": ["rm", "-rf"], "os.remove": ["rm"], "os.unlink": ["rm"], "os.rmdir": ["rmdir"],
              "os.removedirs": ["rmdir", "-p"]}
_PY_DYNAMIC = {"getattr", "importlib.import_module", "importlib.__import__", "globals", "locals", "vars",
               "compile", "ctypes.CDLL", "ctypes.cdll.LoadLibrary", "runpy.run_path", "runpy.run_module",
               "builtins.exec", "builtins.eval", "pickle.loads", "marshal.loads"}


def _python(code: str, depth: int) -> list[CodeAction]:
    tree = parse_python(code)
    if tree is None:
        return _generic("python", code, depth)  # not Python this version reads: skim it instead
    reader = _PythonRuns(tree, depth)
    actions = [action for node in ast.walk(tree) if isinstance(node, ast.Call) for action in reader.call(node)]
    return actions + reader.other_uses()


def _imported_names(tree: ast.AST) -> dict[str, str]:
    """The names imports bind, to what they stand for (`import subprocess as sp`: sp -> subprocess)."""
    aliases: dict[str, str] = {}
    starters = _PY_SHELL | _PY_RUN | set(_PY_DELETE)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if a.name == "*":  # `from os import *`: its program starters by their bare names
                    for full in starters:
                        if full.rsplit(".", 1)[0] == node.module:
                            aliases[full.rsplit(".", 1)[1]] = full
                    if node.module == "os":
                        for prefix in _PY_EXEC_PREFIXES:
                            aliases.setdefault(prefix[3:] + "*", prefix)
                else:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _bound_name(node: ast.AST) -> tuple[str, ast.expr] | None:
    """`run = subprocess.run`, `s = os`: (the name, the name or attribute bound to it), or None."""
    if (
        isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, (ast.Name, ast.Attribute))
    ):
        return node.targets[0].id, node.value
    return None



class _PythonRuns:
    """The programs a Python module starts: calls of starters and deleters by any name they go by, and what hides
    code (`eval` of text not written out, `getattr`, a starter used other than by a call)."""

    def __init__(self, tree: ast.Module, depth: int) -> None:
        self.tree = tree
        self.depth = depth
        self.aliases = _imported_names(tree)
        self.strings = PyText(string_constants(tree))
        self.called: set[int] = set()  # the `func` nodes of calls read so far
        for _ in range(2):  # `s = os; s.system(...)`, `run = subprocess.run`: names bound to modules or functions
            for node in ast.walk(tree):
                if (found := _bound_name(node)) is not None:
                    bound = self.name_of(found[1])
                    if bound is not None and bound != found[0]:
                        self.aliases[found[0]] = bound

    def name_of(self, node: ast.AST) -> str | None:
        """The dotted name an expression stands for (`sp.run` -> subprocess.run), or None."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.name_of(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__"
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
        ):
            return node.args[0].value
        return None

    def word(self, node: ast.AST) -> Field:
        value, known = self.strings.text(node)
        return (value, None) if known else (value, "")

    def words(self, nodes: Sequence[ast.AST]) -> list[Field]:
        """Arguments as argv words: lists and tuples spread, `*args` only known at run time."""
        out: list[Field] = []
        for n in nodes:
            if isinstance(n, (ast.List, ast.Tuple)):
                out += [self.word(e) for e in n.elts]
            elif isinstance(n, ast.Starred):
                out.append((UNKNOWN, ""))
            else:
                out.append(self.word(n))
        return out

    def call(self, node: ast.Call) -> list[CodeAction]:
        """What one call starts, by what it calls."""
        name = self.name_of(node.func)
        self.called.add(id(node.func))
        args = list(node.args) or [k.value for k in node.keywords if k.arg == "args"]
        if name in _PY_SHELL or name in _PY_RUN:
            return self.started(node, args)
        if name is not None and (name.startswith(_PY_EXEC_PREFIXES) or (
            "os.exec*" in self.aliases.values() and re.fullmatch(r"(?:exec|spawn|posix_spawn)\w*", name)
        )):
            return self.exec_call(name, args)
        if name in _PY_DELETE and args:
            return [RunWords((*((w, None) for w in _PY_DELETE[name]), self.word(args[0])))]
        if name in ("eval", "exec", "builtins.eval", "builtins.exec"):
            if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                return analyse_code("python", args[0].value, self.depth + 1)
            return [Opaque(f"it runs Python code only known at run time (`{name}`)")]
        if name in _PY_DYNAMIC or (name == "__import__" and self.name_of(node) is None):
            return [Opaque(f"it calls `{name}`, so what it runs is only known at run time")]
        return []

    def exec_call(self, name: str, args: list[ast.expr]) -> list[CodeAction]:
        """`os.execvp(file, [argv0, ...])`, `os.execl(path, argv0, ...)`, `os.spawnv(mode, path, argv)`,
        `os.posix_spawn(path, argv, env)`: the program is the file or path, its arguments the argv after argv[0]
        (which names nothing that runs: `os.execv("/bin/sh", ["sh", "-c", c])` runs `/bin/sh -c c`); the `e`
        forms' environment is not an argument."""
        base = name.rsplit(".", 1)[-1]
        if base.startswith("spawn"):
            args, form = args[1:], base[len("spawn"):]  # its first argument is the mode (os.P_WAIT)
        elif base.startswith("posix_spawn"):
            form = "v"
        else:
            form = base[len("exec"):]
        if not args:
            return []
        if "v" in form:
            vector = args[1] if len(args) > 1 else None
            given = self.words([vector]) if vector is not None else []
            # a list written out: argv[0] dropped; one only known at run time: its arguments are too
            rest = given[1:] if isinstance(vector, (ast.List, ast.Tuple)) else given
        else:
            rest = self.words(args[2:len(args) - ("e" in form)])
        return [RunWords((self.word(args[0]), *rest))]

    def started(self, node: ast.Call, args: list[ast.expr]) -> list[CodeAction]:
        """`os.system(text)`, `subprocess.run([argv])` and their `executable=`."""
        actions: list[CodeAction] = []
        if args:
            first = args[0]
            if isinstance(first, (ast.List, ast.Tuple)):
                actions.append(RunWords(tuple(self.words([first]))))
            else:
                actions.append(RunText(self.strings.text(first)[0]))
        executable = next((k.value for k in node.keywords if k.arg == "executable"), None)
        if executable is not None:
            actions.append(RunWords((self.word(executable), *self.words(args[:1])[1:])))
        return actions

    def other_uses(self) -> list[CodeAction]:
        """`f = os.system; f(x)`: a program starter used other than by a plain call (after the calls are read)."""
        tree = self.tree
        inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
        # `run = subprocess.run`: an alias, whose calls are read as calls of what it names
        inner |= {id(found[1]) for node in ast.walk(tree) if (found := _bound_name(node)) is not None}
        actions: list[CodeAction] = []
        for node in ast.walk(tree):
            if (
                isinstance(node, (ast.Attribute, ast.Name)) and id(node) not in self.called and id(node) not in inner
                and not isinstance(node.ctx, ast.Store)
            ):
                name = self.name_of(node)
                if name in _PY_SHELL or name in _PY_RUN or (name is not None and name.startswith(_PY_EXEC_PREFIXES)):
                    actions.append(Opaque(f"it uses `{name}` other than by calling it"))
        return actions


# -- other languages: skimmed with their string syntax -------------------------------------------------------------

_STARTERS = {
    "perl": r"system|exec|readpipe|qx",
    "ruby": r"system|exec|spawn|IO\.popen|Open3\.\w+|Kernel\.(?:system|exec|spawn)|Process\.spawn|PTY\.spawn",
    "node": r"(?:child_process\.|cp\.)?(?:execSync|exec|spawnSync|spawn|execFileSync|execFile|fork)|Bun\.spawn(?:Sync)?"
            r"|Deno\.run|Deno\.Command",
    "php": r"system|exec|shell_exec|passthru|popen|proc_open|pcntl_exec",
    "awk": r"system",
}
_DELETERS = {
    "perl": {"rmtree": ["rm", "-rf"], "remove_tree": ["rm", "-rf"], "unlink": ["rm"]},
    "ruby": {"FileUtils.rm_rf": ["rm", "-rf"], "FileUtils.rm_r": ["rm", "-rf"], "FileUtils.remove_dir": ["rm", "-rf"],
             "FileUtils.remove_entry": ["rm", "-rf"], "FileUtils.rmtree": ["rm", "-rf"], "FileUtils.rm": ["rm"],
             "File.delete": ["rm"]},
    "node": {"rmSync": ["rm", "-rf"], "rm": ["rm", "-rf"], "rmdirSync": ["rm", "-rf"], "unlinkSync": ["rm"],
             "unlink": ["rm"]},
    "php": {"unlink": ["rm"], "rmdir": ["rmdir"]},
    "awk": {},
}
_DYNAMIC = {
    "perl": r"eval\s*(?!\{)|do\s+[\$\"']|require\s+\$",
    "ruby": r"eval|instance_eval|class_eval|module_eval|send|public_send|__send__|const_get|load|method\s*\(",
    "node": r"eval|Function|vm\.\w+|process\.binding|globalThis\s*\[|require\s*\((?!\s*\x00)|import\s*\((?!\s*\x00)",
    "php": r"eval|assert|create_function|call_user_func(?:_array)?|\$\w+\s*\(|include\s+\$|require\s+\$",
    "awk": r"(?!)",
}
_INTERPOLATES = {"perl": r"[$@][\w{]", "ruby": r"#\{", "node": r"\$\{", "php": r"\$\w|\{\$", "awk": r"(?!)"}
_QUOTE_PAIRS = {"(": ")", "{": "}", "[": "]", "<": ">"}
_QUOTE_OP_RE = re.compile(r"(qx|qq|qw|q|%x|%w|%W|%q|%Q|%)([^\w\s])")
_SED_ADDRESS_RE = re.compile(
    r"(?:\d+|\$|/(?:\\.|[^/])*/[IM]*|\\(.)(?:\\.|.)*?\1)(?:\s*,\s*(?:\d+|\$|/(?:\\.|[^/])*/[IM]*|[+~]\d+))?\s*!?\s*"
)
_SED_FLAGS_RE = re.compile(r"[gpIiMme\d]*(?:w\s+\S+)?")


def _tokens(lang: str, code: str) -> tuple[str, list[tuple[str, str, bool]]]:
    """The code with each string literal replaced by `\\x00N\\x01` (N its index), and the strings as (kind, text,
    known): kind "str", "run" (backticks, `qx`, `%x`: runs its text) or "words" (`qw`, `%w`)."""
    out: list[str] = []
    strings: list[tuple[str, str, bool]] = []
    interp = re.compile(_INTERPOLATES.get(lang, r"(?!)"))
    i, n = 0, len(code)

    def add(kind: str, body: str, interpolating: bool) -> None:
        known = True
        if interpolating and interp.search(body):
            known = False
            body = re.sub(r"#\{[^}]*\}|\$\{[^}]*\}|\{\$[^}]*\}|[$@][\w]+(?:->\w+|\[[^\]]*\]|\{[^}]*\})*", UNKNOWN, body)
        if interpolating:
            body = body.replace("\\n", "\n").replace("\\t", "\t").replace('\\"', '"').replace("\\\\", "\\")
        strings.append((kind, body, known))
        out.append(f"\x00{len(strings) - 1}\x01")

    while i < n:
        c = code[i]
        if c == "#" and lang in ("perl", "ruby", "php", "awk") and (lang != "ruby" or code[i + 1:i + 2] != "{"):
            end = code.find("\n", i)
            i = n if end < 0 else end
            continue
        if code.startswith("//", i) and lang in ("node", "php"):
            end = code.find("\n", i)
            i = n if end < 0 else end
            continue
        m = _QUOTE_OP_RE.match(code, i) if lang in ("perl", "ruby") and c in "qQ%" else None
        if m and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")) and (m.group(1) != "%" or lang == "ruby"):
            opener = m.group(2)
            closer = _QUOTE_PAIRS.get(opener, opener)
            j = m.end()
            depth = 1
            k = j
            while k < n:
                if code[k] == "\\":
                    k += 2
                    continue
                if code[k] == closer:
                    depth -= 1
                    if depth == 0:
                        break
                elif code[k] == opener and closer != opener:
                    depth += 1
                k += 1
            body = code[j:k]
            kind = {"qx": "run", "%x": "run", "qw": "words", "%w": "words", "%W": "words"}.get(m.group(1), "str")
            add(kind, body, m.group(1) not in ("q", "qw", "%q", "%w"))
            i = k + 1
            continue
        if c in "'\"`":
            j = i + 1
            while j < n and code[j] != c:
                j += 2 if code[j] == "\\" else 1
            body = code[i + 1:j]
            if c == "`":
                add("run" if lang in ("perl", "ruby", "php") else "str", body, True)
            elif c == "'":
                add("str", body.replace("\\'", "'"), False)
            else:
                add("str", body, lang in ("perl", "ruby", "php", "awk"))
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), strings


_PLACEHOLDER = re.compile(r"\x00(\d+)\x01")


def _arguments(skeleton: str, start: int) -> tuple[list[str], int]:
    """The top-level comma-separated arguments after a starter's name (with or without parentheses)."""
    i = start
    while i < len(skeleton) and skeleton[i] in " \t":
        i += 1
    paren = i < len(skeleton) and skeleton[i] == "("
    if paren:
        i += 1
    depth = 0
    args: list[str] = []
    cur: list[str] = []
    while i < len(skeleton):
        c = skeleton[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (c == "," or (not paren and c in ";\n")):
            if c != ",":
                break
            args.append("".join(cur))
            cur = []
            i += 1
            continue
        elif not paren and depth == 0 and skeleton.startswith((" or ", " and ", " if ", " unless "), i):
            break
        cur.append(c)
        i += 1
    if cur or args:
        args.append("".join(cur))
    return [a.strip() for a in args], i


def _shell_text(arg: str, strings: list[tuple[str, str, bool]]) -> tuple[str, bool]:
    """An argument (strings joined by `+`, `.` or nothing) as shell text, and whether all of it is known."""
    parts: list[str] = []
    known = True
    pos = 0
    for m in _PLACEHOLDER.finditer(arg):
        between = arg[pos:m.start()]
        if between.strip(" \t\n+.()"):
            parts.append(UNKNOWN)
            known = False
        kind, body, sure = strings[int(m.group(1))]
        parts.append(body if kind != "words" else " ".join(body.split()))
        known = known and sure
        pos = m.end()
    if arg[pos:].strip(" \t\n+.()"):
        parts.append(UNKNOWN)
        known = False
    return "".join(parts), known


def _list_words(arg: str, strings: list[tuple[str, str, bool]]) -> list[Field] | None:
    body = arg.strip()
    if not (body.startswith("[") and body.endswith("]")):
        return None
    out: list[Field] = []
    elements, _ = _arguments(body[1:-1] + ")", 0)  # the `)` stands for the end of the list
    for element in filter(None, elements):
        value, known = _shell_text(element, strings)
        out.append((value, None if known else ""))
    return out


def _generic(lang: str, code: str, depth: int) -> list[CodeAction]:
    """Perl, Ruby, JavaScript, PHP and awk (and Python this interpreter cannot parse), skimmed: the calls that start
    programs with their arguments as shell text (and argv when there are several), deleters, and what hides code."""
    skeleton, strings = _tokens(lang, code)
    actions: list[CodeAction] = []
    for kind, body, _known in strings:
        if kind == "run":
            actions.append(RunText(body))
    starters = re.compile(r"(?<![\w$>:])(?:\w+(?:\.|->|::))*(" + _STARTERS.get(lang, r"(?!)") + r")\b")
    if lang == "node" and not re.search(r"child_process|\bBun\b|\bDeno\b", code):
        starters = re.compile(r"(?!)")  # `re.exec(s)` is a regular expression, not a process
    for m in starters.finditer(skeleton):
        args, _ = _arguments(skeleton, m.end())
        if not args or not args[0]:
            continue  # named, not called (`const {execSync} = require(...)`): its calls are read where they are
        flat: list[Field] = []
        for arg in args:
            listed = _list_words(arg, strings)
            if listed is not None:
                flat += listed
            elif not re.fullmatch(r"\s*\{.*\}\s*|\s*\w+\s*[:=]>?\s*.*", arg, re.DOTALL) or _PLACEHOLDER.match(arg.strip()):
                value, known = _shell_text(arg, strings)
                flat.append((value, None if known else ""))
        if not flat:
            continue
        actions.append(RunText(flat[0][0]))  # `system("rm -rf x")`: shell code
        if len(flat) > 1 and lang != "awk":
            actions.append(RunWords(tuple(flat)))  # `system("rm", "-rf", "x")`, `spawnSync("rm", ["-rf", "x"])`: an argv
    for name, argv in _DELETERS.get(lang, {}).items():
        for m in re.finditer(r"(?<![\w$])" + re.escape(name).replace(r"\.", r"\s*(?:\.|::)\s*") + r"(?!\w)\s*\(?", skeleton):
            args, _ = _arguments(skeleton, m.end() - (1 if skeleton[m.end() - 1] == "(" else 0))
            if args and args[0]:
                value, known = _shell_text(args[0], strings)
                if lang == "node" and argv == ["rm", "-rf"] and not re.search(r"recursive", " ".join(args[1:])):
                    continue  # `fs.rmSync(file)` without recursive: deletes one file
                actions.append(RunWords((*((w, None) for w in argv), (value, None if known else ""))))
    for dynamic in re.finditer(r"(?<![\w$.])(?:" + _DYNAMIC.get(lang, r"(?!)") + r")", skeleton):
        call = dynamic.group(0).strip()
        args, _ = _arguments(skeleton, dynamic.end())
        code_arg = args[0] if args else ""
        placeholder = _PLACEHOLDER.fullmatch(code_arg.strip())
        if call.startswith("eval") and placeholder:
            actions += analyse_code(lang, strings[int(placeholder.group(1))][1], depth + 1)
        else:
            actions.append(Opaque(f"it uses `{call.rstrip('( ')}`, so what it runs is only known at run time"))
    if lang == "awk":
        for m in re.finditer(r"(\x00\d+\x01|[\w$]+)\s*\|\s*getline", skeleton):
            value, known = _shell_text(m.group(1), strings)
            actions.append(RunText(value))
        for m in re.finditer(r"\b(?:print|printf)\b[^;\n}]*?\|&?\s*(\x00\d+\x01|[\w$]+)", skeleton):
            value, known = _shell_text(m.group(1), strings)
            actions.append(FeedsShell(value))
    return actions


# -- sed: the `e` command and the `e` flag of `s` run commands ----------------------------------------------------


def _sed(script: str) -> list[CodeAction]:
    actions: list[CodeAction] = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;{}!":
            i += 1
            continue
        m = _SED_ADDRESS_RE.match(script, i)
        if m and m.end() > i:
            i = m.end()
            continue
        if c in "aic":  # text commands run to the end of the line
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "rRwWbtTv:":  # file names and labels run to the end of the line (or `;` for labels)
            end = script.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "e":
            end = script.find("\n", i)
            end = n if end < 0 else end
            command = script[i + 1:end].strip()
            actions.append(RunText(command) if command else Opaque("sed's `e` runs its input lines as commands"))
            i = end
            continue
        if c in "sy" and i + 1 < n:
            delim = script[i + 1]
            j, parts = i + 2, 0
            while j < n and parts < 2:
                if script[j] == "\\":
                    j += 2
                    continue
                if script[j] == delim:
                    parts += 1
                j += 1
            flags = _SED_FLAGS_RE.match(script, j)
            if c == "s" and flags and "e" in flags.group(0).split("w")[0]:
                actions.append(Opaque("sed's `s///e` runs what it substitutes as a command"))
            i = max(flags.end() if flags else j, i + 1)
            continue
        i += 1
    return actions
