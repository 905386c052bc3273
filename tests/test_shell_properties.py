"""Property tests of the shell analyser (`trialrun._shell`), the ground `never_ran` and `ToolPolicy` stand on, as a
security component is tested: with hypothesis, over arbitrary text and over generated command lines.

- It never raises, and never fails inside: whatever the text, every entry point answers (`commands_in` and
  `commands_for_allow_list` say ValueError, as documented, for a line they cannot parse), and no analysis ends in
  an exception of its own that the analyser caught and turned into "cannot parse" (a crash that fails closed is
  still a crash: it is a line the analyser should have read).
- What it cannot parse fails closed: a deny pattern matches it, and `ToolPolicy` denies it.
- Spellings bash runs as the same command are judged the same: quoting, escaping, `$'...'`, wrappers (`env`,
  `command`, `sudo`, `timeout`, `nohup`, `sh -c`, `bash -c`, `eval`, a pipe into a shell, a here-document, a group,
  a function, `xargs sh -c`, a variable holding the code...), nested.

Budgets: `_shell_grammar.examples` (a few seconds each in CI; `TRIALRUN_FUZZ=full` for many more).
"""

from __future__ import annotations

import shlex

import pytest
from _shell_grammar import SHELLISH, broken_lines, command_lines, disguised_pairs, examples
from hypothesis import given, strategies as st

import trialrun as tr
from trialrun._shell import (
    cannot_read,
    commands_for_allow_list,
    commands_in,
    match_command,
    unknown_at_run_time,
)
from trialrun._shell._analysis import analyse
from trialrun._shell._options import normalise_args
from trialrun._shell._patterns import files_before

#: What a caught exception inside the analysis says (see `_analysis.analyse`): it must never be seen.
CRASHED = "could not be followed ("
PATTERNS = ("rm -rf", "rm", "curl | sh", "git push -f", "chmod -R")


def _every_entry_point(command: str) -> None:
    """Ask every entry point about `command`; none may raise (but the documented ValueError)."""
    for pattern in PATTERNS:
        match_command(pattern, command)
    cannot_read(command)
    unknown_at_run_time(command)
    for documented in (commands_in, commands_for_allow_list):
        try:
            documented(command)
        except ValueError:
            assert cannot_read(command) is not None  # only a line it cannot read
    files_before([command, "sh x.sh"])
    match_command("rm -rf", "sh c.sh; ./c.sh; . ./c.sh", earlier=[command])


def _no_crash(command: str) -> None:
    analysis = analyse(command)
    assert analysis.error is None or not analysis.error.startswith(CRASHED), (command, analysis.error)
    for nested in analysis.nested_errors:
        assert CRASHED not in nested, (command, nested)


@examples(300)
@given(st.text(max_size=200))
def test_never_raises_on_any_text(command: str) -> None:
    _every_entry_point(command)
    _no_crash(command)


@examples(300)
@given(st.text(SHELLISH, max_size=60))
def test_never_raises_on_shell_shaped_text(command: str) -> None:
    _every_entry_point(command)
    _no_crash(command)


@examples(150)
@given(st.one_of(command_lines(), broken_lines()))
def test_never_raises_on_generated_command_lines(command: str) -> None:
    _every_entry_point(command)
    _no_crash(command)


@examples(100)
@given(st.lists(st.text(SHELLISH, max_size=12), min_size=1, max_size=6))
def test_never_raises_on_argv_lists(argv: list[str]) -> None:
    for pattern in PATTERNS:
        match_command(pattern, argv)
    error = analyse(tuple(argv)).error
    assert error is None or not error.startswith(CRASHED), (argv, error)


# -- what cannot be parsed fails closed --------------------------------------------------------------------------


