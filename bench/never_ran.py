"""What `expect.never_ran` costs on a long trajectory: N calls, a third writing a script (`write_file`), a third
running it through a pipeline, a third editing it in place (`sed -i`), graded once on a cold cache (every command is
new). The time per call must stay flat as N grows (each call's writes are folded once, not once per later call).

    python bench/never_ran.py [--calls 100 400 1600] [--workspace]

`--workspace` grades inside a trial-like context whose workspace model holds 200 files at the start.
"""

from __future__ import annotations

import argparse
import time

import trialrun as tr
from trialrun import expect
from trialrun._util.workspace import Workspace


def trajectory(n: int, salt: str) -> tr.Trajectory:
    turns = []
    for i in range(n):
        if i % 3 == 0:
            call = tr.ToolCall("write_file", {"path": f"s{i}.sh", "content": f"echo {salt} {i}\n"}, f"c{i}")
        elif i % 3 == 1:
            call = tr.ToolCall("bash", {"command": f"sh s{i - 1}.sh && ls -la | grep x{salt}{i}"}, f"c{i}")
        else:
            call = tr.ToolCall("bash", {"command": f"sed -i 's/echo/printf/' s{i - 2}.sh; cat s{i - 2}.sh"}, f"c{i}")
        turns.append(tr.Turn(tool_calls=[call], tool_results=[tr.ToolResult(f"c{i}", "ok")]))
    return tr.Trajectory(turns=turns, model_calls=n, offered_tools=["bash", "write_file"])


class _Context:
    def __init__(self, workspace: Workspace | None) -> None:
        self.workspace = workspace


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, nargs="+", default=[100, 400, 1600])
    parser.add_argument("--workspace", action="store_true")
    args = parser.parse_args()
    workspace = Workspace("/tmp/bench-ws", {f"src/f{i}.sh": f"ls {i}\n" for i in range(200)}) if args.workspace else None
    for n in args.calls:
        run = tr.Run("x", trajectory(n, f"n{n}"))
        started = time.perf_counter()
        [verdict] = tr.check([expect.never_ran("rm -rf")], run, _Context(workspace))
        took = time.perf_counter() - started
        assert verdict.passed, verdict.reason
        print(f"{n:6d} calls: {took:7.3f} s  ({took / n * 1000:.2f} ms a call)")


if __name__ == "__main__":
    main()
