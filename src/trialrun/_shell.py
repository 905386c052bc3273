"""Which programs a shell command line runs, and whether it runs a forbidden one.

`expect.never_ran(...)` and the reference agent's `ToolPolicy` both ask the same question of a command a model
wanted to run: "does this run `rm -rf` (or `curl | sh`)?". A substring test is useless for that: it flags
`echo "rm -rf /"` and misses `sudo /bin/rm -fr /`. So this module parses the command as POSIX shell, follows it
through what hides a command (wrappers such as `sudo`, `env`, `timeout`, `xargs`, `bash -c`, `eval`; substitutions;
quoting; brace and `$IFS` tricks; functions and aliases defined in the line, called with their arguments; text
echoed or printed into a shell), and compares each program it would run with the pattern, option by option.
A command it cannot parse counts as a match, and so does a program or shell code only known at run time
(`$(echo rm) -rf /`, `eval "$X"`, `base64 -d x | sh`): for a guard, "could not tell" must read as "may have run it".

One implementation serves both users so that the policy and the grader can never disagree.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

__all__ = [
    "DEFAULT_COMMAND_TOOLS",
    "COMMAND_ARGUMENT_KEYS",
    "CommandPattern",
    "CommandMatch",
    "match_command",
    "command_of_call",
    "UnreadableCommand",
    "commands_in",
    "commands_for_allow_list",
    "cannot_read",
    "CommandLines",
]

DEFAULT_COMMAND_TOOLS: tuple[str, ...] = ("run_command", "bash", "shell", "exec", "execute_command", "local_shell")
COMMAND_ARGUMENT_KEYS: tuple[str, ...] = ("command", "cmd")

_MAX_DEPTH = 40  # nested substitutions / `bash -c` / `eval` levels before we give up (and fail closed)
_REASON_LIMIT = 160  # characters of a command quoted in a reason before it is shortened


class _ParseError(Exception):
    """The command is not valid shell (or too deeply nested to follow); the message says why."""


# --------------------------------------------------------------------------------------------------------------
# Syntax tree. A word keeps its pieces so that variables can be resolved later (`x=rm; $x -rf /`).
# --------------------------------------------------------------------------------------------------------------

# A piece is ("L", text, quoted) for literal text, ("P", name, quoted, source) for `$name`/`${name}`, or
# ("D", source, quoted) for an expansion whose value is only known at run time (`$(...)`, `${x:-y}`, `$((1+2))`).
_Piece = tuple


@dataclass(slots=True)
class _Word:
    pieces: tuple[_Piece, ...]


@dataclass(slots=True)
class _Simple:
    """A simple command: words, plus what its substitutions and redirections run or feed it."""

    words: list[_Word]
    subs: list[list]  # scripts of command/process substitutions in its words and redirections, in order
    stdin_word: _Word | None = None  # a here-document or here-string: the text on its standard input
    redirections: int = 0
    stdin_file: bool = False  # standard input comes from a file or descriptor (`< script.sh`, `<&3`)


@dataclass(slots=True)
class _Group:
    """A compound command: `( ... )`, `{ ...; }`, if/while/for/case bodies, a function body."""

    body: list
    subs: list[list]
    name: str | None = None  # a function definition's name (`f() { ...; }`, `function f { ...; }`)
    stdin_word: _Word | None = None  # as for _Simple: what redirections put on its standard input
    stdin_file: bool = False


# A script is a list of pipelines; a pipeline is a list of stages (_Simple or _Group).

_PLAIN_RE = re.compile(r"[^ \t\r\n;&|()<>'\"\\$`{]+")
_RESERVED_RE = re.compile(r"(\{|\}|!|\[\[|[a-z]+)(?=[\s;&|()<>]|$)")
_REDIR_RE = re.compile(r"&>>|&>|\d*(?:<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_SPECIAL_PARAMS = set("@*#?$!-0123456789")
_CLOSING_WORDS = frozenset({"}", "fi", "done", "esac", "then", "elif", "else", "do"})
_BLANKS = " \t\r"
_ANSI_ESCAPES = {
    "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "?": "?",
}


class _Parser:
    """A recursive-descent reader of POSIX shell (with the bash extensions agents write).

    It parses far enough to know every simple command and what feeds it; it does not evaluate anything.
    """

    __slots__ = ("s", "n", "i", "depth", "heredocs")

    def __init__(self, text: str, depth: int = 0, start: int = 0) -> None:
        if depth > _MAX_DEPTH:
            raise _ParseError("nested too deeply to follow")
        self.s = text
        self.n = len(text)
        self.i = start
        self.depth = depth
        # pending here-documents: delimiter, quoted, strip tabs, the command (or group) and whether it is stdin
        self.heredocs: list[tuple[str, bool, bool, _Simple | _Group, bool]] = []

    # -- entry points --------------------------------------------------------------------------------------------

    def parse_all(self) -> list:
        script, _ = self.parse_list(frozenset(), paren=False)
        return script

    # -- lists, pipelines, stages ----------------------------------------------------------------------------------

    def parse_list(
        self, closers: frozenset[str], paren: bool, case_item: bool = False, opener: str = "("
    ) -> tuple[list, str]:
        """Pipelines up to the end, a `)` (when `paren`), `;;` (in a case item) or a reserved word in `closers`."""
        pipelines: list = []
        s = self.s
        while True:
            self.skip_separators()
            if self.i >= self.n:
                if paren:
                    raise _ParseError(f"unclosed `{opener}`")
                if closers:
                    raise _ParseError("missing " + " or ".join(f"`{c}`" for c in sorted(closers)))
                return pipelines, ""
            c = s[self.i]
            if c == ")":
                if paren:
                    self.i += 1
                    return pipelines, ")"
                raise _ParseError("unexpected `)`")
            if c == ";":  # skip_separators stops only at `;;` / `;&`
                if case_item:
                    self.i += 3 if s.startswith(";;&", self.i) else 2
                    return pipelines, ";;"
                raise _ParseError(f"unexpected `{s[self.i:self.i + 2]}`")
            if closers:
                m = _RESERVED_RE.match(s, self.i)
                if m and m.group(1) in closers:
                    self.i = m.end()
                    return pipelines, m.group(1)
            pipelines.append(self.parse_pipeline())

    def skip_separators(self) -> None:
        s, n = self.s, self.n
        while True:
            self.skip_blanks()
            if self.i >= n:
                return
            c = s[self.i]
            if c == "\n":
                self.i += 1
                self.read_heredoc_bodies()
            elif c == ";":
                if s.startswith(";;", self.i) or s.startswith(";&", self.i):
                    return
                self.i += 1
            elif c == "&":
                if s.startswith("&>", self.i):
                    return
                self.i += 2 if s.startswith("&&", self.i) else 1
            elif c == "|":
                if s.startswith("||", self.i):
                    self.i += 2
                else:
                    raise _ParseError("`|` with no command before it")
            else:
                return

    def parse_pipeline(self) -> list:
        stages = [self.parse_stage()]
        s = self.s
        while True:
            self.skip_blanks()
            if self.i < self.n and s[self.i] == "|" and not s.startswith("||", self.i):
                self.i += 2 if s.startswith("|&", self.i) else 1
                while True:  # a newline may follow a pipe
                    self.skip_blanks()
                    if self.i < self.n and s[self.i] == "\n":
                        self.i += 1
                        self.read_heredoc_bodies()
                    else:
                        break
                stage = self.parse_stage()
                if isinstance(stage, _Simple) and not stage.words and not stage.subs and stage.stdin_word is None:
                    raise _ParseError("`|` with no command after it")
                stages.append(stage)
            else:
                return stages

    def parse_stage(self) -> _Simple | _Group:
        self.skip_blanks()
        s, i = self.s, self.i
        if i < self.n and s[i] == "(":
            if s.startswith("((", i):
                self.i = self.skip_arithmetic(i + 2)
                return self.finish_compound([])
            self.i = i + 1
            body, _ = self.parse_list(frozenset(), paren=True)
            return self.finish_compound(body)
        m = _RESERVED_RE.match(s, i)
        word = m.group(1) if m else None
        if word is None:
            return self.parse_simple()
        if word == "!":
            self.i = m.end()
            return self.parse_stage()
        if word == "{":
            self.i = m.end()
            body, _ = self.parse_list(frozenset({"}"}), paren=False)
            return self.finish_compound(body)
        if word in ("if", "while", "until", "for", "select", "case", "function", "[["):
            self.i = m.end()
            return getattr(self, "parse_" + {"[[": "cond"}.get(word, word))()
        if word in _CLOSING_WORDS:
            raise _ParseError(f"unexpected `{word}`")
        return self.parse_simple()

    def finish_compound(self, body: list, subs: list | None = None) -> _Group:
        """Redirections after a compound command (`done < <(cmd)`, `} 2>&1`) and nothing else."""
        group = _Group(body, subs or [])
        holder = _Simple([], group.subs)
        while True:
            self.skip_blanks()
            if self.i >= self.n or not self.read_redirection(holder):
                break
        self.heredocs = [(d, q, t, group if c is holder else c, fd0) for d, q, t, c, fd0 in self.heredocs]
        group.stdin_word, group.stdin_file = holder.stdin_word, holder.stdin_file
        if self.i < self.n and self.s[self.i] not in "\n;&|)":
            raise _ParseError(f"unexpected `{self.s[self.i:self.i + 10].split()[0]}` after a compound command")
        return group

    def parse_if(self) -> _Group:
        body: list = []
        part, _ = self.parse_list(frozenset({"then"}), paren=False)
        body += part
        while True:
            part, closer = self.parse_list(frozenset({"elif", "else", "fi"}), paren=False)
            body += part
            if closer == "fi":
                return self.finish_compound(body)
            if closer == "elif":
                part, _ = self.parse_list(frozenset({"then"}), paren=False)
                body += part
            else:
                part, _ = self.parse_list(frozenset({"fi"}), paren=False)
                return self.finish_compound(body + part)

    def parse_while(self) -> _Group:
        cond, _ = self.parse_list(frozenset({"do"}), paren=False)
        body, _ = self.parse_list(frozenset({"done"}), paren=False)
        return self.finish_compound(cond + body)

    parse_until = parse_while

    def parse_for(self) -> _Group:
        """`for NAME [in WORDS]; do ... done` and `for ((...)); do`: the header's substitutions run too."""
        s = self.s
        subs: list = []
        count = 0
        separated = False
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise _ParseError("`for` without `do`")
            c = s[self.i]
            if c in ";\n":
                self.i += 1
                if c == "\n":
                    self.read_heredoc_bodies()
                separated = True
                continue
            if s.startswith("((", self.i):
                self.i = self.skip_arithmetic(self.i + 2)
                count += 2
                continue
            m = _RESERVED_RE.match(s, self.i)
            if m and m.group(1) == "do" and (separated or count == 1):
                self.i = m.end()
                break
            word = self.read_word(subs)
            if word is None:
                raise _ParseError(f"unexpected `{c}` in a `for` header")
            count += 1
        body, _ = self.parse_list(frozenset({"done"}), paren=False)
        return self.finish_compound(body, subs)

    parse_select = parse_for

    def parse_case(self) -> _Group:
        s = self.s
        subs: list = []
        self.skip_blanks()
        if self.read_word(subs) is None:
            raise _ParseError("`case` without a word")
        self.skip_separators()
        m = _RESERVED_RE.match(s, self.i)
        if not m or m.group(1) != "in":
            raise _ParseError("`case` without `in`")
        self.i = m.end()
        body: list = []
        while True:
            self.skip_separators()
            m = _RESERVED_RE.match(s, self.i)
            if m and m.group(1) == "esac":
                self.i = m.end()
                return self.finish_compound(body, subs)
            if self.i >= self.n:
                raise _ParseError("`case` without `esac`")
            if s[self.i] == "(":
                self.i += 1
            while True:  # patterns: word | word ... )
                self.skip_blanks()
                if self.i >= self.n:
                    raise _ParseError("unfinished `case` pattern")
                c = s[self.i]
                if c == ")":
                    self.i += 1
                    break
                if c == "|":
                    self.i += 1
                    continue
                if self.read_word(subs) is None:
                    raise _ParseError(f"unexpected `{c}` in a `case` pattern")
            part, closer = self.parse_list(frozenset({"esac"}), paren=False, case_item=True)
            body += part
            if closer == "esac":
                return self.finish_compound(body, subs)

    def parse_function(self) -> _Group:
        self.skip_blanks()
        name = self.read_word([])
        if name is None:
            raise _ParseError("`function` without a name")
        self.skip_blanks()
        if self.s.startswith("(", self.i):
            self.i += 1
            self.skip_blanks()
            if not self.s.startswith(")", self.i):
                raise _ParseError("`function NAME (` without `)`")
            self.i += 1
        self.skip_separators()
        body = self.parse_stage_as_group()
        body.name = _literal_text(name)
        return body

    def parse_stage_as_group(self) -> _Group:
        stage = self.parse_stage()
        return stage if isinstance(stage, _Group) else _Group([[stage]], [])

    def parse_cond(self) -> _Simple:
        """`[[ ... ]]`: operators inside are words, but substitutions still run."""
        s = self.s
        subs: list = []
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise _ParseError("`[[` without `]]`")
            if s.startswith("]]", self.i):
                self.i += 2
                break
            c = s[self.i]
            if c == "\n":
                self.i += 1
                self.read_heredoc_bodies()
                continue
            if c in ";&|()<>":
                self.i += 1
                continue
            self.read_word(subs)
        holder = _Simple([], subs)
        while True:
            self.skip_blanks()
            if self.i >= self.n or not self.read_redirection(holder):
                return holder

    def parse_simple(self) -> _Simple | _Group:
        cmd = _Simple([], [])
        s = self.s
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                return cmd
            c = s[self.i]
            if c in "\n;|)":
                return cmd
            if c == "&" and not s.startswith("&>", self.i):
                return cmd
            if c == "(":
                if cmd.words and s[self.i - 1] == "=" and _ASSIGN_RE.fullmatch(_literal_text(cmd.words[-1])):
                    self.read_array(cmd)  # `files=(a b "$(ls)")`
                    continue
                if len(cmd.words) == 1:  # NAME () compound-command: a function definition
                    self.i += 1
                    self.skip_blanks()
                    if not s.startswith(")", self.i):
                        raise _ParseError("unexpected `(`")
                    self.i += 1
                    self.skip_separators()
                    body = self.parse_stage_as_group()
                    body.subs[:0] = cmd.subs
                    body.name = _literal_text(cmd.words[0])
                    return body
                raise _ParseError("unexpected `(`")
            if self.read_redirection(cmd):
                continue
            word = self.read_word(cmd.subs)
            if word is None:
                raise _ParseError(f"unexpected `{c}`")
            cmd.words.append(word)

    def read_array(self, cmd: _Simple) -> None:
        """The elements of `name=( ... )`: only their substitutions matter."""
        s = self.s
        self.i += 1
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise _ParseError("unclosed array `(`")
            c = s[self.i]
            if c == ")":
                self.i += 1
                return
            if c == "\n":
                self.i += 1
                continue
            if self.read_word(cmd.subs) is None:
                raise _ParseError(f"unexpected `{c}` in an array")

    def read_redirection(self, cmd: _Simple) -> bool:
        s = self.s
        m = _REDIR_RE.match(s, self.i)
        if not m:
            return False
        op = m.group(0).lstrip("0123456789")
        on_stdin = m.group(0)[: len(m.group(0)) - len(op)] in ("", "0")
        if op in ("<", ">") and m.end() < self.n and s[m.end()] == "(":
            if m.end() - m.start() == 1:
                return False  # `<(cmd)` is a process substitution (a word), not a redirection
        self.i = m.end()
        cmd.redirections += 1
        self.skip_blanks()
        target = self.read_word(cmd.subs)
        if target is None:
            raise _ParseError(f"`{m.group(0)}` without a target")
        if op in ("<<", "<<-"):
            delimiter = _literal_text(target)
            quoted = any(p[2] for p in target.pieces)
            self.heredocs.append((delimiter, quoted, op == "<<-", cmd, on_stdin))
        elif op == "<<<" and on_stdin:
            cmd.stdin_word = target
        elif op in ("<", "<>", "<&") and on_stdin:
            cmd.stdin_file = True  # (with a here-document too, the file makes what the command reads unknown)
        return True

    def read_heredoc_bodies(self) -> None:
        """Here-document bodies start after the newline that ends their command line."""
        s = self.s
        while self.heredocs:
            delimiter, quoted, strip_tabs, cmd, on_stdin = self.heredocs.pop(0)
            lines = []
            while self.i < self.n:
                end = s.find("\n", self.i)
                end = self.n if end < 0 else end
                line = s[self.i:end]
                self.i = min(end + 1, self.n)
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            body = "\n".join(lines) + ("\n" if lines else "")
            word = _Word((("L", body, True),))
            if not quoted:  # an unquoted delimiter means `$(...)`, backticks and `$x` in the body expand
                scanner = _Parser(body, self.depth + 1)
                word = scanner.scan_expansions(cmd.subs)
            if on_stdin:
                cmd.stdin_word = word

    # -- words -----------------------------------------------------------------------------------------------------

    def skip_blanks(self) -> None:
        s, n, i = self.s, self.n, self.i
        while i < n:
            c = s[i]
            if c in _BLANKS:
                i += 1
            elif c == "\\" and i + 1 < n and s[i + 1] == "\n":
                i += 2
            elif c == "#":
                end = s.find("\n", i)
                i = n if end < 0 else end
            else:
                break
        self.i = i

    def read_word(self, subs: list) -> _Word | None:
        """One word starting at the cursor, or None when the cursor is at an operator."""
        s, n = self.s, self.n
        i = start = self.i
        pieces: list[_Piece] = []
        while i < n:
            c = s[i]
            m = _PLAIN_RE.match(s, i)
            if m:
                pieces.append(("L", m.group(0), False))
                i = m.end()
                continue
            if c == "{":
                pieces.append(("L", "{", False))
                i += 1
            elif c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise _ParseError("unbalanced single quote")
                pieces.append(("L", s[i + 1:end], True))
                i = end + 1
            elif c == '"':
                i = self.read_dquote(i + 1, pieces, subs)
            elif c == "\\":
                if i + 1 >= n:
                    pieces.append(("L", "\\", False))
                    i += 1
                elif s[i + 1] == "\n":
                    i += 2
                else:
                    pieces.append(("L", s[i + 1], True))
                    i += 2
            elif c == "$":
                i = self.read_dollar(i, pieces, subs, quoted=False)
            elif c == "`":
                i = self.read_backtick(i, pieces, subs, quoted=False)
            elif c in "<>" and i == start and i + 1 < n and s[i + 1] == "(":
                self.i = i + 2
                subs.append(self.sub_script(i + 2))
                pieces.append(("D", s[i:self.i], False))
                i = self.i
            else:  # blank, newline or operator: the word ends
                break
        self.i = i
        if i == start:
            return None
        return _Word(tuple(pieces))

    def sub_script(self, start: int) -> list:
        """Parse `...)` from `start` (just after `$(`, `<(` or `>(`) as a script; leaves the cursor after the `)`."""
        sub = _Parser(self.s, self.depth + 1, start)
        body, _ = sub.parse_list(frozenset(), paren=True, opener=self.s[start - 2:start])
        if sub.heredocs:
            sub.read_heredoc_bodies()
        self.i = sub.i
        return body

    def read_dquote(self, i: int, pieces: list, subs: list, end_char: str | None = '"') -> int:
        """Inside "...": only `$`, backticks and backslash are special. Returns the index after the closing quote."""
        s, n = self.s, self.n
        buf: list[str] = []
        while True:
            if i >= n:
                if end_char is None:
                    break
                raise _ParseError("unbalanced double quote")
            c = s[i]
            if c == end_char:
                i += 1
                break
            if c == "\\" and i + 1 < n:
                nxt = s[i + 1]
                if nxt in '$`"\\':
                    buf.append(nxt)
                    i += 2
                    continue
                if nxt == "\n":
                    i += 2
                    continue
                buf.append(c)
                i += 1
            elif c == "$" or c == "`":
                if buf:
                    pieces.append(("L", "".join(buf), True))
                    buf = []
                if c == "$":
                    i = self.read_dollar(i, pieces, subs, quoted=True)
                else:
                    i = self.read_backtick(i, pieces, subs, quoted=True)
            else:
                buf.append(c)
                i += 1
        if buf or not pieces or end_char is not None:
            pieces.append(("L", "".join(buf), True))
        return i

    def scan_expansions(self, subs: list) -> _Word:
        """Here-document text (which behaves like a double-quoted string) as a word, recording substitutions."""
        pieces: list[_Piece] = []
        self.read_dquote(0, pieces, subs, end_char=None)
        return _Word(tuple(pieces))

    def read_dollar(self, i: int, pieces: list, subs: list, quoted: bool) -> int:
        s, n = self.s, self.n
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "(":
            if s.startswith("((", i + 1):
                end = self.skip_arithmetic(i + 3)
                pieces.append(("D", s[i:end], quoted))
                return end
            subs.append(self.sub_script(i + 2))
            pieces.append(("D", s[i:self.i], quoted))
            return self.i
        if nxt == "{":
            end = self.skip_braced(i + 2, subs)
            inner = s[i + 2:end - 1]
            if _NAME_RE.fullmatch(inner) or (len(inner) == 1 and inner in _SPECIAL_PARAMS):
                pieces.append(("P", inner, quoted, s[i:end]))
            else:
                pieces.append(("D", s[i:end], quoted))
            return end
        if nxt == "'" and not quoted:
            text, end = _ansi_c(s, i + 2)
            pieces.append(("L", text, True))
            return end
        if nxt == '"' and not quoted:
            return self.read_dquote(i + 2, pieces, subs)
        m = _NAME_RE.match(s, i + 1)
        if m:
            pieces.append(("P", m.group(0), quoted, s[i:m.end()]))
            return m.end()
        if nxt and nxt in _SPECIAL_PARAMS:
            pieces.append(("P", nxt, quoted, s[i:i + 2]))
            return i + 2
        pieces.append(("L", "$", quoted))
        return i + 1

    def skip_braced(self, i: int, subs: list) -> int:
        """The end of `${...}` (index after `}`), recording substitutions inside (`${x:-$(cmd)}`)."""
        s, n = self.s, self.n
        depth = 1
        while i < n:
            c = s[i]
            if c == "}":
                depth -= 1
                if depth == 0:
                    return i + 1
                i += 1
            elif c == "{":
                depth += 1
                i += 1
            elif c == "\\":
                i += 2
            elif c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise _ParseError("unbalanced single quote")
                i = end + 1
            elif c == '"':
                i = self.read_dquote(i + 1, [], subs)
            elif c == "$":
                i = self.read_dollar(i, [], subs, quoted=True)
            elif c == "`":
                i = self.read_backtick(i, [], subs, quoted=True)
            else:
                i += 1
        raise _ParseError("unclosed `${`")

    def skip_arithmetic(self, i: int) -> int:
        """The index after the `))` that closes `$((` or `((` (content is arithmetic, not commands)."""
        s, n = self.s, self.n
        depth = 2
        while i < n:
            c = s[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        raise _ParseError("unclosed `((`")

    def read_backtick(self, i: int, pieces: list, subs: list, quoted: bool) -> int:
        s, n = self.s, self.n
        j = i + 1
        buf: list[str] = []
        while True:
            if j >= n:
                raise _ParseError("unclosed backtick")
            c = s[j]
            if c == "`":
                break
            if c == "\\" and j + 1 < n and (s[j + 1] in "$`\\" or (quoted and s[j + 1] == '"')):
                buf.append(s[j + 1])
                j += 2
                continue
            buf.append(c)
            j += 1
        subs.append(_Parser("".join(buf), self.depth + 1).parse_all())
        pieces.append(("D", s[i:j + 1], quoted))
        return j + 1


_HEX_RES = {e: re.compile("[0-9A-Fa-f]{1,%d}" % w) for e, w in (("x", 2), ("u", 4), ("U", 8))}
_OCTAL_RE = re.compile("[0-7]{0,2}")


def _ansi_c(s: str, i: int) -> tuple[str, int]:
    """Decode `$'...'` from index `i` (after the quote); returns the text and the index after the closing quote."""
    out: list[str] = []
    n = len(s)
    while i < n:
        c = s[i]
        if c == "'":
            return "".join(out), i + 1
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = s[i + 1]
        i += 2
        if e in _ANSI_ESCAPES:
            out.append(_ANSI_ESCAPES[e])
        elif e in "xuU":
            m = _HEX_RES[e].match(s, i)
            if m:
                out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
                i = m.end()
            else:
                out.append("\\" + e)
        elif e in "01234567":
            m = _OCTAL_RE.match(s, i)
            assert m is not None  # the pattern also matches the empty string
            out.append(chr(int(e + m.group(0), 8) & 0xFF))
            i = m.end()
        elif e == "c" and i < n:
            out.append(chr(ord(s[i]) & 0x1F))
            i += 1
        else:
            out.append("\\" + e)
    raise _ParseError("unbalanced `$'` quote")


def _literal_text(word: _Word) -> str:
    """A word as written, quotes removed, expansions left as their source text (`$x`, `$(cmd)`)."""
    return "".join(p[3] if p[0] == "P" else p[1] for p in word.pieces)


# --------------------------------------------------------------------------------------------------------------
# Word expansion (the static part of it): brace expansion, known variables, `$IFS` splitting, quote removal.
# --------------------------------------------------------------------------------------------------------------

_LB, _COMMA, _RB = "\ue000", "\ue001", "\ue002"
# What is known of a word: None when all of it is; else the text it is sure to end with (see `_expand_word`).
_Dyn = str | None
_IFS_DEFAULT = " \t\n"
_BRACE_LIMIT = 2000


def _expand_word(word: _Word, env: Mapping[str, Any], split: bool = True) -> list[tuple[str, _Dyn]]:
    """The fields a word becomes, each as (text, tail). Unknown expansions stay as their source text.

    `tail` is None for a field known when the command is parsed; for a field only known at run time it is the
    literal text after its last unknown part (`r$()m` -> "m", `$DIR/rm` -> "/rm", `$X` -> ""): all that is
    sure about the value is that it ends with it.
    """
    pieces = word.pieces
    if len(pieces) == 1 and pieces[0][0] == "L":
        p = pieces[0]
        if p[2] or "{" not in p[1]:
            return [(p[1], None)]
    if all(p[0] == "L" for p in pieces):
        if split and any(not p[2] and "{" in p[1] for p in pieces):
            marked = "".join(
                p[1] if p[2] else p[1].replace("{", _LB).replace(",", _COMMA).replace("}", _RB) for p in pieces
            )
            return [(_unmark(t), None) for t in _brace(marked, [_BRACE_LIMIT])]
        return [("".join(p[1] for p in pieces), None)]
    fields: list[tuple[str, _Dyn]] = []
    cur: list[str] = []
    started = False
    tail: list[str] | None = None  # known text since the field's last unknown part (None: nothing unknown yet)
    ifs = env.get("IFS", _IFS_DEFAULT)
    for p in pieces:
        kind = p[0]
        if kind == "L":
            cur.append(p[1])
            if tail is not None:
                tail.append(p[1])
            started = True
            continue
        if kind == "P" and p[1] == "@" and isinstance(env.get("@"), tuple):
            # "$@": one field per positional parameter (split further when unquoted); known ones by value
            args: tuple[tuple[str, _Dyn], ...] = env["@"]
            if not split:  # assignments, here-documents: the parameters joined by spaces
                if all(t is None for _, t in args):
                    cur.append(" ".join(text for text, _ in args))
                    if tail is not None:
                        tail.append(cur[-1])
                else:
                    cur.append(p[-1])
                    tail = []
                started = True
                continue
            for k, (text, arg_tail) in enumerate(args):
                if k and started:
                    fields.append(("".join(cur), None if tail is None else "".join(tail)))
                    cur, started, tail = [], False, None
                if arg_tail is not None:
                    cur.append(text)
                    tail, started = [arg_tail], True
                    continue
                for j, part in enumerate([text] if p[2] else _split_ifs(text, ifs)):
                    if j and started:
                        fields.append(("".join(cur), None if tail is None else "".join(tail)))
                        cur, started, tail = [], False, None
                    if part or p[2]:
                        cur.append(part)
                        if tail is not None:
                            tail.append(part)
                        started = True
            continue
        if kind == "P" and (p[1] in env or p[1] == "IFS"):
            value = env[p[1]] if p[1] in env else _IFS_DEFAULT
            if p[2] or not split:
                cur.append(value)
                if tail is not None:
                    tail.append(value)
                started = True
                continue
            parts = _split_ifs(value, ifs)
            for k, part in enumerate(parts):
                if k and started:
                    fields.append(("".join(cur), None if tail is None else "".join(tail)))
                    cur, started, tail = [], False, None
                if part:
                    cur.append(part)
                    if tail is not None:
                        tail.append(part)
                    started = True
            continue
        cur.append(p[-1] if kind == "P" else p[1])  # unknown at this point: keep the source text
        started = True
        tail = []
    if started:
        fields.append(("".join(cur), None if tail is None else "".join(tail)))
    return fields


def _split_ifs(value: str, ifs: str) -> list[str]:
    if not ifs:
        return [value]
    return re.split("[" + re.escape(ifs) + "]+", value)


def _brace(text: str, budget: list[int]) -> list[str]:
    """Bash brace expansion over marked braces/commas: `{rm,-rf}` -> rm -rf (as separate words).

    `budget` bounds the words made, so that `{a,b}{a,b}...` cannot blow up on the hot path.
    """
    budget[0] -= 1
    if budget[0] < 0:
        raise _ParseError("brace expansion too large to follow")
    start = text.find(_LB)
    while start >= 0:
        depth, commas, j = 0, [], start
        for j in range(start, len(text)):
            ch = text[j]
            if ch == _LB:
                depth += 1
            elif ch == _RB:
                depth -= 1
                if depth == 0:
                    break
            elif ch == _COMMA and depth == 1:
                commas.append(j)
        else:
            return [text]
        if commas:
            prefix, suffix = text[:start], text[j + 1:]
            bounds = [start, *commas, j]
            out: list[str] = []
            for a, b in zip(bounds, bounds[1:]):
                for alt in _brace(text[a + 1:b], budget):
                    out.extend(_brace(prefix + alt + suffix, budget))
            return out
        start = text.find(_LB, start + 1)
    return [text]


def _unmark(text: str) -> str:
    return text.replace(_LB, "{").replace(_COMMA, ",").replace(_RB, "}")


# --------------------------------------------------------------------------------------------------------------
# Options: a small getopt that knows, per program, which options take values and what the long forms mean.
# --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Opts:
    values: frozenset[str] = frozenset()  # canonical keys whose option takes a value (next word or attached)
    optional: frozenset[str] = frozenset()  # keys whose value may only be attached (`-i{}`, `--replace=X`)
    aliases: Mapping[str, str] = field(default_factory=dict)  # short char or long name -> canonical key
    longs: tuple[str, ...] = ()  # known long names, for GNU-style unambiguous abbreviations (`--recur`)
    single_dash: bool = False  # `find -delete`: a single-dash word is one option, not a cluster of letters
    plus: bool = False  # shells: `+o` is an option too
    dash_is_option: bool = False  # `env -` means `env -i`

    def canonical_long(self, name: str) -> str:
        if name in self.aliases:
            return self.aliases[name]
        if self.longs:
            hits = {self.aliases.get(ln, "--" + ln) for ln in self.longs if ln.startswith(name)}
            if len(hits) == 1:
                return hits.pop()
        return "--" + name


def _opts(
    values: str = "",
    optional: str = "",
    longs: Mapping[str, str | None] | None = None,
    long_values: Iterable[str] = (),
    short: Mapping[str, str] | None = None,
    **flags: bool,
) -> _Opts:
    """Build an option table. `longs` maps long names to the short letter they mean (None: no short form)."""
    longs = dict(longs or {})
    aliases: dict[str, str] = dict(short or {})
    for name, letter in longs.items():
        aliases[name] = letter if letter else "--" + name
    value_keys = set(values) | {"--" + name for name in long_values}
    for name in long_values:
        longs.setdefault(name, None)
        aliases.setdefault(name, "--" + name)
    return _Opts(frozenset(value_keys), frozenset(optional), aliases, tuple(longs), **flags)


_GENERIC = _Opts()


def _option_word(words: Sequence[str], i: int, opts: _Opts) -> tuple[int, list[tuple[str, str | None]]] | None:
    """Read the option word at `i` -> (next index, [(key, value)]), or None when it is not an option."""
    w = words[i]
    if len(w) < 2 or w[0] not in ("-+" if opts.plus else "-"):
        if w == "-" and opts.dash_is_option:
            return i + 1, [("i", None)]
        return None
    if w.startswith("--"):
        name, eq, value = w[2:].partition("=")
        key = opts.canonical_long(name)
        if eq:
            return i + 1, [(key, value)]
        if key in opts.values and i + 1 < len(words):
            return i + 2, [(key, words[i + 1])]
        return i + 1, [(key, None)]
    if opts.single_dash:
        return i + 1, [(w, None)]
    found: list[tuple[str, str | None]] = []
    j = 1
    while j < len(w):
        key = opts.aliases.get(w[j], w[j])
        rest = w[j + 1:]
        if key in opts.values:
            if rest:
                found.append((key, rest))
                return i + 1, found
            if i + 1 < len(words):
                found.append((key, words[i + 1]))
                return i + 2, found
            found.append((key, None))
            return i + 1, found
        if key in opts.optional:
            found.append((key, rest or None))
            return i + 1, found
        found.append((key, None))
        j += 1
    return i + 1, found


def _getopt(words: Sequence[str], i: int, opts: _Opts) -> tuple[int, dict[str, str | None]]:
    """Options up to the first operand (POSIX order, as wrappers parse them) -> (operand index, options)."""
    seen: dict[str, str | None] = {}
    n = len(words)
    while i < n:
        if words[i] == "--":
            return i + 1, seen
        got = _option_word(words, i, opts)
        if got is None:
            return i, seen
        i, found = got
        seen.update(found)
    return i, seen


@dataclass(frozen=True, slots=True)
class _Args:
    """A command's (or a pattern's) arguments, normalised: option keys, option values, operands."""

    flags: frozenset[str]
    values: frozenset[tuple[str, str]]
    operands: tuple[str, ...]


@lru_cache(maxsize=8192)
def _normalise(program: str, args: tuple[str, ...]) -> _Args:
    """GNU-style: options may follow operands, until `--`."""
    opts = _SPECS.get(program, _GENERIC)
    flags: set[str] = set()
    values: set[tuple[str, str]] = set()
    operands: list[str] = []
    i, n = 0, len(args)
    while i < n:
        if args[i] == "--":
            operands.extend(args[i + 1:])
            break
        got = _option_word(args, i, opts)
        if got is None:
            operands.append(args[i])
            i += 1
            continue
        i, found = got
        for key, value in found:
            flags.add(key)
            if value is not None:
                values.add((key, value))
    return _Args(frozenset(flags), frozenset(values), tuple(operands))


def _key_text(key: str, value: str | None = None) -> str:
    text = key if key.startswith("-") else "-" + key
    return text if value is None else f"{text} {value}"


# Per-program option tables: long forms and case variants that mean the same short option.
_SPECS: dict[str, _Opts] = {
    "rm": _opts(
        short={"R": "r"},
        longs={"recursive": "r", "force": "f", "interactive": "i", "dir": "d", "verbose": "v",
               "one-file-system": None, "no-preserve-root": None, "preserve-root": None, "help": None,
               "version": None},
    ),
    "cp": _opts(
        values="tS",
        short={"R": "r"},
        longs={"recursive": "r", "force": "f", "archive": "a", "interactive": "i", "no-clobber": "n",
               "verbose": "v", "target-directory": "t", "no-target-directory": "T", "suffix": "S", "link": "l",
               "symbolic-link": "s", "update": "u", "dereference": "L", "no-dereference": "P",
               "one-file-system": "x", "parents": None, "preserve": None, "no-preserve": None,
               "remove-destination": None, "backup": None, "reflink": None, "sparse": None,
               "strip-trailing-slashes": None, "attributes-only": None, "copy-contents": None},
    ),
    "mv": _opts(
        values="tS",
        longs={"force": "f", "interactive": "i", "no-clobber": "n", "verbose": "v", "target-directory": "t",
               "no-target-directory": "T", "suffix": "S", "update": "u", "backup": None, "exchange": None,
               "strip-trailing-slashes": None, "no-copy": None},
    ),
    "chmod": _opts(
        longs={"recursive": "R", "changes": "c", "silent": "f", "quiet": "f", "verbose": "v",
               "no-preserve-root": None, "preserve-root": None, "help": None, "version": None},
        long_values=("reference",),
    ),
    "git": _opts(
        values="Cco",
        longs={"force": "f", "force-with-lease": None, "force-if-includes": None, "delete": "d",
               "dry-run": "n", "set-upstream": "u", "verbose": "v", "quiet": "q", "all": None, "tags": None,
               "mirror": None, "follow-tags": None, "no-verify": None, "atomic": None, "prune": None,
               "push-option": "o"},
        long_values=("git-dir", "work-tree", "namespace", "repo"),
    ),
    "curl": _opts(
        values="odHXuAeFTxmwbcKrCEDUQPYyz",
        longs={"output": "o", "remote-name": "O", "silent": "s", "show-error": "S", "location": "L", "fail": "f",
               "insecure": "k", "data": "d", "header": "H", "request": "X", "user": "u", "user-agent": "A",
               "referer": "e", "form": "F", "upload-file": "T", "proxy": "x", "max-time": "m",
               "write-out": "w", "cookie": "b", "cookie-jar": "c", "config": "K", "range": "r",
               "continue-at": "C", "cert": "E", "dump-header": "D", "verbose": "v", "include": "i",
               "head": "I", "compressed": None, "create-dirs": None, "fail-with-body": None},
        long_values=("data-binary", "data-raw", "data-urlencode", "url", "output-dir", "proto", "retry",
                     "connect-timeout", "json"),
    ),
    "wget": _opts(
        values="OoaPUtTeiBwQlARDIX",
        longs={"output-document": "O", "output-file": "o", "append-output": "a", "quiet": "q",
               "directory-prefix": "P", "user-agent": "U", "tries": "t", "timeout": "T", "continue": "c",
               "recursive": "r", "level": "l", "input-file": "i", "no-verbose": None,
               "no-check-certificate": None},
    ),
    "find": _Opts(single_dash=True),
}
for _name in ("chown", "chgrp"):
    _SPECS[_name] = _opts(
        longs={"recursive": "R", "changes": "c", "silent": "f", "quiet": "f", "verbose": "v",
               "no-dereference": "h", "dereference": None, "no-preserve-root": None, "preserve-root": None},
        long_values=("from", "reference"),
    )

# --------------------------------------------------------------------------------------------------------------
# Wrappers: programs that run another command (or shell code) given in their arguments.
# A handler gets the words after the wrapper's name and returns actions:
#   ("argv", start, end)  the words[start:end] are a command line (argv) it runs
#   ("text", code[, k])   it runs this text as shell code (in a new shell whose `$@` are words[k:], given k)
#   ("stdin", k)          it is a shell reading its script from standard input (`$@`: words[k:]; None: this shell's)
#   ("script", k)         it runs the script file words[k]
# --------------------------------------------------------------------------------------------------------------

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "lksh", "fish"})
_SHELL_CODE_RUNNERS = frozenset({"eval", "source", "."})  # run shell code they are fed, like a shell does
_CODE_RUNNERS = _SHELLS | _SHELL_CODE_RUNNERS