@examples(200)
@given(st.one_of(broken_lines(), st.text(SHELLISH, max_size=40)))
def test_what_cannot_be_parsed_fails_closed(command: str) -> None:
    why = cannot_read(command)
    if why is None:
        return
    for pattern in PATTERNS:
        found = match_command(pattern, command)
        # (fail closed as "cannot parse", or as "runs what is only known at run time" where the part it cannot parse
        # is text only known at run time anyway: `cat <<EOF | sh` of a body with `${...}` in it; or a match of what
        # the part it can read runs)
        assert found.matched and (found.unparsable or found.uncertain or found.segment), (pattern, command, found)
        decision = tr.ToolPolicy(deny_commands=[pattern]).decide("bash", {"command": command})
        assert decision.action == "deny", (pattern, command, decision)
    allowed = tr.ToolPolicy(allow_commands=["ls", "rm", "curl", "git", "chmod", "cat", "echo"])
    assert allowed.decide("bash", {"command": command}).action == "deny", command


def test_the_fail_closed_property_sees_unparsable_lines() -> None:
    """(The property above is not vacuous: the strategies it draws from do produce lines the analyser refuses.)"""
    for line in ("echo 'rm -rf x", "rm -rf $(x", "if true; then rm -rf x", "f() { rm -rf x"):
        assert cannot_read(line) is not None
        assert match_command("rm -rf", line).matched


# -- spellings bash treats as equal are judged equal ---------------------------------------------------------------


def _patterns_for(argv: list[str]) -> list[tuple[str, bool]]:
    """Patterns the plain command matches (its program; with each of its options; with all its words) and ones it
    does not (an option it lacks), each with whether it matches."""
    program, args = argv[0], argv[1:]
    parsed = normalise_args(program, tuple(args))
    if program == "git":  # options after the subcommand are the subcommand's (`git clean -f`)
        sub = next(a for a in args if not a.startswith("-"))
        program, args = f"git {sub}", args[args.index(sub) + 1:]
    options = [a for a in args if a.startswith("-") and a != "-"]
    found = [(program, True), (shlex.join(argv), True)]
    found += [(f"{program} {shlex.quote(option)}", True) for option in options]
    if "i" not in parsed.flags and not program.startswith("git"):
        found.append((f"{program} -i", False))
    found.append(("curl | sh", False) if program != "curl" else ("rm", False))
    return found


@examples(250)
@given(disguised_pairs())
def test_spellings_bash_runs_alike_are_judged_alike(pair: tuple[list[str], str]) -> None:
    argv, spelled = pair
    plain = shlex.join(argv)
    assert cannot_read(spelled) is None, spelled
    assert unknown_at_run_time(spelled) is None, spelled
    for pattern, matches in _patterns_for(argv):
        assert match_command(pattern, plain).matched is matches, (pattern, plain)
        found = match_command(pattern, spelled)
        assert found.matched is matches, (pattern, spelled, found.reason)
        assert not found.uncertain, (pattern, spelled, found.reason)
    ran = {line for line in commands_in(spelled)}
    assert commands_in(plain)[0] in ran, (spelled, ran)


@pytest.mark.parametrize(("spelled", "plain"), [
    ("'rm' -rf x", "rm -rf x"),
    ("r\\m -r\\f x", "rm -rf x"),
    ('"rm" "-rf" x', "rm -rf x"),
    ("env rm -rf x", "rm -rf x"),
    ("command rm -rf x", "rm -rf x"),
    ("sh -c 'rm -rf x'", "rm -rf x"),
    ("$'rm' -rf x", "rm -rf x"),
    ("$'\\x72\\x6d' -rf x", "rm -rf x"),
    ("echo 'rm -rf x' | bash", "rm -rf x"),
    ("f() { rm \"$@\"; }; f -rf x", "rm -rf x"),
])
def test_the_issue_s_spellings(spelled: str, plain: str) -> None:
    """The spellings the issue names, as fixed examples beside the generated ones."""
    assert commands_in(plain)[0] in commands_in(spelled)
    assert match_command("rm -rf", spelled).matched and not match_command("rm -rf", spelled).uncertain
