"""Trials on a real local Ray cluster: same report as a local run, lost workers, unpicklable cases."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun import expect
from trialrun.models import reply, tool_call

#: Fields that differ between any two runs (when, how long, on which host), and nothing else.
_VOLATILE = {"started_at", "timestamp", "duration_s", "run_id", "finished_at"}


def _stable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _scripted(ctx: tr.TrialContext) -> Any:
    """A deterministic agent: one tool call then a reply, through the official openai SDK over a scripted model."""
    import openai

    model = tr.ScriptedModel([tool_call("read_file", {"path": "notes.txt"}), reply(f"done {ctx.case.name}")])
    client = openai.OpenAI(api_key="test", http_client=ctx.http_client(model))
    first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}],
                                           tools=[{"type": "function", "function": {"name": "read_file", "parameters": {}}}])
    call = first.choices[0].message.tool_calls[0]
    second = client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": "go"}, first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "hi"}])
    return second.choices[0].message.content


def _workdir_file(ctx: tr.TrialContext) -> str:
    (ctx.workdir / "out.txt").write_text(f"trial {ctx.trial}")
    return (ctx.workdir / "out.txt").read_text()


def _raises(ctx: tr.TrialContext) -> str:
    raise RuntimeError(f"broken on trial {ctx.trial}")


def _slow(ctx: tr.TrialContext) -> str:
    import time

    time.sleep(5)
    return "late"


def _network(ctx: tr.TrialContext) -> str:
    import httpx

    httpx.get("http://example.com/")
    return "reached"


def _teardown_fails(ctx: tr.TrialContext) -> None:
    raise OSError("teardown broke")


def _suite() -> list[tr.Case]:
    return [
        tr.Case(name="scripted", invoke=_scripted, expect_outcome=[expect.contains("done scripted")],
                expect_trajectory=[expect.called("read_file"), expect.max_turns(2)]),
        tr.Case(name="wrong", invoke=_scripted, expect_outcome=[expect.contains("something else")]),
        tr.Case(name="workdir", invoke=_workdir_file, expect_outcome=[expect.contains("trial")]),
        tr.Case(name="raises", invoke=_raises, expect_outcome=[expect.contains("x")]),
        tr.Case(name="times-out", invoke=_slow, timeout_s=0.5, expect_outcome=[expect.contains("late")]),
        tr.Case(name="offline", invoke=_network, expect_outcome=[expect.contains("reached")]),
        tr.Case(name="teardown", invoke=_workdir_file, teardown=_teardown_fails, expect_outcome=[expect.contains("trial")]),
        tr.Case(name="canary", mode="live_canary", invoke=_workdir_file, expect_outcome=[expect.contains("trial")]),
    ]


#: Not key-shaped: only the rule "a value sent in a credential header is removed wherever else it appears" finds it.
_SECRET = "planted-credential-c0ffee42"
#: Key-shaped: the scrubber's patterns find it wherever it is.
_KEY = "sk-proj-" + "Zq7" * 12


def _careless(ctx: tr.TrialContext) -> str:
    """Sends its credential in the Authorization header and, carelessly, in its message too (and a key-shaped one)."""
    import openai

    model = tr.ScriptedModel([reply(f"hi {ctx.trial}")])
    client = openai.OpenAI(api_key=_SECRET, http_client=ctx.http_client(model))
    answer = client.chat.completions.create(model="m", messages=[
        {"role": "user", "content": f"my keys are {_SECRET} and {_KEY}"}])
    return answer.choices[0].message.content or ""


def _with_careless() -> list[tr.Case]:
    return [*_suite(), tr.Case(name="careless", invoke=_careless, expect_outcome=[expect.contains("hi")])]


def _kept(cases: list[tr.Case], path: Path, sidecar_trials: Any, **options: Any) -> tuple[Any, dict]:
    """A run of `cases` with its exchanges kept in the sidecar `path` (as `trialrun run` keeps them), and that
    sidecar's trials: the exchanges are scrubbed (neither planted secret is anywhere in the file)."""
    from trialrun.report.exchanges import ExchangeLog

    log = ExchangeLog.open(path, run_id="eval_x")
    try:
        report = tr.evaluate(cases, trials=2, on_exchanges=log, **options)
    finally:
        log.close()
    assert log.problem is None and log.trials
    text = path.read_text(encoding="utf-8")
    assert _SECRET not in text and _KEY not in text
    return report, sidecar_trials(path)


