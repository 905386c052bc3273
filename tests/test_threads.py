"""The daemon threads behind trials and timed tools (`trialrun._util.workers`): a call starts at once whatever else
is busy, hands back what it returned or raised in the caller's contextvars, is given up on when late without
holding anyone up, and never holds the interpreter open."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import trialrun as tr
from trialrun._util.workers import DAEMON_THREADS, call_with_limit


def test_busy_threads_never_make_a_call_wait() -> None:
    release, started = threading.Event(), threading.Semaphore(0)

    def blocker() -> None:
        started.release()
        release.wait(5)

    futures = [DAEMON_THREADS.submit(blocker) for _ in range(12)]  # more calls than cores: each starts at once
    try:
        assert all(started.acquire(timeout=5) for _ in range(12))
    finally:
        release.set()
    assert all(f.result(5) is None for f in futures)


def test_a_call_hands_back_its_value_or_error_in_the_callers_context_on_a_daemon_thread() -> None:
    var = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    seen = DAEMON_THREADS.submit(lambda a, b=0: (a + b, var.get(), threading.current_thread().daemon,
                                                 threading.get_ident()), 1, b=2).result(5)
    assert seen[:3] == (3, "caller's", True) and seen[3] != threading.get_ident()

    def boom() -> None:
        raise KeyError("boom")

    with pytest.raises(KeyError, match="boom"):
        DAEMON_THREADS.submit(boom).result(5)

    async def on_a_loop() -> str:
        return await asyncio.get_running_loop().run_in_executor(DAEMON_THREADS, var.get)

    assert asyncio.run(on_a_loop()) == "caller's"


def test_a_timed_call_hands_back_values_errors_and_context() -> None:
    var = contextvars.ContextVar("var", default="unset")
    var.set("caller's")
    assert call_with_limit(lambda n: (n, var.get()), {"n": 4}, 5) == (True, (4, "caller's"))

    def late_on_its_own() -> None:
        raise TimeoutError("the tool's own")

    with pytest.raises(TimeoutError, match="the tool's own"):  # raised by the call: not read as late
        call_with_limit(late_on_its_own, {}, 5)


def test_a_late_call_is_given_up_on_time_and_runs_on_abandoned() -> None:
    release, ran_on = threading.Event(), threading.Event()
    started = time.monotonic()
    assert call_with_limit(lambda: release.wait(5) and ran_on.set(), {}, 0.05) == (False, None)
    assert time.monotonic() - started < 1.0
    assert call_with_limit(lambda: "next", {}, 5) == (True, "next")  # the late one holds nothing up
    release.set()
    assert ran_on.wait(5)


def test_a_callable_may_name_its_parameters_fn_or_self() -> None:
    assert DAEMON_THREADS.submit(lambda fn, self: fn + self, fn="a", self="b").result(5) == "ab"
    assert call_with_limit(lambda fn, self: fn + self, {"fn": "a", "self": "b"}, 5) == (True, "ab")


def test_a_process_whose_timed_tool_hangs_still_exits(tmp_path: Path) -> None:
    """A tool past its limit, on the event loop and without one, and a synchronous agent past its case's timeout:
    all run on, abandoned, and the process ends when its main thread does."""
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""
        import asyncio, threading, time
        import trialrun as tr

        @tr.tool(timeout_s=0.1)
        def hang() -> str:
            \"\"\"Hang.\"\"\"
            threading.Event().wait()
            return "never"

        for run in (lambda: asyncio.run(hang.run({})), lambda: hang.run_sync({})):
            try:
                run()
            except tr.ToolError as exc:
                print(exc, flush=True)
        case = tr.Case(name="stuck", invoke=lambda ctx: threading.Event().wait(), timeout_s=0.2,
                       expect_outcome=[tr.expect.contains("x")])
        print(tr.evaluate([case]).cases[0].trials[0].error.message, flush=True)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hang timed out after 0.1s"] * 2 + ["trial timed out after 0.2s"]


@pytest.mark.skipif(not hasattr(__import__("os"), "sched_getaffinity"), reason="Linux: CPU affinity")
def test_what_a_timed_tool_starts_may_use_every_core_the_process_may(tmp_path: Path) -> None:
    """A build or test run a tool starts is never held to fewer cores than trialrun itself: the truth is what the
    process it started reports of itself."""
    import os

    out = tmp_path / "cores.txt"

    @tr.tool
    def work() -> str:
        """Start a process that reports its cores."""
        report = "import os; print(sorted(os.sched_getaffinity(0)))"
        out.write_text(subprocess.run([sys.executable, "-c", report], capture_output=True, text=True).stdout)
        return "started"

    async def main() -> list[str]:
        return [await work.run({}, timeout_s=30) for _ in range(3)]

    assert asyncio.run(main()) == ["started"] * 3
    assert out.read_text().strip() == str(sorted(os.sched_getaffinity(0)))
