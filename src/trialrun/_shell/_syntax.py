"""Parsing a command line as POSIX shell into a syntax tree whose words keep their pieces (so that
variables can be resolved later); a command it cannot parse raises `_ParseError`. The words themselves are read
by `_words`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._words import _literal_text, _ParseError, _Word, _WordReader

# --------------------------------------------------------------------------------------------------------------
# Syntax tree: simple commands and groups, made of `_words._Word`s.
# --------------------------------------------------------------------------------------------------------------


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

_RESERVED_RE = re.compile(r"(\{|\}|!|\[\[|[a-z]+)(?=[\s;&|()<>]|$)")
_REDIR_RE = re.compile(r"&>>|&>|\d*(?:<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)")
_COPROC_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[ \t]+(?=[{(])")  # `coproc NAME { ...; }`
_ASSIGN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_CLOSING_WORDS = frozenset({"}", "fi", "done", "esac", "then", "elif", "else", "do"})


class _Parser(_WordReader):
    """A recursive-descent reader of POSIX shell (with the bash extensions agents write).

    It parses far enough to know every simple command and what feeds it; it does not evaluate anything.
    """

    __slots__ = ("heredocs",)

    def __init__(self, text: str, depth: int = 0, start: int = 0) -> None:
        super().__init__(text, depth, start)
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
        if op in ("<", ">") and m.end() - m.start() == 1 and m.end() < self.n and s[m.end()] == "(":
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


    def sub_script(self, start: int) -> list:
        """Parse `...)` from `start` (just after `$(`, `<(` or `>(`) as a script; leaves the cursor after the `)`."""
        sub = _Parser(self.s, self.depth + 1, start)
        body, _ = sub.parse_list(frozenset(), paren=True, opener=self.s[start - 2:start])
        if sub.heredocs:
            sub.read_heredoc_bodies()
        self.i = sub.i
        return body

    def text_script(self, text: str) -> list:
        return _Parser(text, self.depth + 1).parse_all()
