"""Parsing a command line as POSIX shell into a syntax tree whose words keep their pieces (so that
variables can be resolved later); a command it cannot parse raises `ParseError`. The words themselves are read
by `_words`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._nodes import Group, Literal, Pipeline, Script, Simple, Stage, Word, literal_text
from ._words import NotArithmetic, ParseError, WordReader


@dataclass(slots=True)
class _Heredoc:
    """A here-document whose body is still to come (after the newline that ends its command line)."""

    delimiter: str
    quoted: bool  # a quoted delimiter: the body is taken as written (no `$x`, no substitutions)
    strip_tabs: bool  # `<<-`
    target: Stage  # the command (or group) it feeds
    on_stdin: bool  # on descriptor 0 (`3<<EOF` feeds another)

_RESERVED_RE = re.compile(r"(\{|\}|!|\[\[|[a-z]+)(?=[\s;&|()<>]|$)")
_REDIR_RE = re.compile(r"&>>|&>|\d*(?:<<<|<<-|<<|<>|<&|>>|>&|>\||<|>)")
_IO_NUMBER_RE = re.compile(r"\d+[<>]")
_COPROC_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*[ \t]+(?=[{(])")  # `coproc NAME { ...; }`
_SUBSCRIPTED_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[")
ASSIGN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")


def assignment(word: Word) -> re.Match[str] | None:
    """The `NAME=` (or `NAME[i]+=`) a word starts with, when it is an assignment: written unquoted, before any
    expansion (`X=1 cmd`, `a=(...)`; `"X"=1` and `$X=1` are words like any other)."""
    first = word.pieces[0]
    if isinstance(first, Literal) and not first.quoted:
        return ASSIGN_RE.match(first.text)
    return None


_CLOSING_WORDS = frozenset({"}", "fi", "done", "esac", "then", "elif", "else", "do"})


class Parser(WordReader):
    """A recursive-descent reader of POSIX shell (with the bash extensions agents write).

    It parses far enough to know every simple command and what feeds it; it does not evaluate anything.
    """

    __slots__ = ("heredocs", "in_substitution")

    def __init__(
        self, text: str, depth: int = 0, start: int = 0, in_substitution: bool = False, posix: bool = False
    ) -> None:
        super().__init__(text, depth, start, posix)
        self.in_substitution = in_substitution  # reading the script of `$(...)` (or `<(...)`, `>(...)`)
        self.heredocs: list[_Heredoc] = []  # here-documents whose bodies come after the end of the line

    # -- entry points --------------------------------------------------------------------------------------------

    def parse_all(self) -> Script:
        script, _ = self.parse_list(frozenset(), paren=False)
        return script

    # -- lists, pipelines, stages ----------------------------------------------------------------------------------

    def parse_list(
        self, closers: frozenset[str], paren: bool, case_item: bool = False, opener: str = "("
    ) -> tuple[Script, str]:
        """Pipelines up to the end, a `)` (when `paren`), `;;` (in a case item) or a reserved word in `closers`."""
        pipelines: Script = []
        s = self.s
        while True:
            connector = self.skip_separators(after_command=bool(pipelines), strict=True)
            if "&" in connector and pipelines:  # `x=1 &`: a background job runs in a subshell
                pipelines[-1] = [Group(body=[pipelines[-1]], scope="sub")]
            if connector.endswith("?") and (self.i >= self.n or s[self.i] in ");" or (
                    closers and (m := _RESERVED_RE.match(s, self.i)) and m.group(1) in closers)):
                raise ParseError("`&&` or `||` with no command after it")
            if self.i >= self.n:
                if paren:
                    raise ParseError(f"unclosed `{opener}`")
                if closers:
                    raise ParseError("missing " + " or ".join(f"`{c}`" for c in sorted(closers)))
                return pipelines, ""
            c = s[self.i]
            if c == ")":
                if paren:
                    self.i += 1
                    return pipelines, ")"
                raise ParseError("unexpected `)`")
            if c == ";":  # skip_separators stops only at `;;` / `;&`
                if case_item:
                    self.i += 3 if s.startswith(";;&", self.i) else 2
                    return pipelines, ";;"
                raise ParseError(f"unexpected `{s[self.i:self.i + 2]}`")
            if closers:
                m = _RESERVED_RE.match(s, self.i)
                if m and m.group(1) in closers:
                    self.i = m.end()
                    return pipelines, m.group(1)
            pipeline = self.parse_pipeline()
            if "?" in connector:  # after `&&` or `||`: it may not run at all
                pipeline = [Group(body=[pipeline], scope="maybe")]
            pipelines.append(pipeline)

    def skip_separators(self, after_command: bool = True, strict: bool = False) -> str:
        """Skip separators; returns what was skipped: "?" for `&&`/`||`, "&" for a background `&`.

        `strict` (between the commands of a list): as bash has it, `;`, `&`, `&&` and `||` must each follow a
        command (`; ls`, `ls; ; ls`, `ls && ; ls` and a `;` at the start of a line are errors), and only newlines
        may come between `&&`/`||` and the command after it. `after_command`: a command comes just before."""
        s, n = self.s, self.n
        seen = ""
        can_separate = after_command
        while True:
            self.skip_blanks()
            if self.i >= n:
                return seen
            c = s[self.i]
            if c == "\n":
                self.i += 1
                self.read_heredoc_bodies()
                can_separate = False
                continue
            if c not in ";&|" or (c == ";" and s.startswith((";;", ";&"), self.i)) or s.startswith("&>", self.i):
                return seen
            if c == "|" and not s.startswith("||", self.i):
                raise ParseError("`|` with no command before it")
            if strict and (not can_separate or seen.endswith("?")):
                raise ParseError(f"unexpected `{s[self.i:self.i + 2].strip()}`")
            can_separate = False
            if c == ";":
                self.i += 1
            elif s.startswith(("&&", "||"), self.i):
                seen += "?"
                self.i += 2
            else:
                seen += "&"
                self.i += 1

    def parse_pipeline(self) -> Pipeline:
        stages: Pipeline = [self.parse_stage()]
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
                if (isinstance(stage, Simple) and not stage.words and not stage.subs and stage.stdin_word is None
                        and not stage.redirections):  # (`ls | >out` is a stage: one that runs nothing)
                    raise ParseError("`|` with no command after it")
                stages.append(stage)
            else:
                return stages

    def parse_stage(self) -> Stage:
        self.skip_blanks()
        s, i = self.s, self.i
        if i < self.n and s[i] == "(":
            if s.startswith("((", i) and not self.posix:  # (sh reads `((` as two subshells)
                subs: list[Script] = []
                try:
                    self.i = self.skip_arithmetic(i + 2, subs)
                except NotArithmetic:  # `((cmd) )`: subshells
                    pass
                else:
                    return self.finish_compound([], subs)
            self.i = i + 1
            body, _ = self.parse_list(frozenset(), paren=True)
            group = self.finish_compound(body)
            group.scope = "sub"
            return group
        m = _RESERVED_RE.match(s, i)
        if m is None:
            return self.parse_simple()
        word = m.group(1)
        if word == "[[" and self.posix:  # a program named `[[` to sh: `&&`, `||` and `;` inside separate commands
            return self.parse_simple()
        if word == "!":
            self.i = m.end()
            return self.parse_stage()
        if word == "coproc":  # `coproc [NAME] COMMAND`: runs COMMAND (in a subshell)
            self.i = m.end()
            self.skip_blanks()
            named = _COPROC_NAME_RE.match(s, self.i)
            if named:
                self.i = named.end()
            group = Group(body=[[self.parse_stage()]], scope="sub")
            return group
        if word == "{":
            self.i = m.end()
            body, _ = self.parse_list(frozenset({"}"}), paren=False)
            return self.finish_compound(body)
        if word in ("if", "while", "until", "for", "select", "case", "function", "[["):
            self.i = m.end()
            match word:
                case "[[":
                    return self.parse_cond()
                case "function":
                    return self.parse_function()
                case "if":
                    group = self.parse_if()
                case "while" | "until":
                    group = self.parse_while()
                case "for" | "select":
                    group = self.parse_for()
                case _:
                    group = self.parse_case()
            group.scope = "maybe"  # its body may run once, many times or not at all
            return group
        if word in _CLOSING_WORDS:
            raise ParseError(f"unexpected `{word}`")
        return self.parse_simple()

    def finish_compound(self, body: Script, subs: list[Script] | None = None) -> Group:
        """Redirections after a compound command (`done < <(cmd)`, `} 2>&1`) and nothing else."""
        group = Group(body=body, subs=subs if subs is not None else [])
        holder = Simple(subs=group.subs)
        while True:
            self.skip_blanks()
            if self.i >= self.n or not self.read_redirection(holder):
                break
        for heredoc in self.heredocs:
            if heredoc.target is holder:
                heredoc.target = group
        group.stdin_word, group.stdin_file, group.writes = holder.stdin_word, holder.stdin_file, holder.writes
        group.stdin_path = holder.stdin_path
        if self.i < self.n and self.s[self.i] not in "\n;&|)":
            raise ParseError(f"unexpected `{self.s[self.i:self.i + 10].split()[0]}` after a compound command")
        return group

    def parse_if(self) -> Group:
        body: Script = []
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

    def parse_while(self) -> Group:
        cond, _ = self.parse_list(frozenset({"do"}), paren=False)
        body, _ = self.parse_list(frozenset({"done"}), paren=False)
        return self.finish_compound(cond + body)

    def parse_for(self) -> Group:
        """`for NAME [in WORDS]; do ... done` and `for ((...)); do`: the header's substitutions run too."""
        s = self.s
        subs: list[Script] = []
        count = 0
        separated = semicolon = False
        names: list[str] = []
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise ParseError("`for` without `do`")
            c = s[self.i]
            if c in ";\n":
                if c == ";" and semicolon:
                    raise ParseError("unexpected `;` in a `for` header")
                self.i += 1
                if c == "\n":
                    self.read_heredoc_bodies()
                semicolon = semicolon or c == ";"
                separated = True
                continue
            if s.startswith("((", self.i):
                try:
                    self.i = self.skip_arithmetic(self.i + 2, subs)
                except NotArithmetic:
                    raise ParseError("`for ((` not closed by `))`") from None
                count += 2
                separated = True  # (`for ((...)) do` needs no `;`)
                continue
            m = _RESERVED_RE.match(s, self.i)
            if m and m.group(1) == "do" and (separated or count == 1):
                self.i = m.end()
                break
            if separated and (semicolon or count > 1 or not (m and m.group(1) == "in")):
                # after `;` (or the words, or a name and a newline) only `do` may come: `for v in a; } do` is wrong
                raise ParseError(f"`for` without `do` (found `{s[self.i:self.i + 10].split()[0]}`)")
            word = self.read_word(subs)
            if word is None:
                raise ParseError(f"unexpected `{c}` in a `for` header")
            if count == 1 and word.pieces != (Literal("in", False),):  # `for v inx a; do`, `for v a; do`
                raise ParseError(f"`for {names[0]}` without `in` or `do`")
            if count == 0:
                names.append(literal_text(word))
            count += 1
            separated = False
        body, _ = self.parse_list(frozenset({"done"}), paren=False)
        group = self.finish_compound(body, subs)
        group.assigns = tuple(names)
        return group

    def parse_case(self) -> Group:
        s = self.s
        subs: list[Script] = []
        self.skip_blanks()
        if self.read_word(subs) is None:
            raise ParseError("`case` without a word")
        self.skip_separators(after_command=False, strict=True)  # (newlines, never `;`, before `in`)
        m = _RESERVED_RE.match(s, self.i)
        if not m or m.group(1) != "in":
            raise ParseError("`case` without `in`")
        self.i = m.end()
        body: Script = []
        while True:
            self.skip_separators(after_command=False, strict=True)  # (`;;;` is an error: only newlines here)
            m = _RESERVED_RE.match(s, self.i)
            if m and m.group(1) == "esac":
                self.i = m.end()
                return self.finish_compound(body, subs)
            if self.i >= self.n:
                raise ParseError("`case` without `esac`")
            if s[self.i] == "(":
                self.i += 1
            while True:  # patterns: word | word ... )
                self.skip_blanks()
                if self.i >= self.n:
                    raise ParseError("unfinished `case` pattern")
                c = s[self.i]
                if c == ")":
                    self.i += 1
                    break
                if c == "|":
                    self.i += 1
                    continue
                if self.read_word(subs) is None:
                    raise ParseError(f"unexpected `{c}` in a `case` pattern")
            part, closer = self.parse_list(frozenset({"esac"}), paren=False, case_item=True)
            body += part
            if closer == "esac":
                return self.finish_compound(body, subs)

    def parse_function(self) -> Group:
        self.skip_blanks()
        name = self.read_word([])
        if name is None:
            raise ParseError("`function` without a name")
        self.skip_blanks()
        if self.s.startswith("(", self.i):
            self.i += 1
            self.skip_blanks()
            if not self.s.startswith(")", self.i):
                raise ParseError("`function NAME (` without `)`")
            self.i += 1
        self.skip_separators()
        body = self.parse_stage_as_group()
        body.name = literal_text(name)
        return body

    def parse_stage_as_group(self) -> Group:
        stage = self.parse_stage()
        return stage if isinstance(stage, Group) else Group(body=[[stage]])

    def parse_cond(self) -> Simple:
        """`[[ ... ]]`: operators inside are words, but substitutions still run."""
        s = self.s
        subs: list[Script] = []
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise ParseError("`[[` without `]]`")
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
        holder = Simple(subs=subs)
        while True:
            self.skip_blanks()
            if self.i >= self.n or not self.read_redirection(holder):
                return holder

    def parse_simple(self) -> Stage:
        cmd = Simple()
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
                if cmd.words and s[self.i - 1] == "=" and ASSIGN_RE.fullmatch(literal_text(cmd.words[-1])):
                    cmd.arrays[len(cmd.words) - 1] = self.read_array(cmd)  # `files=(a b "$(ls)")`
                    continue
                if len(cmd.words) == 1:  # NAME () compound-command: a function definition
                    self.i += 1
                    self.skip_blanks()
                    if not s.startswith(")", self.i):
                        raise ParseError("unexpected `(`")
                    self.i += 1
                    self.skip_separators()
                    body = self.parse_stage_as_group()
                    body.subs[:0] = cmd.subs
                    body.name = literal_text(cmd.words[0])
                    return body
                raise ParseError("unexpected `(`")
            if self.read_redirection(cmd):
                continue
            if _SUBSCRIPTED_RE.match(s, self.i) and all(assignment(w) for w in cmd.words):
                # `x[ ]=1 rm -rf b`: where a word may be an assignment, bash reads `NAME[` to its `]` as one word,
                # blanks and `;` included (not a valid name, it still runs `rm -rf b`)
                word = self.read_subscripted(cmd.subs)
            else:
                word = self.read_word(cmd.subs)
            if word is None:
                raise ParseError(f"unexpected `{c}`")
            cmd.words.append(word)

    def read_array(self, cmd: Simple) -> list[Word]:
        """The elements of `name=( ... )` (their substitutions run too)."""
        s = self.s
        self.i += 1
        elements: list[Word] = []
        while True:
            self.skip_blanks()
            if self.i >= self.n:
                raise ParseError("unclosed array `(`")
            c = s[self.i]
            if c == ")":
                self.i += 1
                return elements
            if c == "\n":
                self.i += 1
                continue
            word = self.read_word(cmd.subs)
            if word is None:
                raise ParseError(f"unexpected `{c}` in an array")
            elements.append(word)

    def read_redirection(self, cmd: Simple) -> bool:
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
        # (`cat << 2>&1`: digits before `<` or `>` are the next redirection's descriptor, not this one's target)
        target = None if _IO_NUMBER_RE.match(s, self.i) else self.read_word(cmd.subs)
        if target is None:
            raise ParseError(f"`{m.group(0)}` without a target")
        if op == "<<<" and self.posix:
            raise ParseError("`<<<` is not sh syntax")
        if op in ("<<", "<<-"):
            delimiter = literal_text(target)
            quoted = any(p.quoted for p in target.pieces)
            self.heredocs.append(_Heredoc(delimiter, quoted, op == "<<-", cmd, on_stdin))
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
            heredoc = self.heredocs.pop(0)
            lines: list[str] = []
            while self.i < self.n:
                end = s.find("\n", self.i)
                end = self.n if end < 0 else end
                line = s[self.i:end]
                text = line.lstrip("\t") if heredoc.strip_tabs else line
                if text == heredoc.delimiter:
                    self.i = min(end + 1, self.n)
                    break
                if self.in_substitution and text.startswith(heredoc.delimiter + ")"):
                    # `$(cat <<EOF ... EOF)`: bash ends the body at a delimiter followed by the `)` that closes the
                    # substitution (with a warning; dash rejects it), which then closes it
                    self.i += len(line) - len(text) + len(heredoc.delimiter)
                    break
                self.i = min(end + 1, self.n)
                lines.append(line)
            body = "\n".join(lines) + ("\n" if lines else "")
            word = Word((Literal(body, True),))
            if not heredoc.quoted:  # an unquoted delimiter means `$(...)`, backticks and `$x` in the body expand
                scanner = Parser(body, self.depth + 1, posix=self.posix)
                word = scanner.scan_expansions(heredoc.target.subs)
            if heredoc.on_stdin:
                heredoc.target.stdin_word = word


    def sub_script(self, start: int) -> Script:
        """Parse `...)` from `start` (just after `$(`, `<(` or `>(`) as a script; leaves the cursor after the `)`."""
        sub = Parser(self.s, self.depth + 1, start, in_substitution=True, posix=self.posix)
        body, _ = sub.parse_list(frozenset(), paren=True, opener=self.s[start - 2:start])
        # a here-document begun inside and not ended there (`x=$(cat <<EOF); ls` NEWLINE body): its body comes after
        # the end of the line the substitution is in, as bash reads it
        self.heredocs.extend(sub.heredocs)
        self.i = sub.i
        return body

    def text_script(self, text: str) -> Script:
        return Parser(text, self.depth + 1, posix=self.posix).parse_all()
