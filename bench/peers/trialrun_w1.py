"""W1 of ../shared/bench/WORKLOAD.md in trialrun, as a whole process: the side `bench/peers.py` times its peers
against. The cases are `bench/agent.py`'s (the reference agent over httpx, ScriptedModel, `lookup` a plain
function, `expect.contains` and `expect.called`):

    python bench/peers/trialrun_w1.py [--cases 200] [--trials 5] [--form sync|async]

`--form sync` (the default) is a sync invoke calling `Agent.run`, whose sync tool runs on a companion thread for its
time limit: trialrun's slowest form of W1; `async` awaits `Agent.arun`. Prints one line, `W1-RESULT {json}`, after
checking that every trial was graded and passed.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agent as w1  # noqa: E402  (bench/agent.py)

import trialrun as tr  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--form", choices=("sync", "async"), default="sync")
    args = parser.parse_args()
    cases = w1.make_cases(args.cases, asynchronous=args.form == "async")
    started, cpu = time.perf_counter(), time.process_time()
    report = tr.evaluate(cases, trials=args.trials)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    expected = args.cases * args.trials
    trials = [trial for case in report.cases for trial in case.trials]
    graded = [trial for trial in trials if len(trial.verdicts) == 2]
    passed = [trial for trial in graded if trial.passed]
    if len(graded) != expected or len(passed) != expected:
        print(f"W1 in trialrun did not pass: {len(graded)} graded, {len(passed)} passed of {expected}", file=sys.stderr)
        sys.exit(1)
    print("W1-RESULT " + json.dumps({
        "framework": f"trialrun ({args.form} invoke)", "version": version("trialrun"), "cases": args.cases,
        "trials": args.trials, "eval_s": elapsed, "eval_cpu_s": cpu, "passed_trials": len(passed),
        "pass_at_1": report.pass_at_1, "pass_pow_k": report.pass_pow_k,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
