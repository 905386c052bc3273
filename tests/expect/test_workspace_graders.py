"""The graders of the files an agent left (`expect.workspace`): each has a case where it must FAIL, a passing reason
that says what it examined, and no verdict without looking (a trial that never had a workdir, a file that cannot be
read whole, a pattern that matches nothing: each fails). The verifier's processes are found in /proc after a
timeout (none may be left), its time is measured, and its output is bounded and scrubbed."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.expect._base import Verdict

TASK = {"app.py": "def add(a, b):\n    return a - b\n",
        "test_app.py": "from app import add\nassert add(2, 3) == 5, add(2, 3)\nprint('ok')\n"}


def _trial(invoke: Callable[[Path], None], graders: list[Any], task: dict[str, str] | None = None) -> tr.TrialResult:
    """One trial on a workdir holding `task`, the agent being `invoke(workdir)`."""
    def setup(ctx: tr.TrialContext) -> None:
        for rel, text in (TASK if task is None else task).items():
            path = ctx.workdir / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    def run(ctx: tr.TrialContext) -> str:
        invoke(ctx.workdir)
        return "done"

    return tr.evaluate([tr.Case("c", run, setup=setup, expect_outcome=graders)]).cases[0].trials[0]


def _fix(root: Path) -> None:
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")


def _verdicts(trial: tr.TrialResult) -> list[tuple[bool, str]]:
    return [(v.passed, v.reason) for v in trial.verdicts]


# -- verify ------------------------------------------------------------------------------------------------------
def test_verify_passes_on_exit_0_and_fails_otherwise_with_the_output_shown() -> None:
    fixed = _trial(_fix, [expect.verify("python3 test_app.py")])
    broken = _trial(lambda root: None, [expect.verify("python3 test_app.py")])
    [(ok, why)] = _verdicts(fixed)
    assert ok and why.startswith("`python3 test_app.py` exited 0 in ") and why.endswith("; output: ok")
    assert fixed.verdicts[0].details["exit_code"] == 0 and fixed.verdicts[0].details["output"].strip() == "ok"
    [(ok, why)] = _verdicts(broken)
    assert not ok and "exited 1" in why and "AssertionError: -1" in why


def test_a_verifier_that_cannot_start_fails() -> None:
    [(ok, why)] = _verdicts(_trial(_fix, [expect.verify("no-such-verifier-34 --check")]))
    assert not ok and "could not start: no such program (exit 127)" in why and "not found" in why


def test_a_hung_verifier_costs_its_timeout_and_no_more_and_leaves_nothing_running() -> None:
    marker = f"34{uuid.uuid4().int % 10**6:06}"
    command = f"sleep 600.{marker} & sh -c 'sleep 601.{marker}'"
    started = time.monotonic()
    trial = _trial(_fix, [expect.verify(command, timeout_s=1.5)])
    took = time.monotonic() - started
    [(ok, why)] = _verdicts(trial)
    assert not ok and "did not finish within its timeout of 1.5s and was stopped" in why
    assert trial.verdicts[0].details["timed_out"] is True and trial.verdicts[0].details["killed"]
    spent = trial.verdicts[0].details["duration_s"]
    assert 1.5 <= spent < 1.5 + 1.0, spent  # the timeout, and the kill: not the 600 s it asked for
    assert took < 1.5 + 5.0, took  # the whole trial (a first trial also starts the run's threads)
    alive = [pid for pid in os.listdir("/proc") if pid.isdigit() and marker.encode() in _cmdline(pid)]
    assert alive == []


def _cmdline(pid: str) -> bytes:
    try:
        return Path("/proc", pid, "cmdline").read_bytes()
    except OSError:
        return b""


def test_the_verifier_output_is_bounded_and_scrubbed() -> None:
    key = "sk-ant-api03-" + "Zx9" * 30
    task = {**TASK, "leak.txt": f"token={key}\n"}
    trial = _trial(_fix, [expect.verify("cat leak.txt; yes 0123456789 | head -c 200000", max_output=2000)], task)
    details = trial.verdicts[0].details
    assert key not in details["output"] and key not in trial.verdicts[0].reason and "REDACTED" in details["output"]
    assert len(details["output"]) < 2200 and "characters cut" in details["output"]


def test_verify_without_a_workdir_fails_without_running_anything() -> None:
    case = tr.Case("plain", lambda ctx: "hi", expect_outcome=[expect.verify("true")])
    [verdict] = tr.evaluate([case]).cases[0].trials[0].verdicts
    assert not verdict.passed and verdict.reason == "the trial had no workdir: nothing to look at; the command was not run"
    [alone] = tr.expect.check([expect.verify("true")], "output")
    assert not alone.passed and "no trial context" in alone.reason


def test_the_rubric_takes_its_output_quality_from_verify_which_runs_once(tmp_path: Path) -> None:
    counter = tmp_path / "runs.txt"
    check = expect.verify(f"echo run >> {counter}; python3 test_app.py")
    score = tr.expect.rubric.rubric(max_turns=3, success_criteria="mentions unicorns", quality_from=check)
    fixed = _trial(_fix, [score, check])
    assert counter.read_text() == "run\n"  # the rubric asked, the grader reused its verdict
    [rubric, verdict] = fixed.verdicts
    assert verdict.passed and rubric.details["sub_scores"]["output_quality"] == 0.5
    assert rubric.details["quality_by"] == "verify" and f"from {check.label}: passed" in rubric.reason
    broken = _trial(lambda root: None, [score, check])
    assert broken.verdicts[0].details["sub_scores"]["output_quality"] == 0.0 and not broken.passed


def test_verify_runs_in_the_sandbox_it_is_given(tmp_path: Path) -> None:
    from trialrun._contain.sandbox import bwrap_problem

    if bwrap_problem() is not None and not os.environ.get("CI"):
        pytest.skip(f"bubblewrap: {bwrap_problem()}")
    host = tmp_path / "host-only.txt"
    host.write_text("on the host\n")
    look = f"test -e {host}"
    outside = _trial(_fix, [expect.verify(look)])
    inside = _trial(_fix, [expect.verify(look, sandbox="bwrap"), expect.verify("/usr/bin/python3 test_app.py",
                                                                                sandbox="bwrap")])
    assert outside.verdicts[0].passed
    assert [v.passed for v in inside.verdicts] == [False, True]  # the host's /tmp is not there; the workdir is
    assert "in the sandbox (bwrap)" in inside.verdicts[1].reason


def test_a_process_agent_s_sandbox_is_the_one_verify_runs_in(tmp_path: Path) -> None:
    from trialrun._contain.sandbox import bwrap_problem

    if bwrap_problem() is not None and not os.environ.get("CI"):
        pytest.skip(f"bubblewrap: {bwrap_problem()}")
    agent = tr.ProcessAgent(["sh", "-c", "echo fixed > app.py"], sandbox="bwrap")
    host = tmp_path / "host-only.txt"
    host.write_text("x")

    def invoke(ctx: tr.TrialContext) -> Any:
        return agent(ctx.prompt or "fix", ctx, model=ctx.scripted([tr.reply("done")]))

    case = tr.Case("c", invoke, setup=lambda ctx: (ctx.workdir / "app.py").write_text("x"),
                   expect_outcome=[expect.verify(f"test ! -e {host} && grep -q fixed app.py")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    [verdict] = trial.verdicts
    assert trial.error is None and [(f.path, f.change) for f in trial.files.files] == [("app.py", "changed")]
    assert verdict.passed and "in the sandbox (bwrap" in verdict.reason, verdict.reason


# -- one file ------------------------------------------------------------------------------------------------------
def test_file_exists_passes_on_a_regular_file_and_fails_on_anything_else(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("x")

    def leave(root: Path) -> None:
        (root / "folder.py").mkdir()
        os.symlink(outside, root / "link.py")
        os.mkfifo(root / "pipe.py")
        (root / "test_app.py").unlink()

    graders = [expect.file_exists(p) for p in ("app.py", "nope.py", "folder.py", "link.py", "pipe.py", "test_app.py")]
    verdicts = _verdicts(_trial(leave, graders))
    assert verdicts[0] == (True, "app.py is a regular file in the workdir")
    assert verdicts[1] == (False, "no file nope.py in the workdir")
    assert not verdicts[2][0] and "directory" in verdicts[2][1]
    assert not verdicts[3][0] and "outside the workspace" in verdicts[3][1]
    assert not verdicts[4][0] and "not a regular file" in verdicts[4][1]
    assert verdicts[5] == (False, "no file test_app.py in the workdir (the agent removed it)")


def test_file_contains_and_file_matches_read_the_whole_file_or_fail() -> None:
    def leave(root: Path) -> None:
        _fix(root)
        (root / "big.py").write_text("a + b\n" * 100)
        (root / "latin1.py").write_bytes(b"caf\xe9 a + b\n")

    graders = [expect.file_contains("app.py", "a + b"), expect.file_contains("app.py", "a - b"),
               expect.file_matches("app.py", r"(?m)^\s+return a \+ b$"), expect.file_matches("app.py", r"^\s+return"),
               expect.file_contains("big.py", "a + b", max_bytes=100), expect.file_contains("latin1.py", "a + b"),
               expect.file_contains("missing.py", "a")]
    verdicts = _verdicts(_trial(leave, graders))
    assert verdicts[0] == (True, "app.py does contain 'a + b' (at line 2; 32 characters examined)")
    assert verdicts[1] == (False, "app.py does not contain 'a - b' (32 characters examined)")
    assert verdicts[2][0] and "at line 2" in verdicts[2][1]
    assert verdicts[3][0] is False  # `^` without MULTILINE: only the file's start
    assert not verdicts[4][0] and "600 bytes, more than the 100 bytes a grader reads" in verdicts[4][1]
    assert not verdicts[5][0] and "not UTF-8 text" in verdicts[5][1]
    assert verdicts[6] == (False, "no file missing.py in the workdir")


def test_a_path_that_leads_out_of_the_workdir_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("a + b")

    def leave(root: Path) -> None:
        (root / "sub").mkdir()
        os.symlink(tmp_path, root / "sub" / "up")

    [(ok, why)] = _verdicts(_trial(leave, [expect.file_contains("sub/up/secret.txt", "a + b")]))
    assert not ok and "outside the workspace" in why


# -- judged on the workspace diff ------------------------------------------------------------------------------------
def test_file_unchanged_fails_on_a_change_a_removal_an_addition_and_a_pattern_that_matches_nothing() -> None:
    def cheat(root: Path) -> None:
        (root / "test_app.py").write_text("print('ok')\n")

    def delete(root: Path) -> None:
        (root / "test_app.py").unlink()

    def add(root: Path) -> None:
        (root / "test_extra.py").write_text("x\n")

    ok = _verdicts(_trial(_fix, [expect.file_unchanged("test_app.py"), expect.file_unchanged("test_*.py")]))
    assert ok == [(True, "test_app.py unchanged (1 file matched of 2 examined)")] * 2
    for change, shown in ((cheat, "test_app.py (changed)"), (delete, "test_app.py (removed)"),
                          (add, "test_extra.py (added)")):
        [(passed, why)] = _verdicts(_trial(change, [expect.file_unchanged("test_*.py")]))
        assert not passed and why.startswith(f"the agent touched {shown}")
    [(passed, why)] = _verdicts(_trial(_fix, [expect.file_unchanged("tests/*.py")]))
    assert not passed and why == "no file matches 'tests/*.py' (2 file(s) examined): nothing to check"


def test_changed_only_fails_on_litter_and_names_it() -> None:
    def litter(root: Path) -> None:
        _fix(root)
        (root / "notes.txt").write_text("todo\n")

    verdicts = _verdicts(_trial(litter, [expect.changed_only(["app.py"]), expect.changed_only(["app.py", "*.txt"])]))
    assert verdicts[0] == (False, "the agent also changed notes.txt (added); allowed: app.py")
    assert verdicts[1] == (True, "only app.py (changed), notes.txt (added) changed (allowed: app.py, *.txt); 3 "
                                 "file(s) examined")
    [(passed, why)] = _verdicts(_trial(lambda root: None, [expect.changed_only("app.py")]))
    assert passed and why == "nothing changed (allowed: app.py); 2 file(s) examined"


def test_the_diff_graders_never_pass_over_a_workdir_that_was_never_compared() -> None:
    graders = [expect.changed_only("app.py"), expect.file_unchanged("app.py"), expect.file_exists("app.py"),
               expect.file_contains("app.py", "x")]
    trial = tr.evaluate([tr.Case("plain", lambda ctx: "hi", expect_outcome=graders)]).cases[0].trials[0]
    assert trial.files is None and [v.passed for v in trial.verdicts] == [False] * 4
    assert trial.verdicts[0].reason.startswith("no workspace diff: the trial had no workdir")
    assert trial.verdicts[2].reason == "cannot tell: the trial had no workdir: nothing to look at"


def test_a_pattern_into_a_folder_that_is_not_examined_fails() -> None:
    def leave(root: Path) -> None:
        (root / ".git" / "config").write_text("x")

    [(ok, why)] = _verdicts(_trial(leave, [expect.file_unchanged(".git/config")],
                                   {**TASK, ".git/config": "y"}))
    assert not ok and why.startswith(".git/config was not examined: .git: a folder not read")


def test_the_file_graders_judge_a_stored_run_from_its_diff_where_it_holds_the_answer() -> None:
    def work(root: Path) -> None:
        _fix(root)
        (root / "NEW.md").write_text("# new\nfile\n")
        (root / "test_app.py").unlink()

    stored = _trial(work, [expect.changed_only("app.py")]).as_run()
    checks = [expect.file_unchanged("test_app.py"), expect.changed_only(["app.py", "*.md"]),
              expect.file_exists("app.py"), expect.file_exists("test_app.py"), expect.file_contains("NEW.md", "file"),
              expect.file_contains("app.py", "a + b")]
    verdicts = [(v.passed, v.reason) for v in tr.expect.check(checks, stored)]
    assert [ok for ok, _ in verdicts] == [False, False, True, False, True, False]
    assert "was a file after the agent ended, by the stored workspace diff (the agent changed it)" in verdicts[2][1]
    assert verdicts[4][1] == "NEW.md does contain 'file' (at line 2; read from the stored workspace diff)"
    assert verdicts[5][1].startswith("cannot tell: the stored workspace diff does not hold the whole text of app.py")


def test_every_workspace_grader_can_fail() -> None:
    """One trial where each of them fails (a grader that cannot fail checks nothing)."""
    def bad(root: Path) -> None:
        (root / "test_app.py").write_text("raise SystemExit(3)\n")
        (root / "app.py").unlink()

    graders = [expect.verify("python3 test_app.py"), expect.file_exists("app.py"),
               expect.file_contains("app.py", "a + b"), expect.file_matches("app.py", "a"),
               expect.file_unchanged("test_app.py"), expect.changed_only("app.py")]
    verdicts = _trial(bad, graders).verdicts
    assert [v.passed for v in verdicts] == [False] * 6
    assert all(isinstance(v, Verdict) and v.grader.startswith(g.label.split("(")[0] + "(") for v, g in
               zip(verdicts, graders))
