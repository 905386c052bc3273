"""The per-trial workspace is removed off the event loop and outside the trial's time, and still before `evaluate`
returns (interrupted or not): a big tree's rmtree must not stall every other trial."""

from __future__ import annotations

import asyncio
import shutil
import threading
import time
from pathlib import Path

import pytest

import trialrun as tr
from trialrun import expect

SLOW_RMTREE_S = 0.5


@pytest.fixture
def slow_rmtree(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Path]]:
    """rmtree as slow as on a big workspace; records which thread ran it."""
    calls: list[tuple[str, Path]] = []
    real = shutil.rmtree

    def rmtree(path: Path, *args: object, **kwargs: object) -> None:
        calls.append((threading.current_thread().name, Path(path)))
        time.sleep(SLOW_RMTREE_S)
        real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    return calls


def test_workdirs_are_removed_off_the_loop_outside_the_trial_and_before_evaluate_returns(slow_rmtree) -> None:
    workdirs: list[Path] = []
    lags: list[float] = []

    async def invoke(ctx: tr.TrialContext) -> str:
        (ctx.workdir / "notes.txt").write_text("hello")
        workdirs.append(ctx.workdir)
        for _ in range(5):  # the loop's responsiveness while other trials' workdirs are being removed
            started = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append(time.perf_counter() - started - 0.01)
        return (ctx.workdir / "notes.txt").read_text()

    cases = [tr.Case(name=f"c{i}", invoke=invoke, expect_outcome=[expect.contains("hello")]) for i in range(3)]
    report = tr.evaluate(cases, trials=2, concurrency=3)
    assert report.passed_case_count == 3
    assert len(slow_rmtree) == 6 and sorted(p for _, p in slow_rmtree) == sorted(workdirs)
    assert all(name.startswith("trialrun-") for name, _ in slow_rmtree)  # worker threads, never the loop's
    assert not any(path.exists() for path in workdirs)  # all gone when evaluate returned
    assert max(lags) < SLOW_RMTREE_S * 0.8  # the loop never waited for an rmtree (with room for a loaded machine)
    assert all(t.duration_s < SLOW_RMTREE_S for c in report.cases for t in c.trials)


def test_an_interrupted_run_still_removes_every_workdir(slow_rmtree) -> None:
    workdirs: list[Path] = []
    started = asyncio.Event()

    async def invoke(ctx: tr.TrialContext) -> str:
        workdirs.append(ctx.workdir)
        if ctx.case.name == "slow":
            started.set()
            await asyncio.sleep(30)
        return "hello"

    async def main() -> tr.RunReport:
        cases = [tr.Case(name=n, invoke=invoke, expect_outcome=[expect.contains("hello")]) for n in ("quick", "slow")]
        task = asyncio.ensure_future(tr.aevaluate(cases, concurrency=2))
        await started.wait()
        await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError as exc:  # EvaluationInterrupted (on 3.10: a CancelledError around it)
            return (exc if isinstance(exc, tr.EvaluationInterrupted) else exc.__context__).report  # type: ignore[union-attr]
        raise AssertionError("not interrupted")

    report = asyncio.run(main())
    assert report.status == "interrupted" and [c.name for c in report.cases] == ["quick"]
    assert len(workdirs) == 2 and not any(path.exists() for path in workdirs)