_Action = tuple
_Handler = Any  # Callable[[Sequence[str]], list[_Action]]


def _argv_after(words: Sequence[str], j: int) -> list[_Action]:
    n = len(words)
    while j < n and _ASSIGN_RE.match(words[j]):  # `sudo FOO=1 rm`, `env A=1 B=2 rm`
        j += 1
    return [("argv", j, n)] if j < n else []


def _simple_wrapper(opts: _Opts, skip_operands: int = 0, stop_on: str = "") -> _Handler:
    def handle(words: Sequence[str]) -> list[_Action]:
        j, seen = _getopt(words, 0, opts)
        if stop_on and any(k in seen for k in stop_on):
            return []
        return _argv_after(words, j + skip_operands) if j + skip_operands < len(words) else []

    return handle


# Script paths that are the shell's own standard input (`curl x | bash /dev/stdin`).
_STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


def _shell_handler(words: Sequence[str]) -> list[_Action]:
    j, seen = _getopt(words, 0, _SHELL_OPTS)
    if "c" in seen:  # `bash -c CODE NAME ARGS...`: ARGS are the code's `$1`, `$@`...
        return [("text", words[j], j + 2)] if j < len(words) else []
    if "s" in seen:  # `sh -s ARGS...`: reads its script from standard input, ARGS are its `$@`
        return [("stdin", j)]
    if j >= len(words) or words[j] in _STDIN_PATHS:
        return [("stdin", j + 1)]
    return [("script", j)]  # runs a script file


