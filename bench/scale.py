"""Local vs Ray: when does a cluster pay?

1. 1,000 trials whose (synchronous) invoke sleeps 50 ms, standing for an agent waiting on its tools: locally at
   concurrency 1 and 16, and on Ray with two worker CPUs (one trial per CPU, the default resources_per_trial).
2. The per-trial overhead Ray adds: trivial trials (return a string) locally and on Ray, time per trial.

    python bench/scale.py [--trials 1000] [--sleep 0.05] [--trivial 500] [--address ADDR]

Without --address it starts a local Ray with 2 CPUs (dashboard off), excluded from the timings.
"""

from __future__ import annotations

import argparse
import os
import time

import trialrun as tr
from trialrun import expect


def _sleeper(seconds: float):  # noqa: ANN202 - a closure, so the delay ships to workers with the case
    def invoke(ctx: tr.TrialContext) -> str:
        time.sleep(seconds)
        return "done"

    return invoke


def _trivial(ctx: tr.TrialContext) -> str:
    return "done"


def _cases(invoke, trials: int) -> list[tr.Case]:  # noqa: ANN001
    per_case = 10
    return [tr.Case(name=f"c{i}", invoke=invoke, trials=per_case, expect_outcome=[expect.contains("done")])
            for i in range(trials // per_case)]


def _timed(label: str, cases: list[tr.Case], **kwargs: object) -> float:
    started = time.perf_counter()
    report = tr.evaluate(cases, **kwargs)
    wall = time.perf_counter() - started
    count = sum(len(c.trials) for c in report.cases)
    assert report.passed_case_count == len(cases), "every trial must pass"
    print(f"{label:<44} {count:>5} trials  {wall:7.2f} s  {wall / count * 1000:7.2f} ms/trial", flush=True)
    return wall / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--sleep", type=float, default=0.05)
    parser.add_argument("--trivial", type=int, default=500)
    parser.add_argument("--address", default=None, help="an existing Ray cluster (default: start a local one)")
    args = parser.parse_args()

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = time.perf_counter()
    if args.address:
        ray.init(address=args.address, logging_level="warning", log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False)
    print(f"ray {ray.__version__}: connected in {time.perf_counter() - started:.1f} s "
          f"({ray.cluster_resources().get('CPU', 0):g} CPUs); os.cpu_count()={os.cpu_count()}", flush=True)
    executor = tr.RayExecutor()
    sleeping = _cases(_sleeper(args.sleep), args.trials)
    _timed("Ray warm-up (workers start)", _cases(_trivial, 20), executor=executor)
    print(f"-- {args.trials} trials, invoke sleeps {args.sleep * 1000:g} ms")
    _timed("local, concurrency 1", sleeping, concurrency=1)
    _timed("local, concurrency 16", sleeping, concurrency=16)
    _timed("Ray, 2 workers (1 CPU per trial)", sleeping, executor=executor)
    _timed("Ray, 2 CPUs, num_cpus=0.125 per trial", sleeping, executor=tr.RayExecutor(resources_per_trial={"num_cpus": 0.125}))
    pool = tr.RayExecutor(trials_per_worker=8)  # 2 actors of 8 trials each at concurrency 16
    _timed("Ray, 2 actors x 8 trials (trials_per_worker)", _cases(_trivial, 20), executor=pool)  # start the actors
    _timed("Ray, 2 actors x 8 trials (trials_per_worker)", sleeping, executor=pool)
    print(f"-- {args.trivial} trivial trials (the overhead per trial)")
    local = _timed("local, concurrency 16", _cases(_trivial, args.trivial))
    remote = _timed("Ray, 2 workers", _cases(_trivial, args.trivial), executor=executor)
    _timed("Ray, 2 actors x 8 trials", _cases(_trivial, args.trivial), executor=pool)
    print(f"Ray adds about {(remote - local) * 1000:.1f} ms of wall time per trial at 2 workers "
          f"(about {(remote - local) * 2000:.1f} ms of worker time each)")
    ray.shutdown()


if __name__ == "__main__":
    main()
