"""The shell analyser (`trialrun._shell`) checked against a parser nobody here wrote: bash itself.

- Syntax: `bash -n` on generated command lines (valid ones, broken ones, shell-shaped noise). Where bash accepts a
  line and the analyser cannot parse it, or the reverse, one of them is wrong; every such difference is either
  fixed (a test in tests/test_shell.py) or a named, documented difference (`KNOWN`, docs/matcher.md).
- What runs: generated command lines run for real, in a throwaway folder inside bubblewrap (the root read-only, no
  network, a scratch HOME), with fake programs first and alone on PATH that log their argv. Every program that
  really ran must be one the analyser says the line may run, with its options (a `never_ran` pattern of that
  program and those options matches the line); and for disguises of one command (quoting, wrappers, `sh -c`, ...)
  exactly that command ran, which is what the property tests take for granted.
- A second parser: tree-sitter-bash, where installed (the test extra installs it): where bash accepts a line and
  tree-sitter-bash reads it without error, the programs it names are among those the analyser says run.

Every command drawn is safe to run (see tests/_shell_grammar.py); each runs under a timeout.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from _shell_grammar import PROGRAMS, SHELLISH, broken_lines, command_lines, disguised_pairs, examples
from hypothesis import given, strategies as st

from trialrun._shell import commands_in, match_command
from trialrun._shell._analysis import analyse

BASH = shutil.which("bash")
BWRAP = shutil.which("bwrap")
#: Real programs linked into the fake PATH: wrappers that run what they are given (they find it on that PATH).
REAL = ("env", "timeout", "nice", "nohup", "xargs", "sh", "bash", "printf")
#: Fakes that pass through to the real program after logging (what they print matters: `cat <<EOF | sh`).
PASSTHROUGH = ("cat",)


def _required(what: str, present: bool) -> None:
    """A real component the oracle needs: in CI (CI=true) its absence fails, elsewhere the test skips."""
    if not present:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is needed by the shell oracle and is not installed")
        pytest.skip(f"{what} is not installed")


# -- bash -n ---------------------------------------------------------------------------------------------------------


def bash_accepts(command: str) -> bool:
    """`bash -n` on the line as a script read from standard input (so a line starting with `-` is no option)."""
    assert BASH is not None
    done = subprocess.run([BASH, "-n"], input=command.encode(), capture_output=True, timeout=20)
    return done.returncode == 0


_BACKTICK = re.compile(r"`(?:\\.|[^`\\])*`")
_HEREDOC = re.compile(r"<<(-?)[ \t]*([A-Za-z_]\w*)")


def known_difference(command: str, bash_ok: bool, error: str | None) -> str | None:
    """Which documented difference (docs/matcher.md) explains a disagreement between `bash -n` and the analyser, or
    None: then one of them has a bug."""
    if bash_ok and error is not None:
        # bash reads the text of a backtick substitution, and `$(...)` in an unquoted here-document's body, only when
        # it runs them (`bash -n` passes `echo `if``); the analyser reads them at once, and fails closed
        lazy = _HEREDOC.sub(r"<<\1'\2'", _BACKTICK.sub("`:`", command))
        if lazy != command and analyse(lazy).error is None:
            return "read when run"
    return None


@examples(120)
@given(st.one_of(command_lines(), broken_lines(), st.text(SHELLISH, max_size=40)))
def test_the_analyser_parses_what_bash_parses(command: str) -> None:
    _required("bash", BASH is not None)
    bash_ok = bash_accepts(command)
    error = analyse(command).error
    if bash_ok == (error is None):
        return
    assert known_difference(command, bash_ok, error) is not None, (
        f"bash -n {'accepts' if bash_ok else 'rejects'} {command!r}; the analyser {error or 'parses it'}")


# -- running for real --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A folder with `bin/` (the fakes and the real wrappers), where each run gets a case folder of its own."""
    _required("bash", BASH is not None)
    _required("bubblewrap (bwrap)", BWRAP is not None)
    root = tmp_path_factory.mktemp("oracle")
    fakes = root / "bin"
    fakes.mkdir()
    # one file per process (`$$`): programs run at once (`a & b`) would interleave their records in one file
    log = 'printf "%s\\0" "${0##*/}" "$@" "" >> "$ORACLE_LOG.$$"\n'
    for name in PROGRAMS:
        (fakes / name).write_text("#!/bin/sh\n" + log)
    for name in PASSTHROUGH:
        (fakes / name).write_text(f"#!/bin/sh\n{log}exec {shutil.which(name)} \"$@\"\n")
    # sudo: runs what it is given (after its options), as sudo would
    (fakes / "sudo").write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in -u) shift 2;; --) shift; break;;'
                                ' -*) shift;; *) break;; esac; done\nexec "$@"\n')
    for path in fakes.iterdir():
        path.chmod(0o755)
    for name in REAL:
        found = shutil.which(name)
        assert found is not None, name
        (fakes / name).symlink_to(os.path.realpath(found) if name != "sh" else found)
    (root / "home").mkdir()
    yield root