def _source_handler(words: Sequence[str]) -> list[_Action]:
    """`source FILE` / `. FILE`: runs the file's code in this shell; `/dev/stdin` is the shell's input."""
    start = 1 if words and words[0] == "--" else 0
    if start >= len(words):
        return []
    return [("stdin", None)] if words[start] in _STDIN_PATHS else [("script", start)]


def _eval_handler(words: Sequence[str]) -> list[_Action]:
    start = 1 if words and words[0] == "--" else 0
    return [("text", " ".join(words[start:]))] if len(words) > start else []


def _trap_handler(words: Sequence[str]) -> list[_Action]:
    if not words or words[0].startswith("-"):
        return []
    return [("text", words[0])]


def _env_handler(words: Sequence[str]) -> list[_Action]:
    j, seen = _getopt(words, 0, _ENV_OPTS)
    split = seen.get("S")
    if split:
        rest = " ".join(shlex.quote(w) for w in words[j:])
        return [("text", split + (" " + rest if rest else ""))]
    return _argv_after(words, j)


def _su_handler(words: Sequence[str]) -> list[_Action]:
    parsed = _normalise("su", tuple(words))
    code = [v for k, v in parsed.values if k == "c"]
    if code:
        return [("text", code[0])]
    if "u" in parsed.flags and "--" in words:  # runuser -u USER -- COMMAND...
        return _argv_after(words, list(words).index("--") + 1)
    return []


