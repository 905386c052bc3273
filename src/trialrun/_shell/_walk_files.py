"""The walker's file steps: what a command line writes (redirections, `tee`, copies and moves, `sed -i`,
`perl -pi`, patches, code that writes files) and what a script it runs holds (see `_files` for the states).

A base of `_handover._HandOver` (which supplies `code` and `lang_code`) under `_analysis._Walker` (`feed` and
`output_of`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from . import _files
from ._code import LANGUAGES, language_of, language_of_script
from ._code_writes import CopyFile, WriteFile, WritesAnywhere, code_writes
from ._editor_args import InPlace, PerlEdit, patch_options, perl_arguments, sed_arguments
from ._edits import Unknowable
from ._expand import Env, Tail, expand_word
from ._inplace import Sed, run_perl, run_sed
from ._inv import Inv, basename, word_text
from ._nodes import Group, Simple
from ._options import normalise_args
from ._tool_writes import apply_unified_diff, patch_program
from ._variables import cwd_of
from ._wrappers import SHELLS, WRAPPERS

_READ_ONLY = frozenset({
    "cat", "ls", "echo", "printf", "grep", "egrep", "fgrep", "rg", "ag", "head", "tail", "wc", "less", "more", "stat",
    "file", "chmod", "chown", "chgrp", "test", "[", "diff", "cmp", "md5sum", "sha1sum", "sha256sum", "sha512sum",
    "shasum", "cksum", "b2sum", "readlink", "realpath", "basename", "dirname", "du", "df", "which", "type",
    "command", "cd", "pushd", "popd", "pwd", "true", "false", ":", "man", "help", "info", "nl", "od", "xxd",
    "hexdump", "strings", "cut", "tr", "jq", "yq", "touch", "mkdir", "rmdir", "rm", "tree", "find", "column",
    "fold", "fmt", "paste", "join", "comm", "date", "sleep", "whoami", "id", "uname", "hostname", "ps", "kill",
    "exit", "return", "export", "declare", "typeset", "local", "readonly", "read", "set", "shift", "unset",
    "alias", "hash", "trap", "wait", "jobs", "ulimit", "umask", "getopts", "let", "source", ".", "eval", "exec",
    "bat", "view", "shellcheck", "tee", "cp", "ln", "mv", "install",
    "apply_patch", "applypatch", "patch",  # (what these write is followed where they run: `stage_writes`)
})
_GIT_WRITES = frozenset({"checkout", "restore", "reset", "stash", "pull", "merge", "apply", "am", "cherry-pick",
                         "rebase", "clone", "switch", "revert", "mv", "worktree", "submodule", "fetch"})
# Programs that write files whose names their arguments do not give (archives, clones, copies of folders).
_UNPACKERS = frozenset({"unzip", "7z", "7za", "7zr", "cpio", "ar", "rsync", "scp", "gunzip", "bunzip2", "unxz",
                        "unzstd", "bsdtar", "jar", "unrar"})
_PATCHERS = frozenset({"apply_patch", "applypatch", "patch"})


def _tar_extracts(args: Sequence[str]) -> bool:
    """`tar xf a.tar`, `tar -xzf`, `tar --extract`: it writes the files in the archive."""
    first = args[0] if args else ""
    return any(a in ("--extract", "--get") for a in args) or (
        bool(first) and not first.startswith("--") and "x" in first.lstrip("-")
    ) or any(a.startswith("-") and not a.startswith("--") and "x" in a for a in args)


def _git_apply(args: Sequence[str]) -> bool:
    return "apply" in args and next((a for a in args if not a.startswith("-")), "") == "apply"


class FileSteps:
    """What a command line does to files, and reading the scripts it runs."""

    files: _files.Table
    own: _files.OwnScripts
    invs: list[Inv]
    env_cwd: str | None

    if TYPE_CHECKING:
        def feed(self, ids: list[int], texts: list[str] | None, known: bool, what: str, env: Env,
                 depth: int) -> list[int]: ...

        def code(self, text: str, what: str, env: Env, depth: int, shared: bool = False,
                 positional: Sequence[tuple[str, Tail]] | None = None, sh: bool = False) -> list[int]: ...

        def lang_code(self, inv: Inv, lang: str, code: str, depth: int) -> list[int]: ...

        def output_of(self, stage: Simple | Group, ids: list[int], env: Env) -> tuple[list[str] | None, bool]: ...

    # -- paths ------------------------------------------------------------------------------------------------------

    def lookup(self, path: str) -> _files.State | None:
        return _files.lookup(self.files, self.here(path))

    def here(self, path: str) -> str:
        """A path as seen from where the line started (`cd repo && ./x` runs repo/x), as the file table keys it."""
        cwd = self.env_cwd
        if cwd and not path.startswith(("/", "~")):
            path = cwd + "/" + path
        return _files.key(self.files, path)

    def written_anywhere(self, why: str) -> None:
        self.files[_files.ANYWHERE] = _files.Unknown(why)

    def is_folder(self, path: str) -> bool:
        """Whether `path` was a folder of the workdir at the start (`mv x.sh bin` moves it into bin/)."""
        workspace = _files.workspace_of(self.files)
        if workspace is None:
            return path.endswith("/")
        key = self.here(path)
        return key in workspace.folders or key == "." or path.endswith("/")

    # -- reading what runs -----------------------------------------------------------------------------------------

    def stdin_text(self, path: str, sure: bool) -> list[str] | None:
        """What `< path` feeds a shell, when that is known (a file fed to a shell is never taken on trust)."""
        known = _files.texts(self.lookup(path)) if sure else None
        return list(known) if known is not None else None

    def cat_files(self, inv: Inv) -> str | None:
        """What `cat FILE...` prints, when every file's one reading is known (else None)."""
        parsed = inv.normalised()
        if parsed.flags or parsed.values or not parsed.operands or any(d is not None for d in inv.dyn[1:]):
            return None
        parts = [_files.texts(self.lookup(path)) for path in parsed.operands]
        if any(part is None or len(part) != 1 for part in parts):
            return None
        return "".join(part[0] for part in parts if part is not None)

    def run_file(
        self, inv: Inv, path: str, how: str, args: Sequence[str], args_dyn: Sequence[Tail], env: Env, depth: int
    ) -> list[int]:
        """A script run by path (`sh x.sh`, `. x`, `./x.sh`, `python3 x.py`): read it when what it held is known (a
        write the trajectory showed, the workspace snapshot); else it is the user's own (the `own_scripts` rule) or
        only known at run time."""
        state = self.lookup(path)
        if state is None:
            if how == "exec" and path.startswith("/"):
                return []  # a program installed somewhere, judged by its name
            anywhere = _files.anywhere_why(self.files)
            if _files.own_script(path, self.own) and anywhere is None:
                return []
            inv.opaque = True
            inv.why = inv.why or (
                f"it runs `{path}`, which {anywhere}" if anywhere is not None and _files.own_script(path, self.own)
                else f"it runs `{path}`, which this trajectory never showed being written and is not one of the "
                "user's own scripts (own_scripts)"
            )
            return []
        match state:
            case _files.LeftOut() if _files.own_script(path, self.own):
                return []  # the user's own script, too large (or not text) to read: trusted, as without a snapshot
            case _files.Absent() if how == "exec" and path.startswith("/"):
                return []
            case _files.Unknown(why) | _files.LeftOut(why) | _files.Absent(why):
                inv.opaque = True
                inv.why = inv.why or f"it runs `{path}`, which {why}"
                return []
        known = _files.texts(state)
        if known is None:  # a program (judged by its name), a copy of an unseen own file, or a file that is gone
            return []
        ids: list[int] = []
        for text in known:
            lang = language_of_script(text, path) if how == "exec" else ("sh" if how == "source" else how)
            if lang in LANGUAGES:
                ids += self.lang_code(inv, lang, text, depth)
            else:
                ids += self.code(text, f"`{path}`", env, depth, shared=how == "source",
                                 positional=None if how == "source" else tuple(zip(args, args_dyn)),
                                 sh=_runs_in_sh(inv, text, how))
        return ids

    def source_state(self, path: str, tail: Tail) -> _files.State:
        """What a copy of or link to `path` is (`cp /bin/rm x`, `ln -s "$(which rm)" x`, `cp tmpl.sh x.sh`)."""
        if tail is not None:
            if "/" in tail and tail.rstrip("/"):
                return _files.Program(basename(tail))
            return _files.Unknown(f"is a copy of `{path}`, a path only known at run time")
        program = _files.system_program(path)
        if program is not None:
            return _files.Program(program)
        state = self.lookup(path)
        match state:
            case _files.Absent(why):
                return _files.Unknown(f"is a copy of `{path}`, which {why}")
            case _files.Gone():
                return _files.Unknown(f"is a copy of `{path}`, which was removed")
            case None:
                pass
            case _:
                return state
        if _files.own_script(path, self.own):
            return _files.Own()
        return _files.Unknown(f"is a copy of `{path}`, which this trajectory never showed")

    # -- what a command writes -------------------------------------------------------------------------------------

    def note_writes(self, inv: Inv, rest: Sequence[str], rest_dyn: Sequence[Tail], scripts: set[str]) -> None:
        """Copies and links (`cp`, `ln`, `install`, `mv`) make their target what their source is; in-place
        editors (`sed -i`, `perl -pi`) rewrite what they edit; any other program (but a few that only read) may
        have written the files it names: they become unknown."""
        program = inv.program
        if program in ("cp", "ln", "install", "mv"):
            self.copies(inv, rest, rest_dyn)
            return
        if program in ("apply_patch", "applypatch") and inv.args:  # the patch as its argument (from stdin: below)
            if rest_dyn and rest_dyn[0] is not None:
                self.written_anywhere(f"may have been written by `{inv.display[:60]}` (a patch only known at run time)")
            else:
                patch_program(inv.args[0], self.files, cwd=self.env_cwd or "")
            return
        lang = language_of(program)
        if lang in ("sed", "perl", "ruby", "awk") and self.in_place(inv, lang, rest, rest_dyn):
            return
        if program == "git" and _git_apply(inv.args):
            return  # followed in `stage_writes`, which sees its standard input
        unpacks = program in _UNPACKERS or (program == "tar" and _tar_extracts(inv.args)) or (
            program == "git" and any(a in ("clone", "pull", "checkout", "restore", "reset", "stash", "merge", "rebase",
                                           "apply", "am", "cherry-pick", "revert", "switch", "submodule", "worktree")
                                     for a in inv.args) and not (inv.args[:1] == ("checkout",) and "-b" in inv.args)
        ) or (program == "wget" and any(a in ("-r", "-m", "--recursive", "--mirror") for a in inv.args))
        if unpacks:
            self.written_anywhere(f"may have been written by `{inv.display}`")
        if (
            program in _READ_ONLY or program in SHELLS or lang or inv.glob
            or (program in WRAPPERS and program not in ("git", "tar"))
            or (program == "git" and not any(a in _GIT_WRITES for a in inv.args))
        ):
            return
        why = f"was written by `{inv.display}`"
        for text, tail in zip(rest, rest_dyn):
            if tail is not None or text in scripts or "://" in text:
                continue
            if text.startswith("-") or (program == "dd" and "=" in text):
                text = text.split("=", 1)[1] if "=" in text else ""
            if text and not text.startswith("-") and text not in _files.DEVICES:
                self.files[self.here(text)] = _files.Unknown(why)

    def copies(self, inv: Inv, rest: Sequence[str], rest_dyn: Sequence[Tail]) -> None:
        """`cp a b`, `cp a b c dir/`, `mv a dir`, `ln -s a b`, `install -t dir a`: each target becomes what its source
        is; a moved source is gone."""
        program = inv.program
        parsed = normalise_args(program, inv.args)
        tails = dict(zip(rest, rest_dyn))
        operands = list(parsed.operands)
        target_dir = next((v for k, v in parsed.values if k == "t"), None)
        if target_dir is None and program == "ln" and len(operands) == 1:
            target_dir = "."
        if target_dir is None and len(operands) < 2:
            return
        if target_dir is None and len(operands) == 2 and self.is_folder(operands[-1]):
            target_dir = operands[-1]
        sources = operands if target_dir is not None else operands[:-1]
        for source in sources:
            if target_dir is not None or len(sources) > 1:
                dest = f"{(target_dir or operands[-1]).rstrip('/')}/{basename(source)}"
            else:
                dest = operands[-1]
            state = self.source_state(source, tails.get(source))
            self.files[self.here(dest)] = state
            if program == "mv" and tails.get(source) is None and not isinstance(state, _files.Program):
                self.files[self.here(source)] = _files.Gone()

    def in_place(self, inv: Inv, lang: str, rest: Sequence[str], rest_dyn: Sequence[Tail]) -> bool:
        """`sed -i`, `perl -pi -e`, `ruby -pi -e`, `awk -i inplace`: the files they rewrite, followed where the
        script is (`_inplace`), else unknown. False when the program does not edit in place."""
        args = list(inv.args)
        if lang == "sed":
            parsed = sed_arguments(args)
        elif lang == "perl":
            parsed = perl_arguments(args)
        else:
            edits = any(a.startswith("-") and not a.startswith("--") and "i" in a[1:] for a in args) or (
                lang == "awk" and "inplace" in args)
            if not edits:
                return False
            parsed = InPlace(None, [a for a in args if not a.startswith("-") and a != "inplace"][1:], "",
                             f"{lang} edits in place in a way not followed here")
        program, targets, suffix, problem = parsed.program, parsed.files, parsed.suffix, parsed.problem
        if targets is None:
            return False  # not in place
        dynamic = any(d is not None for d in rest_dyn)
        shown = f"`{inv.display}`"
        for target in targets:
            key = self.here(target)
            state = _files.lookup(self.files, key)
            known = _files.texts(state)
            if suffix:
                self.files[self.here(target + suffix)] = (
                    state if state is not None else _files.Unknown(f"is a backup made by {shown}"))
            if problem is not None or dynamic:
                self.files[key] = _files.Unknown(f"was edited in place by {shown}: {problem or 'part of it is only known at run time'}")
                continue
            if known is None:
                self.files[key] = _files.Unknown(_files.unknown_why(state, target, f"edited in place by {shown}", self.files))
                continue
            try:
                results = tuple(dict.fromkeys(_edit_in_place(program, text) for text in known))
            except Unknowable as exc:
                self.files[key] = _files.Unknown(f"was edited in place by {shown}, which is not followed here ({exc})")
                continue
            self.files[key] = _files.Text(results)
        return True

    def code_wrote(self, lang: str, code: str, shown: str) -> None:
        """The files code in another language writes, where it shows them (`_code_writes`)."""
        for write in code_writes(lang, code):
            match write:
                case WritesAnywhere(why):
                    self.written_anywhere(why)
                case WriteFile(path, content, append):
                    key = self.here(path)
                    if content is None:
                        self.files[key] = _files.Unknown(f"was written by {shown}")
                        continue
                    before = _files.before_append(_files.lookup(self.files, key)) if append else ("",)
                    self.files[key] = _files.Unknown(f"was appended to by {shown}") if before is None else (
                        _files.Text(tuple(dict.fromkeys(b + content for b in before))))
                case CopyFile(source, target, move):
                    self.files[self.here(target)] = self.source_state(source, None)
                    if move:
                        self.files[self.here(source)] = _files.Gone()

    def stage_writes(self, stage: Simple, ids: list[int], env: Env,
                     incoming: tuple[list[str] | None, bool] | None) -> bool:
        """What a patch program in the stage writes (`apply_patch <<'EOF'`, `patch -p1 < fix.diff`, `git apply`),
        with its patch from an argument, a here-document, a file or the pipe. True when the stage had one."""
        first = next((self.invs[x] for x in ids if self.invs[x].leaf and not self.invs[x].expanded), None)
        if first is None or first.dynamic or not (first.program in _PATCHERS or (
                first.program == "git" and _git_apply(first.args))):
            return False
        cwd = cwd_of(env) or ""
        shown = f"`{first.display[:60]}`"
        stdin: tuple[list[str] | None, bool] | None = incoming
        if stage.stdin_word is not None:
            text, known = word_text(stage.stdin_word, env)
            stdin = ([text], known)
        elif stage.stdin_file and stage.stdin_path is not None:
            path, sure = word_text(stage.stdin_path, env)
            state = self.lookup(path) if sure else None
            known_texts = _files.texts(state)
            stdin = (list(known_texts), True) if known_texts is not None else (None, False)
        if first.program in ("apply_patch", "applypatch"):
            if first.args:
                return True  # the patch is its argument: applied where it ran (`note_writes`)
            texts, known = stdin or (None, False)
            if texts is None or not known or len(texts) != 1:
                self.written_anywhere(f"may have been written by {shown} (a patch not known before it ran)")
            else:
                patch_program(texts[0], self.files, cwd=cwd)
            return True
        options = patch_options(first)
        if options is None:
            self.written_anywhere(f"may have been written by {shown} (options not followed here)")
            return True
        strip, target, diff_file, dry = options
        if dry:
            return True
        if diff_file is not None:
            state = self.lookup(diff_file)
            known_texts = _files.texts(state)
            stdin = (list(known_texts), True) if known_texts is not None else (None, False)
        texts, known = stdin or (None, False)
        if texts is None or not known or len(texts) != 1:
            if target is not None:
                self.files[self.here(target)] = _files.Unknown(f"was patched by {shown} with a diff not known here")
            else:
                self.written_anywhere(f"may have been written by {shown} (a diff not known before it ran)")
            return True
        apply_unified_diff(texts[0], self.files, cwd=cwd, strip=strip, target=target, shown=shown)
        return True

    def writes(
        self, stage: Simple | Group, ids: list[int], env: Env,
        incoming: tuple[list[str] | None, bool] | None,
    ) -> None:
        """Files a stage writes: its output redirections (`echo ... > x.sh`) and `tee FILE`, with what they hold
        when that is known (`echo`, `printf`, `cat` of a here-document), else as unknown; and patch programs."""
        if isinstance(stage, Simple) and ids:
            self.stage_writes(stage, ids, env, incoming)
        targets: list[tuple[str, bool, tuple[list[str] | None, bool], str]] = []
        if stage.writes:
            output = self.output_of(stage, ids, env)
            shown = f"`{self.invs[ids[0]].display}`" if ids else "a command"
            for word, append in stage.writes:
                fields = expand_word(word, env, split=False)
                path, tail = fields[0] if fields else ("", None)
                if tail is not None:
                    self.written_anywhere(f"was perhaps written by {shown} (to a path only known at run time)")
                    continue
                targets.append((path, append, output, shown))
        if isinstance(stage, Simple) and ids and self.invs[ids[0]].program == "tee" and not self.invs[ids[0]].dynamic:
            tee = self.invs[ids[0]]
            if stage.stdin_word is not None:
                text, known = word_text(stage.stdin_word, env)
                incoming = ([text], known)
            parsed = tee.normalised()
            for path in parsed.operands:
                targets.append((path, "a" in parsed.flags, incoming or (None, False), "the command before `tee`"))
        for path, append, (texts, known), shown in targets:
            if path in _files.DEVICES or not path:
                continue
            key = self.here(path)
            if texts is None or not known:
                self.files[key] = _files.Unknown(f"was written by {shown}")
                continue
            if append:
                before = _files.before_append(_files.lookup(self.files, key))
                if before is None:
                    self.files[key] = _files.Unknown(_files.unknown_why(_files.lookup(self.files, key), path,
                                                                      f"appended to by {shown}", self.files))
                    continue
                texts = [b + t for b in before for t in texts]
            self.files[key] = _files.Text(tuple(dict.fromkeys(texts)))


def _runs_in_sh(inv: Inv, text: str, how: str) -> bool:
    """Whether a POSIX sh may run a script: `sh x.sh`, or its `#!` line names sh or dash."""
    if how == "exec":
        first = text.split("\n", 1)[0]
        return first.startswith("#!") and bool(re.match(r"#!\s*(?:/usr)?/bin/(?:env\s+)?(?:sh|dash|ash)\b", first))
    return inv.program in ("sh", "dash", "ash", "posh")


def _edit_in_place(program: Sed | PerlEdit | None, text: str) -> str:
    match program:
        case Sed():
            return run_sed(program, text)
        case PerlEdit(statements, slurp):
            return run_perl(statements, text, slurp)
    raise Unknowable("the edit's program was not read")