_CASES = iter(range(10**9))


def run_for_real(sandbox: Path, command: str) -> list[list[str]]:
    """The fake programs `command` ran (each as its argv), run by bash in a case folder of its own, inside bubblewrap:
    the root read-only, no network, a scratch HOME, PATH only the fakes; five seconds at most."""
    assert BWRAP is not None and BASH is not None
    case = sandbox / f"case{next(_CASES)}"
    case.mkdir()
    for name in ("a", "x.txt", "c.sh"):
        (case / name).write_text("ls\n")
    log = case / ".log"
    bwrap = [
        BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
        "--bind", str(sandbox), str(sandbox), "--unshare-all", "--die-with-parent", "--new-session",
        "--clearenv", "--setenv", "PATH", str(sandbox / "bin"), "--setenv", "HOME", str(sandbox / "home"),
        "--setenv", "ORACLE_LOG", str(log), "--chdir", str(case),
        "timeout", "-s", "KILL", "5", BASH, "-c", command + "\nwait",  # (background jobs too)
    ]
    subprocess.run(bwrap, stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    records = []
    for part in sorted(case.glob(".log.*"), key=lambda p: p.stat().st_mtime_ns):
        record = part.read_bytes().decode(errors="replace").split("\0")[:-2]  # (bytes: `\r` stays)
        if record:
            records.append(record)
    return records


def _pattern(argv: list[str]) -> str:
    """A `never_ran` pattern of a program and the options it ran with (operands left out: a loop's variable). A
    carriage return separates words for the matcher (for commands sent with Windows line ends), not for bash: the
    words are split there too (docs/matcher.md)."""
    argv = [part for word in argv for part in word.split("\r") if part] or argv
    program, args = argv[0], argv[1:]
    if program == "git":
        sub = next((a for a in args if a.isalpha()), None)
        if sub is None:
            return "git"
        program, args = f"git {sub}", args[args.index(sub) + 1:]
    return " ".join([program, *(shlex.quote(a) for a in args if a.startswith("-") and a != "-")])


@examples(60)
@given(disguised_pairs())
def test_each_disguise_runs_exactly_its_command(sandbox: Path, pair: tuple[list[str], str]) -> None:
    """What the property tests take for granted, checked by running it: bash runs the disguise as that argv, once."""
    argv, spelled = pair
    ran = run_for_real(sandbox, spelled)
    assert ran == [argv], f"{spelled!r} ran {ran}, not {argv}"
    assert shlex.join(argv) in commands_in(spelled)


@examples(80)
@given(command_lines())
def test_what_really_ran_is_what_the_analyser_says_may_run(sandbox: Path, command: str) -> None:
    ran = run_for_real(sandbox, command)
    for argv in ran:
        pattern = _pattern(argv)
        found = match_command(pattern, command)
        assert found.matched, f"{command!r} really ran {argv}; the analyser: {found.reason}"


def test_the_oracle_sees_what_runs(sandbox: Path) -> None:
    """The harness itself: a fake logs its argv, wrappers find the fakes, and nothing outside the case folder is
    written (the root is read-only in the sandbox)."""
    assert run_for_real(sandbox, "rm -rf a b; env rm -f x; echo 'rm -v' | sh") == [
        ["rm", "-rf", "a", "b"], ["rm", "-f", "x"], ["rm", "-v"]]
    assert run_for_real(sandbox, "false && rm -rf a") == []
    home = sandbox / "home"
    run_for_real(sandbox, f"printf x > {shlex.quote(str(home))}/outside; /bin/touch /tmp/t /etc/t")
    assert (home / "outside").exists()  # (the scratch HOME is the one writable place outside the case)
    assert not Path("/etc/t").exists()


# -- tree-sitter-bash ------------------------------------------------------------------------------------------------


def _tree_sitter() -> object | None:
    try:
        import tree_sitter
        import tree_sitter_bash
    except ImportError:
        return None
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _command_names(node: object) -> Iterator[str]:
    """The literal program names of the commands tree-sitter-bash finds (ones made of plain words only). Not inside
    `$((...))` or `((...))`: where that is no arithmetic expression tree-sitter-bash reads subshells, bash reads
    arithmetic (an error when it runs: no command runs)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.text.startswith((b"$((", b"((")):  # type: ignore[attr-defined]
            continue
        if current.type == "command_name":  # type: ignore[attr-defined]
            text = current.text.decode()  # type: ignore[attr-defined]
            if re.fullmatch(r"[\w./-]+", text):
                yield text.rsplit("/", 1)[-1]
        stack.extend(current.children)  # type: ignore[attr-defined]


@examples(120)
@given(command_lines())
def test_programs_tree_sitter_names_are_ones_the_analyser_says_run(command: str) -> None:
    parser = _tree_sitter()
    _required("tree-sitter-bash", parser is not None)
    tree = parser.parse(command.encode())  # type: ignore[attr-defined]
    if tree.root_node.has_error or not bash_accepts(command):
        return
    analysis = analyse(command)
    assert analysis.error is None, (command, analysis.error)
    said = {inv.program for inv in analysis.invs}
    for name in _command_names(tree.root_node):
        assert name in said or name in ("f",), f"tree-sitter-bash finds `{name}` in {command!r}; the analyser: {said}"


# -- what the fuzzing found (each was wrong before; bash, or dash as `sh`, shows the truth) -------------------------

#: (command line, the program and options it runs for real, the shell that shows it: "bash" or "dash")
FOUND = [
    # a subscript where an assignment may stand is read to its `]`, blanks and all: bash runs the rm
    ("x[ ]=1 rm -rf a", ["rm", "-rf", "a"], "bash"),
    ("y[a b]=1 rm -rf a", ["rm", "-rf", "a"], "bash"),
    ("X=1 x[a;b]=2 rm -rf a", ["rm", "-rf", "a"], "bash"),
    # dash (Debian's sh) reads `[[`, `((` and `$'...'` as bash does not
    ("sh -c '[[ x || rm -rf a ]]'", ["rm", "-rf", "a", "]]"], "dash"),
    ("sh -c '(( rm -rf a ))'", ["rm", "-rf", "a"], "dash"),
    ("echo '(( rm -rf a ))' | sh", ["rm", "-rf", "a"], "dash"),
    ("sh -c \"echo \\$'x\\\\' ; rm -rf a ; #'\"", ["rm", "-rf", "a"], "dash"),
    # `${` ends at the first `}`: a `{` inside opens nothing
    ("echo ${x:-{}; rm -rf a; echo }", ["rm", "-rf", "a"], "bash"),
    # the substitutions inside arithmetic run (`$((`, `((`, `for ((`); `$((cmd) )` is a subshell, not arithmetic
    ("echo $(( $(rm -rf a) + 1 ))", ["rm", "-rf", "a"], "bash"),
    ('echo "$(( echo "$(rm -rf a)" ))"', ["rm", "-rf", "a"], "bash"),
    ("(( $(rm -rf a) ))", ["rm", "-rf", "a"], "bash"),
    ("for ((i=$(rm -rf a); i<1; i++)); do :; done", ["rm", "-rf", "a"], "bash"),
    ("echo $((rm -rf a) )", ["rm", "-rf", "a"], "bash"),
    ("((rm -rf a) )", ["rm", "-rf", "a"], "bash"),
    # a here-document begun in a substitution takes its body from the lines after the substitution's line
    ("x=$(cat <<EOF); rm -rf a\nls\nEOF", ["rm", "-rf", "a"], "bash"),
]


@pytest.mark.parametrize(("command", "ran", "shell"), FOUND)
def test_what_the_fuzzing_found(sandbox: Path, command: str, ran: list[str], shell: str) -> None:
    found = match_command(_pattern(ran), command)
    assert found.matched and not found.uncertain, found.reason
    if shell == "dash" and os.path.basename(os.path.realpath(shutil.which("sh") or "")) != "dash":
        return  # (this machine's sh is not dash: the analyser still reads the line both ways)
    assert ran in run_for_real(sandbox, command)


@pytest.mark.parametrize("command", [
    "bash -c '[[ x || rm -rf a ]]'",  # bash: a condition, no command
    "bash -c \"echo \\$'x\\\\' ; rm -rf a ; #'\"",  # bash: one quoted word
])
def test_and_what_bash_does_not_run(sandbox: Path, command: str) -> None:
    assert not match_command("rm -rf", command).matched
    assert run_for_real(sandbox, command) == []


@pytest.mark.parametrize(("command", "bash_ok"), [
    ('echo "$(cat <<EOF\nrm -rf a\nEOF)"', True),  # bash ends the body at `EOF)` (with a warning)
    ("ls | >out", True),  # a stage of only a redirection
    ("; ls", False), ("ls ; ; ls", False), ("ls &&", False), ("{ ls && }", False), ("ls\n; ls", False),
    ("0|\\", False),  # the backslash continues a line that never comes
    ("d[", False),  # a subscript never closed
    ("for v in a; } do :; done", False), ("for ((i=0; i<1; i++)) do :; done", True),
    ("cat << 2>&1", False),  # `2>` is the next redirection: `<<` has no delimiter
    ("for v inx a; do :; done", False), ("for v a; do :; done", False),  # only `in` or `do` after the name
    ("case x in x) ls;;; esac", False), ("case x in x) ls;;& y) ls;; esac", True),
    ('echo "$(cat <<EOF)"; ls', True),
    ("case x; in x) ls;; esac", False), ("case x\nin x) ls;; esac", True),  # its body would come on the next line (there is none: empty, as in bash)
])
def test_parse_differences_the_fuzzing_found(command: str, bash_ok: bool) -> None:
    _required("bash", BASH is not None)
    assert bash_accepts(command) is bash_ok
    assert (analyse(command).error is None) is bash_ok, analyse(command).error
