"""Parsing a command line as POSIX shell into a syntax tree whose words keep their pieces (so that
variables can be resolved later); a command it cannot parse raises `_ParseError`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_MAX_DEPTH = 40  # nested substitutions / `bash -c` / `eval` levels before we give up (and fail closed)


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
    stdin_path: _Word | None = None  # the file, for `< FILE` (not for descriptors)
    # files its standard output goes to: (target word, appends) for `> f`, `>> f`, `&> f`, `>| f`
    writes: list[tuple[_Word, bool]] = field(default_factory=list)
    # array assignments (`a=(rm -rf x)`): index of the `a=` word -> the element words
    arrays: dict[int, list[_Word]] = field(default_factory=dict)


@dataclass(slots=True)
class _Group:
    """A compound command: `( ... )`, `{ ...; }`, if/while/for/case bodies, a function body."""

    body: list
    subs: list[list]
    name: str | None = None  # a function definition's name (`f() { ...; }`, `function f { ...; }`)
    stdin_word: _Word | None = None  # as for _Simple: what redirections put on its standard input
    stdin_file: bool = False
    stdin_path: _Word | None = None
    writes: list[tuple[_Word, bool]] = field(default_factory=list)  # as for _Simple
    # How variables assigned inside last: "" as in the shell around it (`{ ...; }`), "sub" not at all (a
    # subshell, a background job), "maybe" perhaps (if/while/for/case bodies, after `&&`/`||`): unknown after.
    scope: str = ""
    assigns: tuple[str, ...] = ()  # variables it sets itself (a `for` loop's name): only known at run time


# A script is a list of pipelines; a pipeline is a list of stages (_Simple or _Group).

_PLAIN_RE = re.compile(r"[^ \t\r\n;&|()<>'\"\\$`{]+")
_RESERVED_RE = re.compile(r"(\{|\}|!|\[\[|[a-z]+)(?=[\s;&|()<>]|$)")
_REDIR_RE = re.compile(r"&>>|&>|\d*(?:<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ELEMENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[(?:@|\*|\d+)\]")  # `${a[@]}`, `${a[*]}`, `${a[0]}`
_COPROC_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[ \t]+(?=[{(])")  # `coproc NAME { ...; }`
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
            connector = self.skip_separators()
            if "&" in connector and pipelines:  # `x=1 &`: a background job runs in a subshell
                pipelines[-1] = [_Group([pipelines[-1]], [], scope="sub")]
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
            pipeline = self.parse_pipeline()
            if "?" in connector:  # after `&&` or `||`: it may not run at all
                pipeline = [_Group([pipeline], [], scope="maybe")]
            pipelines.append(pipeline)

    def skip_separators(self) -> str:
        """Skip separators; returns what was skipped: "?" for `&&`/`||`, "&" for a background `&`."""
        s, n = self.s, self.n
        seen = ""
        while True:
            self.skip_blanks()
            if self.i >= n:
                return seen
            c = s[self.i]
            if c == "\n":
                self.i += 1
                self.read_heredoc_bodies()
            elif c == ";":
                if s.startswith(";;", self.i) or s.startswith(";&", self.i):
                    return seen
                self.i += 1
            elif c == "&":
                if s.startswith("&>", self.i):
                    return seen
                both = s.startswith("&&", self.i)
                seen += "?" if both else "&"
                self.i += 2 if both else 1
            elif c == "|":
                if s.startswith("||", self.i):
                    self.i += 2
                    seen += "?"
                else:
                    raise _ParseError("`|` with no command before it")
            else:
                return seen

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
            group = self.finish_compound(body)
            group.scope = "sub"
            return group
        m = _RESERVED_RE.match(s, i)
        if m is None:
            return self.parse_simple()
        word = m.group(1)
        if word == "!":
            self.i = m.end()
            return self.parse_stage()
        if word == "coproc":  # `coproc [NAME] COMMAND`: runs COMMAND (in a subshell)
            self.i = m.end()
            self.skip_blanks()
            named = _COPROC_NAME_RE.match(s, self.i)
            if named:
                self.i = named.end()
            group = _Group([[self.parse_stage()]], [], scope="sub")
            return group
        if word == "{":
            self.i = m.end()
            body, _ = self.parse_list(frozenset({"}"}), paren=False)
            return self.finish_compound(body)
        if word in ("if", "while", "until", "for", "select", "case", "function", "[["):
            self.i = m.end()
            node: _Simple | _Group = getattr(self, "parse_" + {"[[": "cond"}.get(word, word))()
            if isinstance(node, _Group) and word not in ("function", "[["):
                node.scope = "maybe"  # its body may run once, many times or not at all
            return node
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
        group.stdin_word, group.stdin_file, group.writes = holder.stdin_word, holder.stdin_file, holder.writes
        group.stdin_path = holder.stdin_path
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
        names: list[str] = []
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
            if count == 0:
                names.append(_literal_text(word))
            count += 1
        body, _ = self.parse_list(frozenset({"done"}), paren=False)
        group = self.finish_compound(body, subs)
        group.assigns = tuple(names)
        return group

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
                    cmd.arrays[len(cmd.words) - 1] = self.read_array(cmd)  # `files=(a b "$(ls)")`
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

    def read_array(self, cmd: _Simple) -> list[_Word]:
        """The elements of `name=( ... )` (their substitutions run too)."""
        s = self.s
        self.i += 1
        elements: list[_Word] = []
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise _ParseError("unclosed array `(`")
            c = s[self.i]
            if c == ")":
                self.i += 1
                return elements
            if c == "\n":
                self.i += 1
                continue
            word = self.read_word(cmd.subs)
            if word is None:
                raise _ParseError(f"unexpected `{c}` in an array")
            elements.append(word)

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
            cmd.stdin_path = target if op == "<" else None
        elif op in (">", ">>", ">|", "&>", "&>>") and m.group(0)[: len(m.group(0)) - len(op)] in ("", "1"):
            cmd.writes.append((target, op.endswith(">>")))
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
            if _NAME_RE.fullmatch(inner) or (len(inner) == 1 and inner in _SPECIAL_PARAMS) or _ELEMENT_RE.fullmatch(inner):
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