def _check_exchanges(kept: dict, local_kept: dict, report: Any) -> None:
    """The Ray run kept what the local run kept, trial for trial: every finished trial's line came back."""
    assert kept == local_kept
    assert sorted(kept) == sorted((c.name, t.trial) for c in report.cases for t in c.trials)
    (request,) = [e["request"] for e in kept["careless", 2]]
    assert request["headers"]["authorization"] == "REDACTED"
    assert request["body"]["messages"][0]["content"].startswith("my keys are ")
    assert [e["n"] for e in kept["scripted", 1]] == [1, 2]
    assert kept["raises", 1] == []  # a trial that sent nothing has its (empty) line too


def test_a_ray_run_reports_exactly_what_a_local_run_reports(ray_cluster: str, tmp_path: Path, read_sidecar) -> None:
    local, local_kept = _kept(_with_careless(), tmp_path / "local.exchanges.ndjson", read_sidecar)
    seen: list[tuple[str, int]] = []
    remote, kept = _kept(_with_careless(), tmp_path / "ray.exchanges.ndjson", read_sidecar,
                         executor=tr.RayExecutor(resources_per_trial={"num_cpus": 0.5}),
                         on_trial=lambda case, result: seen.append((case.name, result.trial)))
    assert _stable(remote.model_dump(mode="json")) == _stable(local.model_dump(mode="json"))
    _check_exchanges(kept, local_kept, remote)
    assert sorted(seen) == sorted((name, t) for name in ("scripted", "wrong", "workdir", "raises", "times-out",
                                                          "offline", "teardown", "careless") for t in (1, 2))
    by_name = {c.name: c for c in remote.cases}
    assert by_name["scripted"].passed and by_name["workdir"].passed
    # the files a trial left travel back from its worker (the same as a local run's: compared whole above)
    assert [(f.path, f.change) for f in by_name["workdir"].trials[0].files.files] == [("out.txt", "added")]
    assert by_name["scripted"].trials[0].trajectory.tool_calls[0].name == "read_file"
    assert not by_name["wrong"].passed
    assert by_name["raises"].trials[0].error.phase == "invoke"
    assert by_name["times-out"].trials[0].error.type == "TimeoutError"
    assert by_name["offline"].trials[0].error.type in ("NetworkBlockedError", "ConnectError")
    assert by_name["teardown"].trials[0].teardown_error.message == "teardown broke"
    assert by_name["canary"].skipped


def _dies(ctx: tr.TrialContext) -> str:
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


def _dies_once(ctx: tr.TrialContext) -> str:
    marker = Path(ctx.case.metadata["marker"])
    if not marker.exists():
        marker.write_text("died once")
        os.kill(os.getpid(), signal.SIGKILL)
    return "survived"


def test_a_killed_worker_is_an_error_trial_and_the_run_goes_on(ray_cluster: str, tmp_path: Path) -> None:
    cases = [
        tr.Case(name="dies", invoke=_dies, expect_outcome=[expect.contains("unreachable")]),
        tr.Case(name="dies-once", invoke=_dies_once, metadata={"marker": str(tmp_path / "marker")},
                expect_outcome=[expect.contains("survived")]),
        tr.Case(name="fine", invoke=_workdir_file, expect_outcome=[expect.contains("trial 1")]),
    ]
    report = tr.evaluate(cases, executor="ray")
    by_name = {c.name: c for c in report.cases}
    error = by_name["dies"].trials[0].error
    assert (error.type, error.phase) == ("WorkerLost", "worker")
    assert "worker lost" in error.message and "tried 2 time(s)" in error.message
    assert not by_name["dies"].passed
    assert by_name["dies-once"].passed and (tmp_path / "marker").read_text() == "died once"  # retried once, then passed
    assert by_name["fine"].passed
    assert report.status == "completed"


