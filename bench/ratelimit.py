"""What the shared rate limiter costs per request, when it never has to wait (a limit far above the traffic).

Requests go through LiveModel to an in-memory provider (httpx.MockTransport, instant), so what is measured is
trialrun's own cost: no limit, the process's limiter, and on Ray (a local cluster with 2 CPUs) the run's limiter
actor, with leased request slots (requests_per_minute) and with a call per request (tokens_per_minute).

    python bench/ratelimit.py [--requests 2000] [--address ADDR]
"""

from __future__ import annotations

import argparse
import functools
import os
import time

import httpx

import trialrun as tr
from trialrun import expect

_BIG = 10**9  # a limit no run reaches: the limiter is asked, and never waits
LIMITS = {
    "no limit": None,
    "requests_per_minute": tr.RateLimit(requests_per_minute=_BIG),
    "requests + tokens_per_minute": tr.RateLimit(requests_per_minute=_BIG, tokens_per_minute=_BIG),
}


def _ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"usage": {"prompt_tokens": 3, "completion_tokens": 2}})


def _requests(ctx: tr.TrialContext, limit: tr.RateLimit | None, count: int) -> str:
    """`count` requests through one LiveModel; returns the microseconds each took, as text (the trial's output)."""
    live = tr.LiveModel("https://api.example.com/v1", api_key="sk-bench", rate_limit=limit,
                        transport=httpx.MockTransport(_ok))
    with httpx.Client(transport=live) as client:
        started = time.perf_counter()
        for _ in range(count):
            client.post("https://api.example.com/v1/chat/completions", json={"model": "m", "messages": []})
        return f"done {(time.perf_counter() - started) / count * 1e6:.1f}"


def _measure(count: int, executor: object = None) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, limit in LIMITS.items():
        case = tr.Case(name="r", invoke=functools.partial(_requests, limit=limit, count=count),
                       expect_outcome=[expect.contains("done")])
        best = None
        for _ in range(3):
            report = tr.evaluate([case], executor=executor)
            trial = report.cases[0].trials[0]
            assert trial.passed, trial.error
            value = float(str(trial.output).split()[1])
            best = value if best is None else min(best, value)
        out[label] = best or 0.0
    return out


def _show(where: str, results: dict[str, float]) -> None:
    base = results["no limit"]
    for label, micros in results.items():
        print(f"{where:<8} {label:<30} {micros:8.1f} us/request  x{micros / base:5.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--address", default=None)
    args = parser.parse_args()
    _show("local", _measure(args.requests))

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if args.address:
        ray.init(address=args.address, logging_level="warning", log_to_driver=False)
    else:
        ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="warning", log_to_driver=False)
    _show("ray", _measure(args.requests, tr.RayExecutor()))
    ray.shutdown()


if __name__ == "__main__":
    main()
