"""The runner: sync and async callables, concurrency and ordering, timeouts, teardown, cancellation."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

import trialrun as tr
from trialrun import expect


def _ctrl_c_on() -> None:
    """In the child: Ctrl-C on, even when this test run itself was started with SIGINT ignored (`nohup ... &`)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _case(name: str = "c", invoke=lambda ctx: "hello", **kwargs) -> tr.Case:
    kwargs.setdefault("expect_outcome", [expect.contains("hello")])
    return tr.Case(name=name, invoke=invoke, **kwargs)


def test_async_invoke_setup_and_teardown() -> None:
    log: list[str] = []

    async def setup(ctx: tr.TrialContext) -> None:
        ctx.state["greeting"] = "hello"
        log.append("setup")

    async def invoke(ctx: tr.TrialContext) -> str:
        await asyncio.sleep(0)
        return ctx.state["greeting"]

    async def teardown(ctx: tr.TrialContext) -> None:
        log.append("teardown")

    report = tr.evaluate([_case("async", invoke, setup=setup, teardown=teardown)], trials=2)
    assert report.cases[0].passed and log.count("teardown") == 2


def test_aevaluate_runs_on_the_current_loop() -> None:
    async def main() -> tr.RunReport:
        return await tr.aevaluate([_case()], trials=2)

    assert asyncio.run(main()).cases[0].pass_at_1 == 1.0


def test_evaluate_inside_a_running_loop() -> None:
    async def main() -> tr.RunReport:
        return tr.evaluate([_case()])

    assert asyncio.run(main()).passed_case_count == 1


def test_results_are_ordered_by_case_then_trial_whatever_order_they_finish_in() -> None:
    def slow_first(ctx: tr.TrialContext) -> str:
        time.sleep(0.02 * (4 - ctx.trial))
        return "hello"

    report = tr.evaluate([_case("a", slow_first), _case("b", slow_first)], trials=3, concurrency=6)
    assert [c.name for c in report.cases] == ["a", "b"]
    assert [[t.trial for t in c.trials] for c in report.cases] == [[1, 2, 3], [1, 2, 3]]


def test_trials_run_concurrently_up_to_the_limit() -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def invoke(ctx: tr.TrialContext) -> str:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.03)
        with lock:
            active -= 1
        return "hello"

    started = time.perf_counter()
    tr.evaluate([_case(f"c{i}", invoke) for i in range(8)], trials=2, concurrency=4)
    assert peak == 4
    assert time.perf_counter() - started < 16 * 0.03  # not serial


def test_async_trials_overlap() -> None:
    """Counted, not timed (a loaded machine can stretch any wall-clock bound): how many invokes were in flight at once."""
    in_flight, most = 0, 0

    async def invoke(ctx: tr.TrialContext) -> str:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.05)
        in_flight -= 1
        return "hello"

    report = tr.evaluate([_case(f"c{i}", invoke) for i in range(20)], trials=2, concurrency=40)
    assert report.passed_case_count == 20
    assert most >= 20, most  # 40 trials at concurrency 40, each asleep 50 ms: serially it would be 1


def test_timeout_fails_the_trial_and_teardown_still_runs() -> None:
    torn: list[int] = []

    async def hang(ctx: tr.TrialContext) -> str:
        await asyncio.sleep(10)
        return "hello"

    case = _case("hangs", hang, timeout_s=0.05, teardown=lambda ctx: torn.append(ctx.trial))
    started = time.perf_counter()
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert time.perf_counter() - started < 2
    assert not trial.passed and trial.error.type == "TimeoutError"
    assert trial.error.message == "trial timed out after 0.05s"
    assert torn == [1]


def test_sync_timeout() -> None:
    case = _case("sleeps", lambda ctx: time.sleep(0.5) or "hello", timeout_s=0.05)
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.error is not None and trial.error.type == "TimeoutError"


@pytest.mark.parametrize("phase", ["setup", "invoke"])
def test_errors_name_their_phase_and_teardown_runs(phase: str) -> None:
    torn: list[int] = []

    def broken(ctx: tr.TrialContext) -> str:
        raise KeyError("missing")

    hooks = {"setup": broken} if phase == "setup" else {"invoke": broken}
    case = _case("broken", **{"invoke": lambda ctx: "hello", **hooks}, teardown=lambda ctx: torn.append(1))
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.error.phase == phase and trial.error.type == "KeyError"
    assert torn == [1]