def test_a_live_canary_whose_worker_dies_is_not_retried(ray_cluster: str) -> None:
    case = tr.Case(name="live-dies", mode="live_canary", invoke=_dies, expect_outcome=[expect.contains("x")])
    report = tr.evaluate([case], executor="ray", include_live_canary=True)
    assert "tried 1 time(s)" in report.cases[0].trials[0].error.message


def test_a_case_that_cannot_be_pickled_is_refused_before_anything_runs(ray_cluster: str, tmp_path: Path) -> None:
    lock = threading.Lock()
    ran = tmp_path / "ran"

    def touches(ctx: tr.TrialContext) -> str:
        ran.write_text("ran")
        return "ok"

    cases = [
        tr.Case(name="fine", invoke=touches, expect_outcome=[expect.contains("ok")]),
        tr.Case(name="holds-a-lock", invoke=lambda ctx: str(lock.locked()), expect_outcome=[expect.contains("False")]),
    ]
    with pytest.raises(tr.CaseError) as raised:
        tr.evaluate(cases, executor="ray")
    message = str(raised.value)
    assert "case 'holds-a-lock', field 'invoke'" in message
    assert "could not be pickled" in message and "_thread.lock" in message
    assert "'fine'" not in message
    assert not ran.exists()
    assert tr.evaluate(cases[:1]).passed_case_count == 1  # the same case runs locally: only shipping failed


def test_an_on_exchanges_callable_of_your_own_is_refused_on_ray_not_silently_dropped() -> None:
    """Its trials' raw exchanges stay on the workers, so it would never be called: the run is refused before
    anything runs (or connects), naming the argument and what to use instead."""
    from trialrun.run.executor import ExecutorError

    calls: list[object] = []
    ran: list[str] = []

    def invoke(ctx: tr.TrialContext) -> str:
        ran.append("ran")
        return "ok"

    case = tr.Case(name="kept", invoke=invoke, expect_outcome=[expect.contains("ok")])
    with pytest.raises(ExecutorError, match=r"on_exchanges=.* cannot be used with executor 'ray'.*sidecar"):
        tr.evaluate([case], executor="ray", on_exchanges=lambda *args: calls.append(args))
    assert not ran and not calls
    local = tr.evaluate([case], on_exchanges=lambda *args: calls.append(args))  # locally it is called, per trial
    assert local.passed_case_count == 1 and len(calls) == 1


def test_executor_spellings() -> None:
    from trialrun.run.executor import ExecutorError, resolve_executor

    assert resolve_executor("local") is None and resolve_executor(None) is None
    assert resolve_executor("ray") == tr.RayExecutor()
    assert resolve_executor("ray://head:10001").address == "ray://head:10001"
    assert resolve_executor("ray:127.0.0.1:6379").address == "127.0.0.1:6379"
    with pytest.raises(ExecutorError, match="expected local, ray"):
        resolve_executor("dask")
    with pytest.raises(ExecutorError, match="trials_per_worker must be a positive integer, got 0"):
        tr.RayExecutor(trials_per_worker=0)


def test_a_pool_of_async_actors_reports_what_a_local_run_reports(ray_cluster: str, tmp_path: Path,
                                                                 read_sidecar) -> None:
    local, local_kept = _kept(_with_careless(), tmp_path / "local.exchanges.ndjson", read_sidecar)
    pooled, kept = _kept(_with_careless(), tmp_path / "pool.exchanges.ndjson", read_sidecar, concurrency=8,
                         executor=tr.RayExecutor(trials_per_worker=4, resources_per_trial={"num_cpus": 0.5}))
    assert _stable(pooled.model_dump(mode="json")) == _stable(local.model_dump(mode="json"))
    _check_exchanges(kept, local_kept, pooled)
