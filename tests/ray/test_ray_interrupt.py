"""Ctrl-C (or SIGTERM) during a run on Ray: outstanding tasks are cancelled, their teardowns run, finished trials are kept."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = '''
import json, sys
from pathlib import Path

import pytest
import trialrun as tr
from trialrun import expect

address, out, per_worker = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])

def quick(ctx):
    return "quick"

def slow_setup(ctx):
    (out / f"started-{ctx.case.name}").write_text("started")

def slow(ctx):
    import time
    time.sleep(60)
    return "slow"

def slow_teardown(ctx):
    (out / f"teardown-{ctx.case.name}").write_text("torn down")

cases = [tr.Case(name=f"quick{i}", invoke=quick, expect_outcome=[expect.contains("quick")]) for i in range(2)]
cases += [tr.Case(name=f"slow{i}", setup=slow_setup, invoke=slow, teardown=slow_teardown,
                  expect_outcome=[expect.contains("slow")]) for i in range(2)]
executor = tr.RayExecutor(address=address, resources_per_trial={"num_cpus": 0.5}, teardown_wait_s=20,
                          init_kwargs={"log_to_driver": False}, trials_per_worker=per_worker)
def finished(case, result):
    print("finished", case.name, flush=True)
    (out / f"finished-{case.name}").write_text("finished")

try:
    tr.evaluate(cases, executor=executor, concurrency=4, on_trial=finished)
    print("COMPLETED", flush=True)
except tr.EvaluationInterrupted as exc:
    report = exc.report
    print("REPORT " + json.dumps({"status": report.status, "cases": [c.name for c in report.cases],
                                  "passed": [c.passed for c in report.cases], "unfinished": report.unfinished_cases}),
          flush=True)
'''


@pytest.mark.parametrize(("per_worker", "stop"), [(1, signal.SIGINT), (2, signal.SIGINT), (1, signal.SIGTERM)],
                         ids=["tasks", "actor-pool", "tasks-sigterm"])
def test_ctrl_c_cancels_outstanding_trials_runs_their_teardowns_and_keeps_the_finished(ray_cluster: str, tmp_path: Path,
                                                                                       per_worker: int,
                                                                                       stop: signal.Signals) -> None:
    """SIGTERM (CI cancellation, `docker stop`, Kubernetes) stops a Ray run as Ctrl-C does."""
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen([sys.executable, str(script), ray_cluster, str(tmp_path), str(per_worker)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        # the signal comes once the slow trials run AND the quick ones are done: on a loaded machine (load 20 in a
        # full run) a quick trial's result could still be on its way half a second after the slow ones started,
        # and a trial unfinished when the signal comes is rightly reported unfinished
        deadline = time.monotonic() + 45
        marks = [tmp_path / f"started-slow{i}" for i in range(2)] + [tmp_path / f"finished-quick{i}" for i in range(2)]
        while not all(mark.exists() for mark in marks):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"never there: {[m.name for m in marks if not m.exists()]}"
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    lines = out.splitlines()
    assert sorted(line for line in lines if line.startswith("finished")) == ["finished quick0", "finished quick1"], err
    report = json.loads(next(line for line in lines if line.startswith("REPORT "))[len("REPORT "):])
    assert report == {"status": "interrupted", "cases": ["quick0", "quick1"], "passed": [True, True],
                      "unfinished": ["slow0", "slow1"]}
    for i in range(2):  # the cancelled trials' teardowns ran on their workers before the run ended
        assert (tmp_path / f"teardown-slow{i}").read_text() == "torn down"
