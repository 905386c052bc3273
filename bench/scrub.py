"""What the scrubber costs with 0, 1 and 41 registered credentials (`_scrub.add_secret`), side by side with another
copy of `_scrub/__init__.py` (`--base`, e.g. the one at the branch point: `git show BASE:src/trialrun/_scrub/__init__.py >
base.py`; it is loaded inside the `_scrub` package, so its `.forms` and `.shapes` are the current ones).

Three workloads, each the text a writer scrubs: a result file of W1's shape (200 cases x 5 trials, a tool call and
an answer each, through the reference agent), 2,000 terminal lines, 200 request bodies of 4 KB. Interleaved, best
of 3 per round, 9 rounds; the median and range of the per-round ratios.

`--late`: what a credential learned mid-run costs the run's open files (`_line_log`): a journal of 1,000 trials
open, then a new credential registered that the journal does not hold (a search of the file) and one it holds
(the file rewritten, scrubbed); the time `add_secret` takes, best of 5.

    python bench/scrub.py [--base PATH/__init__.py] [--late]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import time
from types import ModuleType
from typing import Any

import trialrun as tr
from trialrun import _scrub


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location("trialrun._scrub._base_copy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _workloads() -> dict[str, list[str]]:
    def case(i: int) -> tr.Case:
        def invoke(ctx: tr.TrialContext) -> Any:
            model = ctx.scripted([tr.tool_call("lookup", key=f"key-{i}"), tr.reply(f"value-{i}")])
            return tr.Agent(model, tools=[tr.tool(lambda key: "value-" + key, name="lookup")]).run(f"lookup key-{i}")

        return tr.Case(name=f"lookup-{i}", invoke=invoke, expect_outcome=[tr.expect.contains(f"value-{i}")])

    big = tr.evaluate([case(i) for i in range(200)], trials=5).model_dump_json(indent=2)
    lines = [f"x lookup-{i}: score 0.67 (< 0.7): tool_accuracy 1.00, turn_efficiency 1.00 (2 turns, budget 3)"
             for i in range(2000)]
    bodies = [json.dumps({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": f"key-{i} " + "x" * 4000}]})
              for i in range(200)]
    return {f"result JSON {len(big) / 1e6:.1f} MB": [big], "2000 terminal lines": lines, "200 x 4 KB bodies": bodies}


def _best(module: ModuleType, texts: list[str], reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        for text in texts:
            module.scrub_text(text)
        best = min(best, time.perf_counter() - started)
    return best


def _round(label: str, work: dict[str, list[str]], base: ModuleType | None) -> None:
    print(f"-- {label}")
    for name, texts in work.items():
        ours, theirs = [], []
        for _ in range(9):
            ours.append(_best(_scrub, texts))
            if base is not None:
                theirs.append(_best(base, texts))
        line = f"{name:24s} this {min(ours) * 1e3:8.2f} ms"
        if base is not None:
            ratios = [a / b for a, b in zip(ours, theirs)]
            line += (f"   base {min(theirs) * 1e3:8.2f} ms   this/base median {statistics.median(ratios):.2f} "
                     f"({min(ratios):.2f}-{max(ratios):.2f})")
        print(line)


def _late() -> None:
    import os
    import secrets
    import tempfile
    from datetime import datetime, timezone
    from pathlib import Path

    from trialrun.report.journal import Journal

    report = _workloads_report()
    trials = [trial for case in report.cases for trial in case.trials]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results_x.jsonl"
        journal = Journal(path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666))
        journal.start(run_id="r", started_at=datetime.now(timezone.utc), trial_count=5, cases=[], config_snapshot={})
        for trial in trials:
            journal.append("c", trial)
        size = path.stat().st_size
        absent, held = [], []
        for _ in range(5):
            value = "late-" + secrets.token_hex(10)
            started = time.perf_counter()
            _scrub.add_secret(value, source="bench")
            absent.append(time.perf_counter() - started)
            value = "late-" + secrets.token_hex(10)
            journal._append(json.dumps({"event": "note", "text": value}))  # written before anything knew it
            started = time.perf_counter()
            _scrub.add_secret(value, source="bench")
            held.append(time.perf_counter() - started)
            assert value not in path.read_text()
        journal.close(None)
    print(f"-- a credential learned mid-run, a journal of {len(trials):,} trials ({size / 1e6:.1f} MB) open")
    print(f"not in the journal (searched)  {min(absent) * 1e3:8.2f} ms")
    print(f"in the journal (rewritten)     {min(held) * 1e3:8.2f} ms")


def _workloads_report() -> Any:
    def case(i: int) -> tr.Case:
        def invoke(ctx: tr.TrialContext) -> Any:
            model = ctx.scripted([tr.tool_call("lookup", key=f"key-{i}"), tr.reply(f"value-{i}")])
            return tr.Agent(model, tools=[tr.tool(lambda key: "value-" + key, name="lookup")]).run(f"lookup key-{i}")

        return tr.Case(name=f"lookup-{i}", invoke=invoke, expect_outcome=[tr.expect.contains(f"value-{i}")])

    return tr.evaluate([case(i) for i in range(200)], trials=5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", help="another _scrub.py to run side by side")
    parser.add_argument("--late", action="store_true", help="only the cost of a credential learned mid-run")
    args = parser.parse_args()
    if args.late:
        _late()
        return
    base = _load(args.base) if args.base else None
    work = _workloads()
    modules = [_scrub] + ([base] if base is not None else [])
    _round("no registered credential", work, base)
    for module in modules:
        module.add_secret("hunter2-internal-token")
    _round("1 registered credential", work, base)
    for module in modules:
        for n in range(40):
            module.add_secret(f"bulk-credential-{n:03d}-x")
    _round("41 registered credentials", work, base)


if __name__ == "__main__":
    main()