def _find_handler(words: Sequence[str]) -> list[_Action]:
    actions: list[_Action] = []
    i, n = 0, len(words)
    while i < n:
        if words[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < n and words[end] not in (";", "+"):
                end += 1
            actions.append(("argv", i + 1, end))
            i = end
        i += 1
    return actions


def _watch_handler(words: Sequence[str]) -> list[_Action]:
    j, seen = _getopt(words, 0, _WATCH_OPTS)
    if j >= len(words):
        return []
    if "x" in seen:
        return [("argv", j, len(words))]
    return [("text", " ".join(words[j:]))]


def _ssh_handler(words: Sequence[str]) -> list[_Action]:
    j, _ = _getopt(words, 0, _SSH_OPTS)
    return [("text", " ".join(words[j + 1:]))] if j + 1 < len(words) else []


_SHELL_OPTS = _opts(values="oO", plus=True, longs={"login": "l"}, long_values=("rcfile", "init-file"))
_ENV_OPTS = _opts(
    values="uCSP",
    longs={"unset": "u", "chdir": "C", "split-string": "S", "ignore-environment": "i", "null": "0", "debug": "v"},
    dash_is_option=True,
)
_WATCH_OPTS = _opts(values="nq", longs={"interval": "n", "exec": "x", "differences": None, "no-title": "t"})
_SSH_OPTS = _opts(values="BbcDEeFIiJLlmOopQRSWw")
_SPECS["su"] = _opts(
    values="cgGswu",
    longs={"command": "c", "session-command": "c", "shell": "s", "group": "g", "supp-group": "G", "login": "l",
           "preserve-environment": "m", "whitelist-environment": "w", "pty": "P", "user": "u"},
)

_WRAPPERS: dict[str, _Handler] = {
    "sudo": _simple_wrapper(
        _opts(
            values="ugChDprtTUR",
            longs={"user": "u", "group": "g", "host": "h", "close-from": "C", "chdir": "D", "prompt": "p",
                   "role": "r", "type": "t", "command-timeout": "T", "other-user": "U", "chroot": "R",
                   "login": "i", "shell": "s", "edit": "e", "list": "l", "non-interactive": "n", "stdin": "S",
                   "background": "b", "validate": "v", "version": "V", "reset-timestamp": "k",
                   "remove-timestamp": "K", "askpass": "A", "preserve-groups": "P", "set-home": "H",
                   "preserve-env": None, "help": None},
        ),
        stop_on="elVK",
    ),
    "doas": _simple_wrapper(_opts(values="uC")),
    "pkexec": _simple_wrapper(_opts(long_values=("user",))),
    "env": _env_handler,
    "nohup": _simple_wrapper(_GENERIC),
    "timeout": _simple_wrapper(
        _opts(values="sk", longs={"signal": "s", "kill-after": "k", "verbose": "v", "preserve-status": None,
                                  "foreground": None}),
        skip_operands=1,
    ),
    "nice": _simple_wrapper(_opts(values="n", longs={"adjustment": "n"})),
    "ionice": _simple_wrapper(_opts(values="cnpPu", longs={"class": "c", "classdata": "n"}), stop_on="pPu"),
    "stdbuf": _simple_wrapper(_opts(values="ioe", longs={"input": "i", "output": "o", "error": "e"})),
    "time": _simple_wrapper(
        _opts(values="fo", longs={"format": "f", "output": "o", "append": "a", "verbose": "v", "portability": "p"})
    ),
    "command": _simple_wrapper(_GENERIC, stop_on="vV"),
    "builtin": _simple_wrapper(_GENERIC),
    "exec": _simple_wrapper(_opts(values="a")),
    "setsid": _simple_wrapper(_opts(longs={"ctty": "c", "fork": "f", "wait": "w"})),
    "unbuffer": _simple_wrapper(_GENERIC),
    "chroot": _simple_wrapper(_opts(long_values=("userspec", "groups")), skip_operands=1),
    "busybox": _simple_wrapper(_GENERIC),
    "toybox": _simple_wrapper(_GENERIC),
    "xargs": _simple_wrapper(
        _opts(
            values="adEILnPsJRS",
            optional="eil",
            longs={"arg-file": "a", "delimiter": "d", "eof": "e", "replace": "i", "max-lines": "l",
                   "max-args": "n", "max-procs": "P", "max-chars": "s", "null": "0", "no-run-if-empty": "r",
                   "verbose": "t", "interactive": "p", "exit": "x", "open-tty": "o", "show-limits": None},
            long_values=("process-slot-var",),
        )
    ),
    "eval": _eval_handler,
    "trap": _trap_handler,
    "su": _su_handler,
    "runuser": _su_handler,
    "find": _find_handler,
    "watch": _watch_handler,
    "ssh": _ssh_handler,
}
for _name in _SHELLS:
    _WRAPPERS[_name] = _shell_handler
_WRAPPERS["source"] = _WRAPPERS["."] = _source_handler


# --------------------------------------------------------------------------------------------------------------
# Analysis: every program a command line runs (an "invocation"), and which feeds which.
# --------------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Inv:
    program: str  # basename of the program word (`/usr/bin/rm` -> `rm`)
    args: tuple[str, ...]
    words: Sequence[str]  # the command from its program on
    dyn: Sequence[_Dyn]  # per word: None when known, else what it is sure to end with (see `_expand_word`)
    leaf: bool = True  # not a wrapper that handed over to another command
    stdin_shell: bool = False  # a shell that reads its script from standard input
    # The program's name is only known at run time (`$CMD`, `$(which rm)`, `r$()m`): what it is sure to end
    # with ("" when nothing is known). None when the name is known (also `$DIR/rm`: only the folder is unknown).
    unknown: str | None = None
    opaque: bool = False  # it runs shell code only known at run time (`eval "$X"`, `bash -c "$(cat x)"`)
    guessed: bool = False  # seen only by guessing that a program only known at run time is a shell
    fed: bool = False  # a stdin shell whose input has been accounted for (a pipe, a here-document, `< file`)
    expanded: bool = False  # a call of a function or alias defined in the line, whose body was followed too
    script_args: tuple[tuple[str, _Dyn], ...] | None = None  # a stdin shell's `$@` (`sh -s -rf x`), when given

    @property
    def dynamic(self) -> bool:
        """The program word is only known at run time (`$CMD`, `$(which rm)`)."""
        return self.unknown is not None

    @property
    def uncertain(self) -> bool:
        """What it runs rests on something only known at run time: a match with it is a fail-closed one."""
        return self.unknown is not None or self.opaque or self.guessed

    @property
    def display(self) -> str:
        """The command from its program on, normalised, for messages (computed only when a message needs it)."""
        return " ".join(_quote(w, d) for w, d in zip(self.words, self.dyn))

    def normalised(self) -> _Args:
        return _normalise(self.program, self.args)


@dataclass(frozen=True, slots=True)
class _Analysis:
    invs: tuple[_Inv, ...]
    feeds: Mapping[int, frozenset[int]]  # invocation index -> indexes it feeds, directly or not
    error: str | None = None  # the command line itself could not be parsed
    nested_errors: tuple[str, ...] = ()  # shell code inside it (`bash -c '...'`) could not be parsed
    uncertain: bool = False  # some invocation is only known at run time (see `_Inv.uncertain`)


_SAFE_WORD_RE = re.compile(r"[\w@%+=:,./{}-]+")


def _quote(text: str, dynamic: _Dyn = None) -> str:
    if _SAFE_WORD_RE.fullmatch(text):
        return text
    if dynamic is not None:
        return '"' + text.replace('"', '\\"') + '"'
    return shlex.quote(text)


def _basename(program: str) -> str:
    base = program.rstrip("/").rsplit("/", 1)[-1]
    return base or program


# What `echo` and `printf` print: the text a pipe carries into a shell (`printf '\x72m -rf /' | sh`).

_ECHO_OPTIONS_RE = re.compile(r"-[neE]+")
_PRINTF_WIDTH_LIMIT = 4096
_OCTAL3_RE = re.compile("[0-7]{0,3}")
_PRINTF_ESCAPE_RE = re.compile(r"\\(?:[0-7]{1,3}|x[0-9A-Fa-f]{1,2}|u[0-9A-Fa-f]{1,4}|U[0-9A-Fa-f]{1,8}|.)", re.S)
_PRINTF_SPEC_RE = re.compile(r"%([-+ #0]*)(\d*|\*)(?:\.(\d*|\*))?([a-zA-Z%])")
_PRINTF_ESCAPES = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                   "v": "\v", "\\": "\\", '"': '"', "'": "'", "?": "?"}


