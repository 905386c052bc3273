"""`evaluate` stops on SIGTERM and SIGHUP as on Ctrl-C (while they have their default action, which would kill the
process and lose the run): teardowns run and `EvaluationInterrupted` says which signal; a handler the program
installed itself is left in charge."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SCRIPT = textwrap.dedent("""
    import signal, sys, time, trialrun as tr
    from trialrun import expect
    if sys.argv[1] == "own-handler":
        signal.signal(signal.SIGTERM, lambda *a: print("own handler", flush=True))
    def invoke(ctx):
        if ctx.trial == 2:
            print("started", flush=True)
            time.sleep(3)
        return "hello"
    def teardown(ctx):
        print("torn down", ctx.trial, flush=True)
    case = tr.Case(name="c", invoke=invoke, teardown=teardown, trials=3, expect_outcome=[expect.contains("hello")])
    try:
        report = tr.evaluate([case], concurrency=1)
        print("completed", report.status, flush=True)
    except tr.EvaluationInterrupted as exc:
        partial = exc.report.cases[0]
        print("interrupted", signal.Signals(exc.signal).name, len(partial.trials), partial.unfinished_trials, flush=True)
""")


def _default_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def _run(tmp_path: Path, mode: str, signum: int) -> str:
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), mode], stdout=subprocess.PIPE, text=True,
                            preexec_fn=_default_signals)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "torn down 1"
    assert proc.stdout.readline().strip() == "started"
    proc.send_signal(signum)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    return out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_interrupts_evaluate_with_teardowns_and_the_partial_case(tmp_path: Path, signum: int) -> None:
    out = _run(tmp_path, "default", signum)
    assert "torn down 2" in out  # the stopped trial's teardown ran
    assert f"interrupted {signal.Signals(signum).name} 1 2" in out  # trial 1 kept; 2 and 3 did not finish


def test_a_handler_the_program_installed_stays_in_charge(tmp_path: Path) -> None:
    out = _run(tmp_path, "own-handler", signal.SIGTERM)
    assert "own handler" in out and "completed completed" in out
