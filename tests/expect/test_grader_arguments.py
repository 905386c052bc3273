"""A grader built with a wrong argument fails where it is built, before anything runs, saying which argument."""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

import pytest

import trialrun as tr
from trialrun import expect

BAD: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: expect.contains(3), TypeError, "expect.contains: text must be a string, got int 3"),
    (lambda: expect.not_contains(None), TypeError, "expect.not_contains: text must be a string, got NoneType None"),
    (lambda: expect.matches("("), ValueError, "expect.matches: '(' is not a regular expression: missing ), *"),
    (lambda: expect.matches(3), TypeError, "expect.matches: pattern must be a string, got int 3"),
    (lambda: expect.satisfies("yes"), TypeError, "expect.satisfies: fn must be callable (output -> bool), got str"),
    (lambda: expect.ended(1), TypeError, "expect.ended: a status must be a string, got int 1"),
    (lambda: expect.called(3), TypeError, "expect.called: tool must be a string, got int 3"),
    (lambda: expect.called("x", args="path"), TypeError, "expect.called: args must be a mapping *, got str"),
    (lambda: expect.called("x", times="2"), TypeError, "expect.called: times must be a whole number, got str '2'"),
    (lambda: expect.called("x", at_least=-1), ValueError, "expect.called: at_least must not be negative, got -1"),
    (lambda: expect.called("x", at_most=True), TypeError, "expect.called: at_most must be a whole number, got bool True"),
    (lambda: expect.called("x", at_least=3, at_most=1), ValueError, "expect.called: at_least=3 is more than at_most=1; it could never pass"),
    (lambda: expect.not_called(None), TypeError, "expect.not_called: tool must be a string, got NoneType None"),
    (lambda: expect.called_in_order("abc"), TypeError, "expect.called_in_order: steps must be a list *, got str"),
    (lambda: expect.trajectory_matches("read_file"), TypeError, "expect.trajectory_matches: reference_calls must be a list of calls, got str"),
    (lambda: expect.trajectory_matches([{"tool": "x"}]), TypeError, "a reference call given as a mapping needs a 'name' (the tool's), got {'tool': 'x'}"),
    (lambda: expect.max_turns("3"), TypeError, "expect.max_turns: n must be a whole number, got str '3'"),
    (lambda: expect.max_tool_calls(-1), ValueError, "expect.max_tool_calls: n must not be negative, got -1"),
    (lambda: expect.never_ran(["rm", "-rf"]), TypeError, "expect.never_ran: command must be a string, got list *"),
    (lambda: expect.max_cost_usd("0.1"), TypeError, "expect.max_cost_usd: limit must be a number of US dollars, got str '0.1'"),
    (lambda: expect.max_cost_usd(-1), ValueError, "expect.max_cost_usd: limit must not be negative, got -1"),
    (lambda: expect.verify(["pytest"]), TypeError, "expect.verify: command must be a string, got list *"),
    (lambda: expect.verify("  "), ValueError, "expect.verify: give the command to run *"),
    (lambda: expect.verify("pytest", timeout_s=0), ValueError, "expect.verify: timeout_s must be a number of seconds above 0, got 0"),
    (lambda: expect.verify("pytest", sandbox="jail"), ValueError, "expect.verify: sandbox: sandbox must be one of none, bwrap, auto, got 'jail'"),
    (lambda: expect.file_exists(None), TypeError, "expect.file_exists: path must be a string, got NoneType None"),
    (lambda: expect.file_exists("/etc/passwd"), ValueError, "expect.file_exists: path '/etc/passwd' must be relative to the workdir*"),
    (lambda: expect.file_contains("../x", "a"), ValueError, "expect.file_contains: path '../x' must be relative to the workdir*"),
    (lambda: expect.file_contains("a.py", ""), ValueError, "expect.file_contains: every file contains the empty text*"),
    (lambda: expect.file_matches("a.py", "("), ValueError, "expect.file_matches: '(' is not a regular expression*"),
    (lambda: expect.file_matches("a.py", "a", max_bytes=0), ValueError, "expect: max_bytes must be a whole number of bytes*"),
    (lambda: expect.file_unchanged("."), ValueError, "expect.file_unchanged: path must name a file in the workdir, got '.'"),
    (lambda: expect.changed_only([]), TypeError, "expect.changed_only: globs must be a path or glob, or a non-empty list*"),
    (lambda: expect.changed_only(["~/x"]), ValueError, "expect.changed_only: a glob '~/x' must be relative to the workdir*"),
]


@pytest.mark.parametrize(("build", "error", "message"), BAD, ids=[m.split(":")[0] + f"-{i}" for i, (_, _, m) in enumerate(BAD)])
def test_a_wrong_argument_is_an_error_when_the_grader_is_built(build: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        build()
    assert fnmatchcase(str(caught.value), message), str(caught.value)


def test_good_arguments_still_build() -> None:
    graders = [
        expect.contains("a"), expect.matches(r"\d+"), expect.called("read_*", args={"path": "a"}, times=0),
        expect.called_in_order(["a", ("b", {"x": 1})]), expect.max_turns(0), expect.max_cost_usd(0),
        expect.ended("completed", "max_turns"), expect.trajectory_matches([("a", None)]),
    ]
    case = tr.Case(name="ok", invoke=lambda ctx: "a1", expect_outcome=graders)
    assert len(case.graders) == len(graders)


def test_a_mistyped_grader_name_says_which_was_meant() -> None:
    """`expect.calld`: an AttributeError naming the grader meant and listing the graders, in its message (what a
    test runner shows); a name close to none lists them without a guess; the module's own dunders stay absent."""
    import trialrun as tr

    with pytest.raises(AttributeError) as mistyped:
        tr.expect.calld  # noqa: B018
    assert str(mistyped.value).startswith("trialrun.expect has no grader 'calld'; did you mean expect.called? (graders: ")
    assert "never_ran" in str(mistyped.value)
    with pytest.raises(AttributeError, match=r"no grader 'zzz' \(graders: equals, "):
        tr.expect.zzz  # noqa: B018
    assert not hasattr(tr.expect, "__wrapped__")
