"""A process agent's trial, phase by phase: how long after the agent's own last instruction trialrun notices it
exited and returns, and what the trial costs in all (issue 23: "noticing the agent's exit").

    python bench/agent_exit.py [--trials 20] [--sleep 0.3] [--sandbox none|bwrap] [--against OLD_SRC] [--rounds 5]
                               [--standalone]

The agent is `sh -c 'date; sleep S; date'` (the wall clock, read by `date` in the agent and by trialrun: the same
clock): `start` is from calling the agent to its first instruction, `noticed` from its last instruction to
`arun` returning (exit noticed, what it left killed, output read, trajectory decoded), `total` the whole call, and
`cpu` the CPU time per trial of this process, its children and the keeper server's (with `--standalone`, this
tree also with a new keeper interpreter per trial, as the sandbox runs it, instead of a fork of the server). With `--against`, processes with PYTHONPATH at this
tree and at OLD_SRC take turns `--rounds` times (the machine is shared: only side-by-side figures compare), and the
medians of each are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"


def _cpu() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def _server_cpu() -> float:
    """CPU seconds of this process's keeper server and the keepers it forked and reaped (not our children)."""
    try:
        from trialrun._contain import keeper as _containment
    except ImportError:  # a tree from before the keeper
        return 0.0
    server = getattr(_containment, "_Server", None)
    current = getattr(server, "current", None)
    if current is None:
        return 0.0
    try:
        fields = Path(f"/proc/{current.process.pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def measure(trials: int, sleep: float, sandbox: str, keeper: str) -> dict[str, list[float]]:
    import trialrun as tr

    if keeper == "standalone":  # every trial's keeper a new interpreter, as in the sandbox
        from trialrun._contain import keeper as _containment

        _containment._Server.send = classmethod(lambda cls, fds, body: False)  # type: ignore[assignment]

    agent = tr.ProcessAgent(["sh", "-c", f"date +%s.%N; sleep {sleep}; date +%s.%N"], sandbox=sandbox)
    rows: dict[str, list[float]] = {"start": [], "noticed": [], "total": [], "cpu": []}

    async def one(ctx: tr.TrialContext) -> object:
        began, used = time.time(), _cpu() + _server_cpu()
        run = await agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))
        ended = time.time()
        first, last = map(float, run.output.split())
        rows["start"].append((first - began) * 1000)
        rows["noticed"].append((ended - last) * 1000)
        rows["total"].append((ended - began) * 1000)
        rows["cpu"].append((_cpu() + _server_cpu() - used) * 1000)
        return run

    cases = [tr.Case(name=f"c{i}", invoke=one, expect_outcome=[tr.expect.not_contains("Traceback")])
             for i in range(trials)]
    tr.evaluate(cases, concurrency=1)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--sleep", type=float, default=0.3)
    parser.add_argument("--sandbox", default="none")
    parser.add_argument("--against", help="another tree's src folder, to compare with side by side")
    parser.add_argument("--standalone", action="store_true", help="also this tree with a new keeper interpreter a trial")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--keeper", default="server", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.trials, args.sleep, args.sandbox, args.keeper)))
        return
    trees = {"this tree": (str(HERE), "server")} | ({"standalone": (str(HERE), "standalone")} if args.standalone else {}) \
        | ({"against": (args.against, "server")} if args.against else {})
    found: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    for _ in range(args.rounds if len(trees) > 1 else 1):
        for name, (src, keeper) in trees.items():
            done = subprocess.run([sys.executable, __file__, "--json", "--trials", str(args.trials), "--sleep",
                                   str(args.sleep), "--sandbox", args.sandbox, "--keeper", keeper],
                                  capture_output=True, text=True,
                                  env={**os.environ, "PYTHONPATH": src}, check=True)
            for key, values in json.loads(done.stdout.splitlines()[-1]).items():
                found[name].setdefault(key, []).extend(values)
    print(f"sandbox {args.sandbox}, agent sleeps {args.sleep}s, load {os.getloadavg()[0]:.1f}; medians (p10-p90) in ms:")
    for name, rows in found.items():
        cells = []
        for key in ("start", "noticed", "total", "cpu"):
            xs = sorted(rows[key])
            cells.append(f"{key} {statistics.median(xs):6.1f} ({xs[len(xs) // 10]:.0f}-{xs[len(xs) * 9 // 10]:.0f})")
        print(f"  {name:10} " + "  ".join(cells))


if __name__ == "__main__":
    main()
