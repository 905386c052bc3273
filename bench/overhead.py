"""Harness overhead: what trialrun itself costs per trial, with an invoke that returns at once.

Prints wall and CPU time per trial (10,000 trials, sync and async invokes) and memory retained per trial (the report
kept alive), measured side by side in one run. Not a test: machines are noisy; quote ratios and orders.

    python bench/overhead.py [--trials-total 10000]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import trialrun as tr
from trialrun import expect


def sync_cases(n: int) -> list[tr.Case]:
    return [
        tr.Case(name=f"case-{i}", invoke=lambda ctx: "value", expect_outcome=[expect.contains("value")])
        for i in range(n)
    ]


async def _async_invoke(ctx: tr.TrialContext) -> str:
    return "value"


def async_cases(n: int) -> list[tr.Case]:
    return [
        tr.Case(name=f"case-{i}", invoke=_async_invoke, expect_outcome=[expect.contains("value")]) for i in range(n)
    ]


def measure(label: str, cases: list[tr.Case], trials: int) -> None:
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    report = tr.evaluate(cases, trials=trials)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    total = sum(len(c.trials) for c in report.cases)
    assert report.passed_case_count == len(cases), "every trial of the benchmark must pass"
    print(f"{label:<28} {total:>6} trials  {elapsed:6.2f} s  {elapsed / total * 1e6:7.1f} us/trial  "
          f"CPU {cpu / total * 1e6:7.1f} us/trial")


def retained(cases: list[tr.Case], trials: int) -> None:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    report = tr.evaluate(cases, trials=trials)
    gc.collect()
    after, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    total = sum(len(c.trials) for c in report.cases)
    print(
        f"{'memory (report kept)':<28} {total:>6} trials  retained {(after - before) / total:7.0f} B/trial"
        f"  peak {(peak - before) / 2**20:6.1f} MiB"
    )
    del report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials-total", type=int, default=10_000)
    args = parser.parse_args()
    cases, trials = args.trials_total // 10, 10
    measure("warm-up (sync invoke)", sync_cases(100), 10)
    measure("sync invoke", sync_cases(cases), trials)
    measure("async invoke", async_cases(cases), trials)
    retained(sync_cases(cases), trials)


if __name__ == "__main__":
    main()
