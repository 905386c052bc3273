"""A shell-tools trial's cost, workspace included: setup copies a small workspace (the quickstart's files) into the
trial's workdir, the reference agent reads a file with `read_file` and answers, and the workdir is removed after
teardown. Removing the workdir is most of such a trial's own time when it blocks the event loop.

    python bench/workspace.py [--cases 200] [--trials 5] [--files 40] [-j 16] [--loop]

Prints wall time of the evaluate call per trial and the mean of the trials' own `duration_s`; with `--loop`, the
event loop's own time per trial (cProfile of the main thread, so inflated by the profiler, but comparable between
versions) and how much of it was `rmtree`. Wall times swing widely on a shared machine; the loop's time does not.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
import time
from pathlib import Path

import trialrun as tr
from trialrun import expect


def make_cases(n: int, workspace: Path) -> list[tr.Case]:
    def setup(ctx: tr.TrialContext) -> None:
        shutil.copytree(workspace, ctx.workdir, dirs_exist_ok=True)

    def step(request: tr.wire.ModelRequest) -> tr.wire.Step:
        if request.last_tool_results:
            return tr.reply("The notes say: " + request.last_tool_results[0].content[:20])
        return tr.tool_call("read_file", path="notes/0.txt")

    def invoke(ctx: tr.TrialContext) -> tr.Run:
        return tr.Agent(ctx.scripted(step), tools=tr.shell_tools(ctx.workdir)).run("read my notes")

    return [tr.Case(name=f"case-{i}", setup=setup, invoke=invoke, expect_outcome=[expect.contains("notes say")])
            for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--loop", action="store_true", help="profile the event loop's time per trial")
    parser.add_argument("--concurrency", "-j", type=int, default=tr.DEFAULT_CONCURRENCY if hasattr(tr, "DEFAULT_CONCURRENCY") else 16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        for i in range(args.files):
            (workspace / "notes" / f"d{i % 4}").mkdir(parents=True, exist_ok=True)
            (workspace / "notes" / f"d{i % 4}" / f"{i}.txt").write_text(f"note {i}\n" * 20)
        (workspace / "notes").mkdir(exist_ok=True)
        (workspace / "notes" / "0.txt").write_text("Meeting with Sam on Tuesday\n")
        cases = make_cases(args.cases, workspace)
        profile = cProfile.Profile() if args.loop else None
        started = time.perf_counter()
        if profile is not None:
            report = profile.runcall(tr.evaluate, cases, trials=args.trials, concurrency=args.concurrency)
        else:
            report = tr.evaluate(cases, trials=args.trials, concurrency=args.concurrency)
        wall = time.perf_counter() - started
    count = args.cases * args.trials
    durations = [t.duration_s for c in report.cases for t in c.trials]
    assert report.passed_case_count == args.cases, report.failed_cases[0].trials[0]
    print(f"{args.cases} x {args.trials} shell-tools trials, {args.files} files each, concurrency {args.concurrency}: "
          f"{wall / count * 1000:.2f} ms/trial wall, {sum(durations) / count * 1000:.2f} ms mean trial duration_s")
    if profile is not None:
        on_loop = {name: 0.0 for name in ("run_trial", "rmtree")}
        for (file, _, name), (_, _, _, cumulative, _) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
            if name in on_loop and (file.endswith("runner.py") or file.endswith("shutil.py")):
                on_loop[name] += cumulative
        print(f"event loop: {on_loop['run_trial'] / count * 1000:.2f} ms/trial, of which rmtree "
              f"{on_loop['rmtree'] / count * 1000:.2f} ms")


if __name__ == "__main__":
    main()