def _escapes(text: str, echo: bool) -> tuple[str, bool]:
    r"""Backslash escapes as `echo -e`/`%b` (echo=True: octal as `\0NNN`) or a printf format (`\NNN`) read them.
    Returns the text and whether `\c` ended all output there."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        e = text[i + 1]
        i += 2
        if e in _PRINTF_ESCAPES:
            out.append(_PRINTF_ESCAPES[e])
        elif e == "c":
            return "".join(out), True
        elif e in "01234567" and (e == "0" or not echo):
            digits = (_OCTAL3_RE if echo else _OCTAL_RE).match(text, i)
            assert digits is not None  # the patterns also match the empty string
            value = (digits.group(0) or "0") if echo else e + digits.group(0)
            out.append(chr(int(value, 8) & 0xFF))
            i = digits.end()
        elif e in "xuU" and (m := _HEX_RES[e].match(text, i)):
            out.append(chr(min(int(m.group(0), 16), 0x10FFFF)))
            i = m.end()
        else:
            out.append("\\" + e)
    return "".join(out), False


def _echo_output(args: Sequence[str]) -> tuple[str, str]:
    """What `echo ARGS` prints: as bash's echo does (backslashes as written) and as an echo that reads escapes
    does (`echo -e`, dash's echo). A shell fed either may run something different, so both are read."""
    words = list(args)
    newline = True
    while words and _ECHO_OPTIONS_RE.fullmatch(words[0]):
        newline = newline and "n" not in words.pop(0)
    text = " ".join(words)
    end = "\n" if newline else ""
    cooked, stopped = _escapes(text, echo=True)
    return text + end, cooked + ("" if stopped else end)


def _printf_number(arg: str, conversion: str) -> int | float | None:
    text = arg.strip()
    if not text:
        return 0
    if text[0] in "'\"":
        return ord(text[1]) if len(text) > 1 else 0
    try:
        if conversion in "eEfFgG":
            return float(text)
        if re.fullmatch(r"[+-]?0[0-7]+", text):
            return int(text, 8)
        return int(text, 0)
    except ValueError:
        return None


def _printf_output(args: Sequence[str]) -> str | None:
    """What `printf FORMAT ARGS` prints (the format is reused while arguments remain), or None when it uses
    a conversion not followed here (the text it prints is then unknown)."""
    words = list(args)
    if words and words[0].startswith("-v"):
        return ""  # `printf -v name ...` prints into a variable
    if words and words[0] == "--":
        words.pop(0)
    if not words:
        return ""
    fmt, rest = words[0], words[1:]
    out: list[str] = []
    while True:
        used = False
        i = 0
        while i < len(fmt):
            c = fmt[i]
            if c == "\\":
                m = _PRINTF_ESCAPE_RE.match(fmt, i)
                end = m.end() if m else i + 1
                text, stopped = _escapes(fmt[i:end], echo=False)
                out.append(text)
                if stopped:
                    return "".join(out)
                i = end
                continue
            if c != "%":
                out.append(c)
                i += 1
                continue
            m = _PRINTF_SPEC_RE.match(fmt, i)
            if m is None:
                return None
            flags, width, precision, conversion = m.groups()
            i = m.end()
            if conversion == "%":
                out.append("%")
                continue
            if "*" in (width, precision) or max(int(width or 0), int(precision or 0)) > _PRINTF_WIDTH_LIMIT:
                return None  # a width from the arguments, or one meant to flood: what it prints is not followed
            arg = rest.pop(0) if rest else ""
            used = True
            if conversion in "sbqc":
                if conversion == "b":
                    value, stopped = _escapes(arg, echo=True)
                    if stopped:
                        out.append(value)
                        return "".join(out)
                else:
                    value = {"s": arg, "q": shlex.quote(arg), "c": arg[:1]}[conversion]
                if precision is not None and conversion != "c":
                    value = value[: int(precision or 0)]
                if width:
                    value = value.ljust(int(width)) if "-" in flags else value.rjust(int(width))
                out.append(value)
            elif conversion in "diouxXeEfFgG":
                number = _printf_number(arg, conversion)
                if number is None:
                    return None
                spec = "%" + flags + width + ("." + precision if precision is not None else "")
                try:
                    out.append((spec + conversion) % number)
                except (TypeError, ValueError):
                    return None
            else:
                return None
        if not used or not rest:
            return "".join(out)


_POSITIONAL = ("@", "*", "#", "1", "2", "3", "4", "5", "6", "7", "8", "9")
_MAX_CALLS = 256  # calls of functions and aliases followed in one command line before giving up (fail closed)
_MAX_CODE = 1024  # pieces of shell code (`bash -c`, text piped into a shell...) followed in one line, likewise
_SILENT = frozenset({"true", "false", ":"})  # print nothing, so they do not change what a pipe carries
# Uses of positional parameters whose value is not followed (`${@:2}`, `${1:-x}`, `${10}`, `${#1}`, `${!1}`).
_HARD_POSITIONAL_RE = re.compile(r"\$\{[#!]?(?:[@*]|\d)")
_Env = dict  # variables by name; "@" holds the positional parameters as (text, tail) fields


def _bind_positional(env: _Env, fields: Sequence[tuple[str, _Dyn]] | None) -> None:
    """Set `$1`..`$9`, `$#`, `$*` and `$@` to `fields` (None: they are only known at run time)."""
    for key in _POSITIONAL:
        env.pop(key, None)
    if fields is None:
        return
    fields = tuple(fields)
    env["@"] = fields
    env["#"] = str(len(fields))
    if all(tail is None for _, tail in fields):
        env["*"] = " ".join(text for text, _ in fields)
    for k in range(9):
        if k >= len(fields):
            env[str(k + 1)] = ""  # unset: expands to nothing
        elif fields[k][1] is None:
            env[str(k + 1)] = fields[k][0]


def _word_text(word: _Word, env: Mapping[str, Any]) -> tuple[str, bool]:
    """A word expanded as one string (a here-document's text), and whether all of it is known."""
    fields = _expand_word(word, env, split=False)
    text, tail = fields[0] if fields else ("", None)
    return text, tail is None


def _hard_positional_use(script: list) -> bool:
    """Whether shell code uses the positional parameters in a form whose value is not followed (`${@:2}`)."""
    for pipeline in script:
        for stage in pipeline:
            if isinstance(stage, _Group):
                if _hard_positional_use(stage.body):
                    return True
                words = [stage.stdin_word] if stage.stdin_word is not None else []
            else:
                words = stage.words + ([stage.stdin_word] if stage.stdin_word is not None else [])
            for word in words:
                if any(p[0] == "D" and _HARD_POSITIONAL_RE.search(p[1]) for p in word.pieces):
                    return True
            if any(_hard_positional_use(sub) for sub in stage.subs):
                return True
    return False


class _Walker:
    """Turns a syntax tree into invocations, unwrapping wrappers and recording what feeds what."""

    def __init__(self) -> None:
        self.invs: list[_Inv] = []
        self.edges: dict[int, set[int]] = {}
        self.errors: list[str] = []
        self.guessing = 0  # > 0 while following a guess (a program only known at run time taken for a shell)
        self.functions: dict[str, _Group] = {}  # defined so far in the line
        self.aliases: dict[str, str | None] = {}  # defined so far; None: the value is only known at run time
        self.active: list[tuple] = []  # functions and aliases being followed (so that recursion ends)
        self.calls = 0  # functions and aliases followed so far
        self.codes = 0  # pieces of shell code followed so far

    def link(self, sources: Iterable[int], targets: list[int]) -> None:
        if targets:
            for a in sources:
                self.edges.setdefault(a, set()).update(targets)

    def script(self, script: list, env: _Env, depth: int) -> list[int]:
        ids: list[int] = []
        for pipeline in script:
            ids += self.pipeline(pipeline, env, depth)
        return ids

    def pipeline(self, stages: list, env: _Env, depth: int) -> list[int]:
        groups: list[list[int]] = []
        for k, stage in enumerate(stages):
            ids = self.stage(stage, env, depth)
            if k:  # `echo 'rm -rf /' | sh`: what the stage before prints is the script of a shell reading stdin
                texts, known = self.output_of(stages[k - 1], groups[-1], env)
                ids += self.feed(ids, texts, known, "text piped into a shell", env, depth)
            groups.append(ids)
        for k in range(1, len(groups)):
            for earlier in groups[:k]:
                self.link(earlier, groups[k])
        return [x for g in groups for x in g]

    def output_of(self, stage: _Simple | _Group, ids: list[int], env: _Env) -> tuple[list[str] | None, bool]:
        """What a pipeline stage prints when only `echo`, `printf` or `cat` of a here-document print in it: the
        text in each way it may be read (bash's `echo 'a\\tb'` prints the backslash, dash's a tab), and whether all
        of it is known before it runs. The texts are None when anything else prints (`base64 -d`, `curl`)."""
        plain: list[str] = []
        escaped: list[str] = []
        known = True
        for x in ids:
            inv = self.invs[x]
            if not inv.leaf or inv.expanded or (inv.program in _SILENT and not inv.uncertain):
                continue  # a wrapper, or a function call whose body is among `ids`
            if inv.uncertain:
                return None, False
            if inv.program == "echo":
                text, cooked = _echo_output(inv.args)
            elif inv.program == "printf" and (printed := _printf_output(inv.args)) is not None:
                text = cooked = printed
            elif (
                inv.program == "cat" and isinstance(stage, _Simple) and stage.stdin_word is not None
                and not stage.stdin_file and not inv.normalised().operands
            ):
                text, sure = _word_text(stage.stdin_word, env)
                cooked = text
                known = known and sure
            else:
                return None, False
            known = known and all(d is None for d in inv.dyn[1:])
            plain.append(text)
            escaped.append(cooked)
        texts = ["".join(plain)]
        if "".join(escaped) != texts[0]:
            texts.append("".join(escaped))
        return texts, known

    def feed(
        self, ids: list[int], texts: list[str] | None, known: bool, what: str, env: _Env, depth: int
    ) -> list[int]:
        """The shells among `ids` that read their script from standard input (and have not been given one yet)
        run `texts`. Unknown texts (None) make a shell's code only known at run time: it may run anything."""
        shells = [x for x in ids if self.invs[x].stdin_shell and not self.invs[x].fed]
        if not shells:
            return []
        for x in shells:
            inv = self.invs[x]
            inv.fed = True
            # A program only known at run time is only guessed to be a shell: `ls | "$PAGER"` is not feared.
            if (texts is None and not inv.dynamic) or (texts is not None and not known):
                inv.opaque = inv.leaf = True
        if texts is None:
            return []
        guessed = all(self.invs[x].dynamic for x in shells)
        self.guessing += guessed
        try:
            ran: list[int] = []
            for positional in dict.fromkeys(self.invs[x].script_args for x in shells):
                for text in texts:
                    ran += self.code(text, what, env, depth, positional=positional)
            return ran
        finally:
            self.guessing -= guessed

    def redirected(self, node: _Simple | _Group, ids: list[int], env: _Env, depth: int) -> list[int]:
        """What a command's or group's redirections put on the standard input of the shells in it."""
        if node.stdin_file:  # `bash -s < script.sh`: a script nobody here can read
            return self.feed(ids, None, False, "", env, depth)
        if node.stdin_word is not None:
            text, known = _word_text(node.stdin_word, env)
            return self.feed(ids, [text], known, "here-document fed to a shell", env, depth)
        return []

    def stage(self, stage: _Simple | _Group, env: _Env, depth: int) -> list[int]:
        pre: list[int] = []
        for sub in stage.subs:  # substitutions run first, and their output feeds the command
            pre += self.script(sub, env, depth + 1)
        if isinstance(stage, _Group):
            if stage.name is not None:  # a function definition: remembered for its calls, and read as written
                self.functions[stage.name] = stage
                own = dict(env)
                _bind_positional(own, None)
                ids = self.body(stage, own, depth)
            else:
                ids = self.body(stage, env, depth)
        else:
            ids = self.simple(stage, env, depth)
            ids += self.redirected(stage, ids, env, depth)
        self.link(pre, ids)
        return pre + ids

    def body(self, group: _Group, env: _Env, depth: int) -> list[int]:
        ids = self.script(group.body, env, depth)
        return ids + self.redirected(group, ids, env, depth)

    def simple(self, cmd: _Simple, env: _Env, depth: int) -> list[int]:
        words: list[str] = []
        dyn: list[_Dyn] = []
        assigning = True
        assignments: list[tuple[str, str, bool]] = []
        for word in cmd.words:
            first = word.pieces[0]
            if assigning and first[0] == "L" and not first[2] and _ASSIGN_RE.match(first[1]):
                fields = _expand_word(word, env, split=False)
                text, tail = fields[0] if fields else ("", None)
                name = text.split("=", 1)[0].rstrip("+")
                assignments.append((name, text.split("=", 1)[1], tail is not None))
                continue
            assigning = False
            for text, is_dyn in _expand_word(word, env):
                words.append(text)
                dyn.append(is_dyn)
        if not words:  # `x=rm`: remembered, so that `$x -rf /` later is seen as rm
            for name, value, is_dyn in assignments:
                if is_dyn:
                    env.pop(name, None)
                else:
                    env[name] = value
            return []
        if words[0] in ("export", "declare", "typeset", "local", "readonly"):
            for text, tail in zip(words[1:], dyn[1:]):
                if _ASSIGN_RE.match(text):
                    name, value = text.split("=", 1)
                    if tail is not None:
                        env.pop(name.rstrip("+"), None)
                    else:
                        env[name.rstrip("+")] = value
        elif words[0] in ("set", "shift") and dyn[0] is None:
            _reposition(words, dyn, env)
        inner_env = env
        if assignments:  # `X=rm bash -c '$X -rf /'`: the prefix is in the command's environment
            inner_env = dict(env)
            inner_env.update((name, value) for name, value, is_dyn in assignments if not is_dyn)
        return self.argv(words, dyn, inner_env, depth)

    def argv(self, words: Sequence[str], dyn: Sequence[_Dyn], env: _Env, depth: int) -> list[int]:
        if not words:
            return []
        program, tail = words[0], dyn[0]
        if tail is not None and "/" in tail:  # `$DIR/rm`: only the folder is unknown, the program is not
            inv = _Inv(_basename(tail), tuple(words[1:]), words, dyn, guessed=self.guessing > 0)
        else:
            inv = _Inv(_basename(program), tuple(words[1:]), words, dyn, unknown=tail, guessed=self.guessing > 0)
        index = len(self.invs)
        self.invs.append(inv)
        ids = [index]
        rest, rest_dyn = words[1:], dyn[1:]
        if inv.dynamic:
            # The program could be anything, a shell among others: follow what it would run as one (`$SHELL -c
            # 'rm -rf /'`, `echo 'rm -rf /' | $SHELL`), as a guess whose parse errors do not count.
            actions, guess = _shell_handler(rest), 1
        else:
            if inv.program == "alias":
                self.define_aliases(rest, rest_dyn)
            handler = _WRAPPERS.get(inv.program)
            actions, guess = (handler(rest) if handler else []), 0
        self.guessing += guess
        try:
            for action in actions:
                if action[0] == "argv":
                    ids += self.argv(rest[action[1]:action[2]], rest_dyn[action[1]:action[2]], env, depth)
                elif action[0] == "text":
                    code = action[1]
                    if not guess and any(d is not None and w in code for w, d in zip(rest, rest_dyn)):
                        inv.opaque = True  # `eval "$(echo rm -rf /)"`: the code itself is only known at run time
                    positional = None
                    if len(action) > 2:  # a new shell: `bash -c 'rm "$@"' _ -rf /` has its own `$@`
                        positional = tuple(zip(rest[action[2]:], rest_dyn[action[2]:]))
                    ids += self.code(code, f"shell code given to `{inv.program}`", env, depth, positional=positional)
                elif action[0] == "stdin":
                    inv.stdin_shell = True
                    if action[1] is not None:
                        inv.script_args = tuple(zip(rest[action[1]:], rest_dyn[action[1]:]))
                elif not guess and rest_dyn[action[1]] is not None and rest[action[1]].startswith(("<(", ">(")):
                    inv.opaque = True  # `bash <(base64 -d x)`: the script is what another command prints
        finally:
            self.guessing -= guess
        # A command whose program or code is only known at run time stays a command of its own (a leaf), so that
        # an allow list never passes it on the strength of what a guess found inside it.
        inv.leaf = len(ids) == 1 or inv.dynamic or inv.opaque
        if not inv.dynamic and (program in self.functions or program in self.aliases):
            # A call of a function or alias defined earlier in the line stays a command of its own too (the
            # definition may not have run, and then a program of that name runs), and runs its body.
            ids += self.expand(inv, program, rest, rest_dyn, env, depth)
        return ids

    def define_aliases(self, words: Sequence[str], dyn: Sequence[_Dyn]) -> None:
        """`alias r='rm -rf'`: remembered, so that a later `r build` is read as `rm -rf build`."""
        for word, tail in zip(words, dyn):
            name, eq, value = word.partition("=")
            if eq and name and not name.startswith("-") and "$" not in name and "`" not in name:
                self.aliases[name] = value if tail is None else None

    def expand(
        self, inv: _Inv, name: str, rest: Sequence[str], rest_dyn: Sequence[_Dyn], env: _Env, depth: int
    ) -> list[int]:
        """Follow a call of a function (its body, with `$1`, `$@`... bound to the call's arguments) or an alias
        (its text, then the call's arguments) defined earlier in the line. Recursion with the same arguments
        is not followed again; past a budget of calls the line fails closed."""
        fields = tuple(zip(rest, rest_dyn))
        alias_key, function_key = ("alias", name), ("function", name, fields)
        todo = [
            key for key, table in ((alias_key, self.aliases), (function_key, self.functions))
            if name in table and key not in self.active
        ]
        if not todo:
            return []
        self.calls += 1
        if self.calls > _MAX_CALLS or depth >= _MAX_DEPTH:
            if not self.guessing:
                self.errors.append(f"`{name}`: too many calls of functions or aliases to follow")
            return []
        ids: list[int] = []
        for key in todo:
            self.active.append(key)
            try:
                if key is alias_key:
                    value = self.aliases[name]
                    if value is None:  # `alias r="$X"`: what `r` runs is only known at run time
                        inv.opaque = True
                        continue
                    text = " ".join([value, *(_quote(w, d) for w, d in fields)])
                    ids += self.code(text, f"alias `{name}`", env, depth, shared=True)
                else:
                    group = self.functions[name]
                    if _hard_positional_use(group.body):  # `${@:2}`, `${1:-x}`: arguments not followed
                        inv.opaque = True
                    saved = {k: env[k] for k in _POSITIONAL if k in env}
                    _bind_positional(env, fields)
                    try:
                        ids += self.body(group, env, depth + 1)
                    finally:
                        _bind_positional(env, None)
                        env.update(saved)
                inv.expanded = True
            finally:
                self.active.pop()
        return ids

    def code(
        self, text: str, what: str, env: _Env, depth: int,
        shared: bool = False, positional: Sequence[tuple[str, _Dyn]] | None = None,
    ) -> list[int]:
        """Shell code inside a command (`bash -c`, `eval`, a here-document fed to `sh`): parse and walk it.

        `shared`: it runs in this shell (an alias), so its assignments last; `positional`: it runs in a new
        shell with these arguments as `$@`."""
        if depth >= _MAX_DEPTH:
            if not self.guessing:
                self.errors.append(f"{what} is nested too deeply to follow")
            return []
        self.codes += 1
        if self.codes > _MAX_CODE:
            if self.codes == _MAX_CODE + 1:
                self.errors.append(f"{what}: too much shell code inside shell code to follow")
            return []
        try:
            script = _Parser(text, depth + 1).parse_all()
            own = env if shared else dict(env)
            if positional is not None:
                _bind_positional(own, positional)
            return self.script(script, own, depth + 1)
        except (_ParseError, RecursionError) as exc:
            if not self.guessing:  # a guess that is not shell code (`$PY -c 'print(1)'`) was a wrong guess
                message = "nested too deeply to follow" if isinstance(exc, RecursionError) else str(exc)
                self.errors.append(f"{what}: {message}")
            return []


def _reposition(words: Sequence[str], dyn: Sequence[_Dyn], env: _Env) -> None:
    """`set -- a b` and `shift [n]` change the positional parameters that later `$1`, `$@` expand to."""
    if words[0] == "shift":
        current = env.get("@")
        if not isinstance(current, tuple):
            return  # not known before: not known after
        count = words[1] if len(words) > 1 else "1"
        if len(words) > 1 and (dyn[1] is not None or not count.isdigit()):
            _bind_positional(env, None)  # `shift $n`: what is left is only known at run time
        elif int(count) <= len(current):
            _bind_positional(env, current[int(count):])
        return
    i = 1
    while i < len(words):
        word = words[i]
        if word == "--" or (word == "-" and dyn[i] is None):
            i += 1
            break
        if dyn[i] is None and len(word) > 1 and word[0] in "-+":
            i += 2 if word[1:] == "o" else 1  # `set -o pipefail`, `set -eu`
            continue
        break
    else:
        return  # options only (`set -e`): the positional parameters stay
    _bind_positional(env, tuple(zip(words[i:], dyn[i:])))


def _closure(edges: Mapping[int, set[int]]) -> dict[int, frozenset[int]]:
    out: dict[int, frozenset[int]] = {}
    for start in edges:
        seen: set[int] = set()
        stack = list(edges[start])
        while stack:
            x = stack.pop()
            if x not in seen:
                seen.add(x)
                stack.extend(edges.get(x, ()))
        out[start] = frozenset(seen)
    return out


@lru_cache(maxsize=4096)
def _analyse(command: str | tuple[str, ...]) -> _Analysis:
    """Cached: the same command is examined against every rule of a policy and every `never_ran` of a case."""
    walker = _Walker()
    try:
        if isinstance(command, str):
            script = _Parser(command).parse_all()
            walker.script(script, {}, 0)
        elif len(command) == 1 and re.search(r"\s|[;&|<>$`]", command[0]):
            # an argv of one string with shell syntax in it (`["ls -la | wc"]`): tools run such strings in a shell
            walker.script(_Parser(command[0]).parse_all(), {}, 0)
        else:
            walker.argv(list(command), [None] * len(command), {}, 0)
    except _ParseError as exc:
        return _Analysis((), {}, error=str(exc))
    except RecursionError:
        return _Analysis((), {}, error="nested too deeply to follow")
    return _Analysis(
        tuple(walker.invs), _closure(walker.edges), nested_errors=tuple(walker.errors),
        uncertain=any(inv.uncertain for inv in walker.invs),
    )


# --------------------------------------------------------------------------------------------------------------
# Patterns and matching.
# --------------------------------------------------------------------------------------------------------------

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class _PatternStage:
    program: str  # basename, may be a glob
    glob: bool
    args: tuple[str, ...]
    display: str

    def matches_program(self, inv: _Inv) -> bool:
        """The invocation runs this program, or may: a name only known at run time may be any name that ends
        with what is known of it (`$(echo rm)`, `r$()m`, `${X:-rm}`; "could not tell" reads as "may have")."""
        if inv.unknown is not None:
            return self.glob or self.program.endswith(inv.unknown)
        return fnmatchcase(inv.program, self.program) if self.glob else inv.program == self.program

    def runs_code(self, inv: _Inv) -> bool:
        """The invocation is (or may be) a shell or `eval`: it runs the text it is fed."""
        if inv.unknown is not None:
            return any(name.endswith(inv.unknown) for name in _CODE_RUNNERS)
        return inv.program in _CODE_RUNNERS

    def missing(self, inv: _Inv) -> list[str]:
        """What the invocation lacks of this stage's arguments (empty: it matches)."""
        if not self.args:
            return []
        need = _normalise(inv.program if self.glob else self.program, self.args)
        # A program only known at run time is taken for this one: its options are read the way this one's are.
        have = _normalise(self.program, inv.args) if inv.dynamic and not self.glob else inv.normalised()
        with_value = {key for key, _ in need.values}  # `-o FILE` is checked with its value below
        lacking = [_key_text(key) for key in sorted(need.flags - with_value) if key not in have.flags]
        lacking += [_key_text(key, value) for key, value in sorted(need.values) if (key, value) not in have.values]
        lacking += [
            operand for operand in need.operands
            if operand not in have.operands and not any(operand == v for _, v in have.values)
        ]
        return lacking

    def shellish(self) -> bool:
        """A bare shell on the right of a pattern pipe means "into a shell": `curl | sh` also catches `curl x | bash`
        and `eval "$(curl x)"`, which run the downloaded text just the same."""
        return not self.args and any(fnmatchcase(s, self.program) for s in _SHELLS)


@lru_cache(maxsize=1024)
def _compile(text: str) -> tuple[_PatternStage, ...]:
    if not isinstance(text, str):
        raise TypeError(f"a command pattern must be a string, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("empty command pattern: give a program and its arguments, e.g. 'rm -rf' or 'curl | sh'")
    try:
        script = _Parser(text).parse_all()
    except _ParseError as exc:
        raise ValueError(f"cannot parse command pattern {text!r}: {exc}") from None
    if len(script) != 1:
        raise ValueError(
            f"command pattern {text!r} has several commands; a pattern is one command ('rm -rf') "
            "or one pipeline ('curl | sh')"
        )
    stages: list[_PatternStage] = []
    for stage in script[0]:
        if isinstance(stage, _Group) or stage.stdin_word is not None:
            raise ValueError(
                f"command pattern {text!r} has a group, here-document or compound command; "
                "a pattern is plain words, optionally joined by `|`"
            )
        if stage.subs or any(p[0] == "D" for w in stage.words for p in w.pieces):
            raise ValueError(f"command pattern {text!r} has a substitution (`$(...)`, backticks); use plain words")
        words = [t for w in stage.words for t, _ in _expand_word(w, {})]
        if words and _ASSIGN_RE.match(words[0]):
            raise ValueError(
                f"command pattern {text!r} starts with a variable assignment; start it with the program "
                "(assignments before a command are seen through anyway)"
            )
        if not words:
            raise ValueError(f"command pattern {text!r} has an empty stage (or only a redirection)")
        if stage.redirections:
            raise ValueError(f"command pattern {text!r} has a redirection; a pattern is words joined by `|`")
        program = _basename(words[0])
        stages.append(
            _PatternStage(program, bool(_GLOB_CHARS.search(program)), tuple(words[1:]), " ".join(map(_quote, words)))
        )
    return tuple(stages)


@dataclass(frozen=True)
class CommandPattern:
    """A forbidden command: shell words (`rm -rf /`, `mkfs*`) or a pipeline of them (`curl | sh`).

    - The program is compared by basename (`/bin/rm` is `rm`) and may be a glob (`mkfs*`).
    - Every argument must be present, in any order. Options are compared by meaning: clusters are split
      (`-rf` == `-r -f` == `-fr`), and for common programs long forms and case variants are known
      (`rm --recursive --force`, `rm -R`, `git push -f`, `curl --output X` == `-o X`). Other words are compared
      literally (`rm -rf /` does not match `rm -rf /tmp`).
    - `a | b` matches when a command matching `a` feeds a LATER command matching `b`: through pipes (also with
      stages between), or as a substitution in `b`'s arguments (`sh -c "$(curl x)"`, `bash <(curl x)`).
      A bare shell on the right (`sh`) stands for any shell and for `eval`/`source`.
    - Fail closed on what is only known at run time: a program word like `$(echo rm)`, `$X`, `r$()m` or
      `$(which rm)` counts as the pattern's program when the arguments match (`$X -rf /` runs `rm -rf /` as far as
      anyone can tell; `curl x | $SHELL` pipes into a shell), and shell code like `eval "$(echo ...)"` or
      `bash -c "$X"` counts as any command. Such matches say so in their reason and have `uncertain=True`.
      What is known of a name still counts (`$DIR/rm` is `rm`; `r$()m` cannot be `ls`), and a bare program
      pattern (`mkfs*`) is not matched by a program of which nothing is known (`"$EDITOR" notes.txt`).

    `CommandPattern(text)` and `CommandPattern.parse(text)` raise ValueError for an empty or malformed pattern.

    >>> CommandPattern.parse("rm -rf").text
    'rm -rf'
    """

    text: str
    _stages: tuple[_PatternStage, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_stages", _compile(self.text))

    @classmethod
    def parse(cls, text: str) -> CommandPattern:
        """Validate a pattern; ValueError names what is wrong with it."""
        return cls(text)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class CommandMatch:
    """Whether a command runs a pattern, and a reason a person reading a CI log can act on."""

    matched: bool
    pattern: str
    command: str
    reason: str
    unparsable: bool = False
    segment: str | None = None
    #: matched only because a program or shell code is only known at run time (`$(echo rm) -rf /`,
    #: `eval "$X"`): a deny rule counts it (fail closed), an allow rule must not.
    uncertain: bool = False


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REASON_LIMIT else text[: _REASON_LIMIT - 1] + "…"


def _command_text(command: str | Sequence[str]) -> str:
    return command if isinstance(command, str) else shlex.join(str(w) for w in command)


def _in_clause(segment: str, command_text: str) -> str:
    whole = " ".join(command_text.split())
    return "" if segment == whole else f" (in `{_shorten(command_text)}`)"


def match_command(pattern: str | CommandPattern, command: str | Sequence[str]) -> CommandMatch:
    """Does `command` (a shell string or an argv list) run `pattern`?

    >>> match_command("rm -rf", "cd /tmp && sudo /bin/rm -fr build").reason
    'runs `/bin/rm -fr build` (in `cd /tmp && sudo /bin/rm -fr build`)'
    >>> match_command("rm -rf", 'echo "rm -rf /"').matched
    False
    """
    text = pattern.text if isinstance(pattern, CommandPattern) else pattern
    stages = pattern._stages if isinstance(pattern, CommandPattern) else _compile(pattern)
    command_text = _command_text(command)
    if isinstance(command, CommandLines):
        results = [match_command(pattern, part) for part in command.parts]
        hit = next((result for result in results if result.matched), None)
        if hit is not None:
            return hit
        reasons = "; ".join(f"`{_shorten(r.command)}` {r.reason}" for r in results)
        return CommandMatch(False, text, command_text, f"of its {len(results)} commands: {reasons}")
    if isinstance(command, UnreadableCommand):
        return CommandMatch(
            True, text, command_text,
            f"could not be read (the command tool was given `{_shorten(command)}`, not a command string or an argv "
            "list); counted as a match (fail closed)",
            unparsable=True,
        )
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    analysis = _analyse(key)
    if analysis.error is not None:
        return CommandMatch(
            True, text, command_text,
            f"could not be parsed ({analysis.error}); counted as a match (fail closed)",
            unparsable=True,
        )
    found, opaque = _find(stages, analysis)
    if found is not None:
        invs = [analysis.invs[x] for x in found]
        segment = " | ".join(inv.display for inv in invs)
        if len(invs) == 1:
            reason = f"runs `{_shorten(segment)}`"
        else:
            reason = "runs " + " feeding ".join(f"`{_shorten(inv.display)}`" for inv in invs)
        reason += _in_clause(segment, command_text)
        if opaque:
            uncertainty: str | None = "the shell code it runs is only known at run time"
        else:
            uncertainty = next((_uncertainty(inv) for inv in invs if inv.dynamic or inv.guessed), None)
        if uncertainty:
            reason += f"; {uncertainty}: counted as a match (fail closed)"
        return CommandMatch(True, text, command_text, reason, segment=segment, uncertain=uncertainty is not None)
    if analysis.nested_errors:
        return CommandMatch(
            True, text, command_text,
            f"part of it could not be parsed ({analysis.nested_errors[0]}); counted as a match (fail closed)",
            unparsable=True,
        )
    return CommandMatch(False, text, command_text, _miss_reason(stages, analysis))


def _uncertainty(inv: _Inv) -> str:
    if inv.dynamic:
        return "its program is only known at run time"
    return "it runs there if a program only known at run time is a shell"


def _find(stages: tuple[_PatternStage, ...], analysis: _Analysis) -> tuple[list[int] | None, bool]:
    """Indexes of invocations that match the pattern's stages in order, each feeding the next (or None), and
    whether the match is shell code only known at run time standing in for the whole pattern.

    A match that rests on nothing unknown is preferred; then one that takes a program only known at run time
    for the pattern's; then any shell code only known at run time, which may run anything.
    """
    found = _chain(stages, analysis, certain=True)
    if found is not None or not analysis.uncertain:
        return found, False
    found = _chain(stages, analysis, certain=False)
    if found is not None:
        return found, False
    opaque = next(([x] for x, inv in enumerate(analysis.invs) if inv.opaque), None)
    return opaque, opaque is not None


def _chain(stages: tuple[_PatternStage, ...], analysis: _Analysis, certain: bool) -> list[int] | None:
    invs = analysis.invs
    hits: list[list[int]] = []
    for k, stage in enumerate(stages):
        shellish = k > 0 and stage.shellish()
        # A bare program name alone (`mkfs*`) is no evidence against `$EDITOR notes.txt`: a program of which
        # nothing is known matches it only inside a pipeline pattern, where what feeds what is the evidence.
        bare = len(stages) == 1 and not stage.args
        hits.append([
            x for x, inv in enumerate(invs)
            if not (certain and (inv.dynamic or inv.guessed))
            and not (bare and inv.unknown == "")
            and ((stage.matches_program(inv) and not stage.missing(inv)) or (shellish and stage.runs_code(inv)))
        ])
        if not hits[-1]:
            return None
    if len(stages) == 1:
        return [hits[0][0]]

    def chain(k: int, prev: int) -> list[int] | None:
        if k == len(stages):
            return []
        reach = analysis.feeds.get(prev, frozenset())
        for x in hits[k]:
            if x in reach:
                rest = chain(k + 1, x)
                if rest is not None:
                    return [x, *rest]
        return None

    for first in hits[0]:
        rest = chain(1, first)
        if rest is not None:
            return [first, *rest]
    return None


def _miss_reason(stages: tuple[_PatternStage, ...], analysis: _Analysis) -> str:
    leaves = [inv for inv in analysis.invs if inv.leaf]
    if not analysis.invs:
        return "runs no command"
    ran = ", ".join(f"`{_shorten(inv.display)}`" for inv in leaves[:5])
    if len(leaves) > 5:
        ran += f" and {len(leaves) - 5} more"
    if len(stages) == 1:
        stage = stages[0]
        for inv in analysis.invs:
            if stage.matches_program(inv):
                lacking = stage.missing(inv)
                return f"runs `{_shorten(inv.display)}`, which lacks {' '.join(lacking)}"
        return f"runs only {ran}"
    names = " to a later ".join(f"`{s.display}`" for s in stages)
    return f"nothing pipes {names}; runs {ran}"


def commands_in(command: str | Sequence[str]) -> list[str]:
    """The simple commands a command line runs (wrappers such as `sudo` and `bash -c` unwrapped), normalised.

    Commands inside substitutions come before the command they feed, as they run first.
    ValueError when the command cannot be parsed.

    >>> commands_in("cd /tmp && sudo bash -c 'rm -rf x; ls'")
    ['cd /tmp', 'rm -rf x', 'ls']
    """
    if isinstance(command, CommandLines):
        return [found for part in command.parts for found in commands_in(part)]
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    analysis = _analyse(key)
    if analysis.error is not None:
        raise ValueError(f"cannot parse command {_shorten(_command_text(command))!r}: {analysis.error}")
    return [inv.display for inv in analysis.invs if inv.leaf and not inv.guessed]


def cannot_read(command: str | Sequence[str]) -> str | None:
    """Why nothing can say what `command` runs (it cannot be parsed, in whole or in part, or is not a command at
    all), or None when it can be read.

    >>> cannot_read("echo $(oops")
    'could not be parsed (unclosed `$(`)'
    >>> cannot_read("ls -la") is None
    True
    """
    if isinstance(command, CommandLines):
        return next((why for why in map(cannot_read, command.parts) if why is not None), None)
    if isinstance(command, UnreadableCommand):
        return f"could not be read (the command argument is {_shorten(command)}, not a string or an argv list)"
    key: str | tuple[str, ...] = command if isinstance(command, str) else tuple(str(w) for w in command)
    analysis = _analyse(key)
    if analysis.error is not None:
        return f"could not be parsed ({analysis.error})"
    if analysis.nested_errors:
        return f"part of it could not be parsed ({analysis.nested_errors[0]})"
    return None


def command_of_call(
    tool: str, arguments: Mapping[str, Any], command_tools: Iterable[str] = DEFAULT_COMMAND_TOOLS
) -> str | list[str] | None:
    """The command a tool call runs, or None when the tool is not a command tool (or the call carries none).

    Argument `command` or `cmd`, a string or a list (argv); also OpenAI's local_shell shape,
    `{"action": {"command": [...]}}`. A call that carries several different ones (`{"command": "ls",
    "cmd": "rm -rf /"}`) may run any of them: it gives a `CommandLines`, a string of them one per line that
    every matcher here examines one by one. Tool names are compared ignoring case (`Bash` is `bash`), and
    `command_tools` entries may be globs (`"*shell*"`).

    >>> command_of_call("bash", {"command": "ls -la"})
    'ls -la'
    >>> command_of_call("read_file", {"path": "a.txt"}) is None
    True
    """
    if not _is_command_tool(tool, tuple(command_tools)):
        return None
    if isinstance(arguments, str):
        import json

        try:
            arguments = json.loads(arguments)
        except ValueError:
            if arguments.lstrip().startswith(("{", "[")):
                return UnreadableCommand(arguments)  # garbled JSON (cut off mid-call): what it runs is unknown
            return arguments  # a command tool whose raw argument text is the command itself
    if not isinstance(arguments, Mapping):
        return None
    found: list[str | list[str]] = []
    for source in (arguments, arguments.get("action")):
        if isinstance(source, Mapping):
            for key in COMMAND_ARGUMENT_KEYS:
                value = _as_command(source.get(key))
                if value is not None and value not in found:
                    found.append(value)
    if len(found) > 1:
        return CommandLines(found)
    return found[0] if found else None


class CommandLines(str):
    """Several commands one tool call carries (`{"command": "ls", "cmd": "rm -rf /"}`): the tool may run any
    of them, so `match_command`, `cannot_read`, `commands_for_allow_list` and `commands_in` examine each one on its
    own (one command's unclosed here-document cannot swallow the next). As a string: one per line."""

    parts: tuple[str | tuple[str, ...], ...]

    def __new__(cls, parts: Iterable[str | Sequence[str]]) -> CommandLines:
        kept = tuple(p if isinstance(p, str) else tuple(str(w) for w in p) for p in parts)
        self = super().__new__(cls, "\n".join(p if isinstance(p, str) else shlex.join(p) for p in kept))
        self.parts = kept
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.parts,))


class UnreadableCommand(str):
    """A command tool's command argument that is neither a string nor an argv list (`{"argv": [...]}`,
    `["rm", None]`): nothing can say what it runs, so every matcher counts it as a match (fail closed)."""

    __slots__ = ()


def _as_command(value: Any) -> str | list[str] | None:
    if value is None or (isinstance(value, (list, tuple)) and not value):
        return None  # no command given: nothing runs
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    return UnreadableCommand(repr(value))


@lru_cache(maxsize=256)
def _is_command_tool(tool: str, command_tools: tuple[str, ...]) -> bool:
    name = tool.casefold()
    return any(
        name == t.casefold() or (_GLOB_CHARS.search(t) is not None and fnmatchcase(name, t.casefold()))
        for t in command_tools
    )



def commands_for_allow_list(
    command: str | Sequence[str],
) -> tuple[list[tuple[tuple[str, ...], tuple[bool, ...], str, bool, tuple[str, ...]]], list[str]]:
    """What an allow list judges in `command` (`ToolPolicy(allow_commands=...)`): every program it runs, wrappers
    included (`sudo`, `env`, `bash -c`), each as (its words from the program on, which of them are only known at
    run time, a display, whether what runs is uncertain, the variables assigned in front of it); and the names of
    all variables the line assigns (`X=1 cmd`, `X=1`, `export X=1`, `env X=1 cmd`, nested shell code too).
    ValueError when it cannot be parsed.

    >>> found, assigned = commands_for_allow_list("PATH=. sudo ls -la")
    >>> [(words, prefix) for words, _, _, _, prefix in found], assigned
    ([(('sudo', 'ls', '-la'), ('PATH',)), (('ls', '-la'), ('PATH',))], ['PATH'])
    """
    if isinstance(command, CommandLines):  # several commands in one call: each is judged on its own
        found_all: list[tuple[tuple[str, ...], tuple[bool, ...], str, bool, tuple[str, ...]]] = []
        assigned_all: list[str] = []
        for part in command.parts:
            found, assigned_here = commands_for_allow_list(part)
            found_all.extend(found)
            assigned_all.extend(assigned_here)
        return found_all, assigned_all
    prefixes: dict[int, list[str]] = {}
    assigned: list[str] = []

    class Recorder(_Walker):
        def simple(self, cmd: _Simple, env: dict[str, str], depth: int) -> list[int]:
            names: list[str] = []
            for word in cmd.words:  # the same test `_Walker.simple` uses for an assignment in front of a command
                first = word.pieces[0]
                match = _ASSIGN_RE.match(first[1]) if first[0] == "L" and not first[2] else None
                if match is None:
                    break
                names.append(match.group(0).split("[", 1)[0].rstrip("+="))
            ids = super().simple(cmd, env, depth)
            assigned.extend(names)
            for x in ids:
                prefixes.setdefault(x, []).extend(names)
            return ids

    walker = Recorder()
    try:
        if isinstance(command, str):
            walker.script(_Parser(command).parse_all(), {}, 0)
        elif len(command) == 1 and re.search(r"\s|[;&|<>$`]", command[0]):
            walker.script(_Parser(command[0]).parse_all(), {}, 0)
        else:
            walker.argv([str(w) for w in command], [None] * len(command), {}, 0)
    except (_ParseError, RecursionError) as exc:
        raise ValueError(f"cannot parse command {_shorten(_command_text(command))!r}: {exc}") from None
    found = []
    for x, inv in enumerate(walker.invs):
        if inv.guessed:  # seen only by guessing; the program only known at run time is judged (and refused) itself
            continue
        if inv.program in ("env", "sudo", "doas", "export", "declare", "typeset", "local", "readonly"):
            assigned += [a.split("=", 1)[0].split("[", 1)[0].rstrip("+") for a in inv.args if _ASSIGN_RE.match(a)]
        dynamic = tuple(d is not None for d in inv.dyn)
        found.append((tuple(inv.words), dynamic, inv.display, inv.uncertain, tuple(prefixes.get(x, ()))))
    return found, assigned