@pytest.mark.parametrize("phase", ["setup", "invoke", "invoke without setup"])
def test_async_errors_name_their_phase_and_a_workdir_without_teardown_is_removed(phase: str) -> None:
    """An async invoke without setup is awaited by the trial itself (no coroutine between): its error is still the
    invoke's, with the agent's frame in the traceback; a trial with nothing to tear down still loses its workdir."""
    seen: list[Path] = []

    async def fine(ctx: tr.TrialContext) -> None:
        seen.append(ctx.workdir)

    async def broken(ctx: tr.TrialContext) -> str:
        seen.append(ctx.workdir)
        raise KeyError("missing")

    hooks = {"setup": broken, "invoke": fine} if phase == "setup" else {"invoke": broken}
    if phase == "invoke":
        hooks["setup"] = fine
    trial = tr.evaluate([_case("broken", **hooks)], trials=2).cases[0].trials[1]
    assert (trial.error.phase, trial.error.type, trial.error.message) == (phase.split()[0], "KeyError", "'missing'")
    assert "in broken\n" in trial.error.traceback and "test_runner.py" in trial.error.traceback
    assert len(set(seen)) == 2 and not any(p.exists() for p in seen)


def test_a_grader_that_raises_fails_the_trial_and_the_other_graders_still_run() -> None:
    def bad_grader(run, ctx):
        raise ZeroDivisionError("oops")

    case = _case("g", expect_outcome=[bad_grader, expect.contains("hello")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert not trial.passed
    assert (trial.error.phase, trial.error.type, trial.error.message) == ("grade", "ZeroDivisionError", "oops")
    assert "bad_grader" in trial.error.traceback and "test_runner.py" in trial.error.traceback
    assert trial.verdicts[0].reason.startswith("grader raised ZeroDivisionError: oops at ")
    assert "test_runner.py" in trial.verdicts[0].reason
    assert trial.verdicts[1].passed and trial.outcome_passed is False


@pytest.mark.parametrize("second_is_async", [True, False])
def test_the_first_grader_that_raises_is_the_trial_s_error(second_is_async: bool) -> None:
    # graded on the loop (async) or in a worker thread (sync, graded first): the error is the first grader's in order
    async def first(run, ctx):
        raise KeyError("first")

    async def second_async(run, ctx):
        raise ValueError("second")

    def second_sync(run, ctx):
        raise ValueError("second")

    case = _case("g", expect_outcome=[expect.contains("hello"), first, second_async if second_is_async else second_sync])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert (trial.error.phase, trial.error.type) == ("grade", "KeyError")
    assert [v.passed for v in trial.verdicts] == [True, False, False]
    assert [v.reason.split(" at ")[0] for v in trial.verdicts[1:]] == ["grader raised KeyError: 'first'",
                                                                      "grader raised ValueError: second"]


def test_a_teardown_that_raises_fails_the_trial_and_keeps_its_grades() -> None:
    case = _case("t", teardown=lambda ctx: 1 / 0)
    report = tr.evaluate([case])
    trial = report.cases[0].trials[0]
    assert not trial.passed and not report.cases[0].passed
    assert trial.error is None and trial.outcome_passed is True  # the grade is not hidden
    assert (trial.teardown_error.phase, trial.teardown_error.type) == ("teardown", "ZeroDivisionError")


def test_workdir_is_fresh_per_trial_and_removed_after() -> None:
    seen: list[Path] = []

    def invoke(ctx: tr.TrialContext) -> str:
        assert not any(ctx.workdir.iterdir())
        (ctx.workdir / "f.txt").write_text("x")
        seen.append(ctx.workdir)
        return "hello"

    tr.evaluate([_case("w", invoke)], trials=2)
    assert len(set(seen)) == 2 and not any(p.exists() for p in seen)


def test_invoke_may_return_a_run_or_a_value() -> None:
    trajectory = tr.Trajectory(turns=[tr.Turn(text="hi", usage=tr.Usage(10, 2))])
    run_case = _case("run", lambda ctx: tr.Run(output="hello", trajectory=trajectory, cost_usd=0.001))
    report = tr.evaluate([run_case, _case("value")])
    trial = report.case("run").trials[0]
    assert trial.trajectory == trajectory and trial.usage == tr.Usage(10, 2) and trial.cost_usd == 0.001
    value = report.case("value").trials[0]
    assert value.output == "hello" and value.trajectory == tr.Trajectory()


def test_outputs_are_kept_json_safe() -> None:
    class Thing:
        def __repr__(self) -> str:
            return "<Thing>"

    report = tr.evaluate([_case("o", lambda ctx: {"a": (1, 2), "t": Thing(), "hello": True})])
    assert report.cases[0].trials[0].output == {"a": [1, 2], "t": "<Thing>", "hello": True}
    tr.RunReport.model_validate_json(report.model_dump_json())


def test_per_case_trials_override() -> None:
    report = tr.evaluate([_case("once", trials=1), _case("default")], trials=3)
    assert [len(c.trials) for c in report.cases] == [1, 3]


def test_trials_must_be_positive() -> None:
    with pytest.raises(ValueError, match="trials must be a positive integer"):
        tr.evaluate([_case()], trials=0)


def test_nothing_to_grade_is_an_error_not_a_passing_run() -> None:
    with pytest.raises(tr.CaseError, match="nothing to grade: no cases were given"):
        tr.evaluate([])
    with pytest.raises(tr.CaseError, match=r"nothing to grade: every selected case is skipped \('c'"):
        tr.evaluate([_case("c", mode="live_canary")])
    with pytest.raises(tr.CaseError, match="nothing to grade"):
        tr.evaluate([_case("c", mode="live_canary"), _case("d")], names=["c"])


def test_a_report_that_graded_nothing_never_passes() -> None:
    report = tr.RunReport.build([tr.CaseResult(name="c", skipped=True, skip_reason="live canary")], trial_count=1,
                                started_at=datetime.now(timezone.utc), duration_s=0.0)
    assert report.pass_at_1 is None and report.pass_pow_k is None and report.failed_case_count == 0
    assert report.passed is False
    assert tr.evaluate([_case("d")]).passed is True


def test_cancelling_the_run_runs_teardowns_and_keeps_finished_cases() -> None:
    torn: list[str] = []
    started = asyncio.Event()

    async def quick(ctx: tr.TrialContext) -> str:
        return "hello"

    async def slow(ctx: tr.TrialContext) -> str:
        started.set()
        await asyncio.sleep(10)
        return "hello"

    async def teardown(ctx: tr.TrialContext) -> None:
        await asyncio.sleep(0.01)  # teardown that itself awaits must still complete
        torn.append(ctx.case.name)

    async def main() -> tr.RunReport:
        task = asyncio.ensure_future(
            tr.aevaluate([_case("quick", quick, teardown=teardown), _case("slow", slow, teardown=teardown)], concurrency=2)
        )
        await started.wait()
        while "quick" not in torn:  # cancelled while quick's teardown still runs: quick finished, and is kept
            await asyncio.sleep(0.001)
        task.cancel()
        if sys.version_info >= (3, 11):
            with pytest.raises(tr.EvaluationInterrupted) as info:
                await task
            return info.value.report
        # Python 3.10's Task replaces what a cancelled task raised by a bare CancelledError; ours is its context
        with pytest.raises(asyncio.CancelledError) as cancelled:
            await task
        assert isinstance(cancelled.value.__context__, tr.EvaluationInterrupted)
        return cancelled.value.__context__.report

    report = asyncio.run(main())
    assert sorted(torn) == ["quick", "slow"]
    assert report.status == "interrupted"
    assert [c.name for c in report.cases] == ["quick"] and report.unfinished_cases == ["slow"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_in_evaluate_runs_teardown_and_raises_with_the_partial_report(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    marker = tmp_path / "torn.txt"
    script.write_text(textwrap.dedent(f"""
        import sys, time, trialrun as tr
        from trialrun import expect
        def invoke(ctx):
            if ctx.case.name == "slow":
                print("started", flush=True)
                time.sleep(3)
            return "hello"
        def teardown(ctx):
            with open({str(marker)!r}, "a") as f:
                f.write(ctx.case.name + "\\n")
        cases = [tr.Case(name=n, invoke=invoke, teardown=teardown, expect_outcome=[expect.contains("hello")])
                 for n in ("fast", "slow")]
        try:
            tr.evaluate(cases, concurrency=1)
        except KeyboardInterrupt as exc:
            print("interrupted", exc.report.status, [c.name for c in exc.report.cases], flush=True)
            sys.exit(130)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_on)
    assert proc.stdout.readline().strip() == "started"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 130
    assert "interrupted interrupted ['fast']" in out
    assert sorted(marker.read_text().split()) == ["fast", "slow"]


def test_a_run_that_ended_in_error_fails_the_trial_with_the_error() -> None:
    def invoke(ctx: tr.TrialContext) -> tr.Run:
        return tr.Run(output="", status="error", error="provider answered HTTP 401: invalid api key")

    case = tr.Case(name="e", invoke=invoke, expect_outcome=[expect.satisfies(lambda out: True, "anything")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert not trial.passed and trial.outcome_passed is True
    assert (trial.error.phase, trial.error.type, trial.error.message) == (
        "model", "ModelError", "provider answered HTTP 401: invalid api key"
    )


def test_a_case_that_grades_the_ending_itself_decides() -> None:
    def invoke(ctx: tr.TrialContext) -> tr.Run:
        return tr.Run(output="", status="error", error="provider answered HTTP 500")

    case = tr.Case(name="e", invoke=invoke, expect_outcome=[expect.ended("error")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed and trial.error is None


def test_an_agent_that_calls_sys_exit_fails_its_trial_not_the_run() -> None:
    import sys

    def sync_exit(ctx: tr.TrialContext) -> str:
        sys.exit(3)

    async def async_exit(ctx: tr.TrialContext) -> str:
        sys.exit(4)

    torn_down: list[str] = []
    cases = [_case(name, invoke=fn, teardown=lambda ctx, n=name: torn_down.append(n))
             for name, fn in (("sync", sync_exit), ("async", async_exit))] + [_case("fine")]
    report = tr.evaluate(cases, trials=2)
    errors = [(c.name, t.error.type, t.error.phase) for c in report.cases[:2] for t in c.trials]
    assert errors == [("sync", "SystemExit", "invoke")] * 2 + [("async", "SystemExit", "invoke")] * 2
    assert report.cases[2].passed and sorted(torn_down) == ["async", "async", "sync", "sync"]


def test_a_filter_that_selects_nothing_is_an_error_not_a_green_run() -> None:
    cases = [_case("reads notes", tags=["files"]), _case("writes notes", tags=["files"])]
    with pytest.raises(tr.CaseError) as caught:
        tr.evaluate(cases, names=["read notes"])
    assert [str(p) for p in caught.value.problems] == [
        "field 'names': no case is named 'read notes' (did you mean 'reads notes'?)"
    ]
    with pytest.raises(tr.CaseError, match=r"no case carries tag 'fils' \(tags: files\)"):
        tr.evaluate(cases, tags=["fils"])
    assert tr.evaluate(cases, tags=["files", "other"]).case_count == 2  # one known tag is enough


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_second_ctrl_c_gives_up_on_a_hanging_teardown(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import time, trialrun as tr
        from trialrun import expect
        def teardown(ctx):
            print("tearing down", flush=True)
            time.sleep(60)  # a teardown that hangs
        case = tr.Case(name="stuck", invoke=lambda ctx: "hello", teardown=teardown,
                       expect_outcome=[expect.contains("hello")])
        try:
            tr.evaluate([case])
        except KeyboardInterrupt as exc:
            print("gave up", type(exc).__name__, flush=True)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_on)
    assert proc.stdout.readline().strip() == "tearing down"
    proc.send_signal(signal.SIGINT)  # the first asks the run to stop; the teardown still hangs
    for _ in range(50):  # then press again (two signals close together may reach Python as one)
        try:
            out, _ = proc.communicate(timeout=0.3)
            break
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
    else:
        proc.kill()
        raise AssertionError("the second Ctrl-C did not end the run")
    assert "gave up KeyboardInterrupt" in out


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_reaches_an_evaluate_called_inside_a_running_loop(tmp_path: Path) -> None:
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import asyncio, time, trialrun as tr
        from trialrun import expect
        def invoke(ctx):
            print("started", flush=True)
            time.sleep(2)
            return "hello"
        async def main():  # a notebook or an async test calling the synchronous API
            case = tr.Case(name="slow", invoke=invoke, expect_outcome=[expect.contains("hello")])
            try:
                tr.evaluate([case])
            except tr.EvaluationInterrupted as exc:
                print("interrupted", exc.report.status, flush=True)
        asyncio.run(main())
    """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_on)
    assert proc.stdout.readline().strip() == "started"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=20)
    assert "interrupted interrupted" in out


def test_an_on_trial_callback_that_raises_stops_the_run_with_every_teardown() -> None:
    torn: list[str] = []

    async def slow(ctx: tr.TrialContext) -> str:
        await asyncio.sleep(0.5 if ctx.case.name == "slow" else 0)
        return "hello"

    def on_trial(case: tr.Case, result: object) -> None:
        raise RuntimeError("progress display broke")

    cases = [_case(n, slow, teardown=lambda ctx: torn.append(ctx.case.name)) for n in ("fast", "slow")]
    with pytest.raises(RuntimeError, match="progress display broke"):
        tr.evaluate(cases, on_trial=on_trial, concurrency=2)
    assert sorted(torn) == ["fast", "slow"]


def test_slow_synchronous_graders_of_different_trials_run_side_by_side() -> None:
    def slow_grader(run: tr.Run) -> bool:
        time.sleep(0.3)
        return True

    cases = [_case(f"c{i}", expect_outcome=[slow_grader, expect.contains("hello")]) for i in range(4)]
    started = time.perf_counter()
    report = tr.evaluate(cases, concurrency=4)
    assert report.passed_case_count == 4
    assert time.perf_counter() - started < 1.0  # four 0.3 s graders, not one after another (1.2 s)


def test_a_trial_that_raises_keeps_the_trajectory_and_spend_it_made() -> None:
    import httpx

    def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.reply("one", usage=tr.Usage(100, 10)), tr.reply("two", usage=tr.Usage(200, 20))])
        with httpx.Client(transport=model) as client:
            for _ in range(2):
                client.post("https://api.openai.com/v1/chat/completions",
                            json={"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]})
        raise RuntimeError("the agent crashed after two model calls")

    trial = tr.evaluate([_case("crashes", invoke)]).cases[0].trials[0]
    assert not trial.passed and trial.error.message == "the agent crashed after two model calls"
    assert [t.text for t in trial.trajectory.turns] == ["one", "two"]
    assert trial.usage == tr.Usage(300, 30) and trial.cost_usd is not None and trial.cost_usd > 0
    assert trial.verdicts == []  # nothing to grade: the run never returned


def test_a_sync_invoke_stuck_past_its_timeout_does_not_starve_later_trials() -> None:
    release = threading.Event()

    def stuck(ctx: tr.TrialContext) -> str:
        release.wait(5)  # ignores the trial's timeout: Python cannot stop this thread
        return "hello"

    cases = [_case("stuck", stuck, timeout_s=0.2), _case("quick", timeout_s=1.0)]
    try:
        report = tr.evaluate(cases, trials=2, concurrency=2)
    finally:
        release.set()
    stuck_case, quick_case = report.cases
    assert [t.error.type for t in stuck_case.trials] == ["TimeoutError", "TimeoutError"]
    assert quick_case.passed  # its trials got threads of their own


def test_whatever_a_case_returns_or_a_grader_notes_the_report_still_saves() -> None:
    def invoke(ctx: tr.TrialContext) -> tr.Run:
        call = tr.ToolCall("read_file", {"path": Path("notes.txt"), "tags": {"a"}}, id="c1")
        return tr.Run(output={"v": float("inf"), "w": float("nan")}, trajectory=tr.Trajectory(turns=[tr.Turn(tool_calls=[call])]))

    def noting(run: tr.Run, ctx: object) -> tr.Verdict:
        return tr.Verdict(True, "noting", "ok", details={"when": datetime.now(), "n": float("nan")})

    report = tr.evaluate([_case("odd values", invoke, expect_outcome=[noting])])
    again = tr.RunReport.model_validate_json(report.model_dump_json())
    trial = again.cases[0].trials[0]
    assert trial.output == {"v": "inf", "w": "nan"}
    assert trial.trajectory.tool_calls[0].arguments["path"] == "notes.txt"
    assert trial.verdicts[0].details["n"] == "nan" and isinstance(trial.verdicts[0].details["when"], str)
    assert again == tr.RunReport.model_validate_json(again.model_dump_json())  # stable from here on
