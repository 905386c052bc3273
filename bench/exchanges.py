"""What keeping the raw exchanges costs: `trialrun run all -k K` with the exchanges sidecar (the default) against
`--no-exchanges`, whole process, interleaved `--repeat` times; medians, the median of the pairwise ratios, and the
sidecar's size.

Each test asks "lookup key-i"; the scripted model (a YAML script) calls `lookup` `--calls` times, then answers.
`--system-kib N` pads the system prompt to N KiB, so every request is that big, as a real coding agent's are
(100 KB+ of instructions and tool schemas, sent again on every turn): the sidecar then scrubs and caps every body.

    python bench/exchanges.py [--tests 100] [--trials 3] [--calls 1] [--system-kib 0] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOL = '''
def lookup(key: str) -> str:
    """Look up a key."""
    return "value-" + key.removeprefix("key-")
'''


def write_suite(folder: Path, tests: int, calls: int, system_kib: int) -> None:
    suite = [{"id": f"lookup-{i}", "prompt": f"lookup key-{i}", "expected_tools": ["lookup"], "max_turns": calls + 1,
              "success_criteria": f"says value-{i}"} for i in range(tests)]
    (folder / "tests.json").write_text(json.dumps(suite, indent=1))
    lines = []
    for i in range(tests):
        lines.append(f"lookup-{i}:")
        lines += [f"  - tool_call: {{name: lookup, arguments: {{key: key-{i}}}}}"] * calls
        lines.append(f"  - reply: \"The value is value-{i}.\"")
    (folder / "model.yaml").write_text("\n".join(lines) + "\n")
    (folder / "lookup_tool.py").write_text(TOOL)
    system = "You answer lookups. " + ("Follow the house rules carefully. " * (system_kib * 1024 // 34))
    config = ['suite = "tests.json"', 'model = "scripted:model.yaml"', 'results_dir = "results"',
              'tools = ["lookup_tool:lookup"]', f"system = {json.dumps(system)}", f"turn_limit = {calls + 2}"]
    (folder / "trialrun.toml").write_text("\n".join(config) + "\n")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(folder: Path, trials: int, *extra: str) -> tuple[float, float]:
    """(wall, CPU) seconds of `trialrun run all -k TRIALS [extra]` as a process of its own."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all", "-k", str(trials), *extra], cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(folder)})
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"trialrun run failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=100)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--calls", type=int, default=1, help="tool calls per trial (turns = calls + 1)")
    parser.add_argument("--system-kib", type=int, default=0, help="pad the system prompt (so every request) to N KiB")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trialrun-bench-exchanges-") as name:
        folder = Path(name)
        write_suite(folder, args.tests, args.calls, args.system_kib)
        run(folder, 1)  # warm-up (file caches)
        on, off = [], []
        for _ in range(args.repeat):
            on.append(run(folder, args.trials))
            off.append(run(folder, args.trials, "--no-exchanges"))
        sidecars = sorted((folder / "results").glob("*.exchanges.ndjson"))
        size = sidecars[-1].stat().st_size
        results = sorted((folder / "results").glob("results_*.json"))[-1].stat().st_size
        print(f"{args.tests} tests x {args.trials} trials, {args.calls + 1} turns each, system prompt "
              f"{args.system_kib} KiB; medians of {args.repeat} interleaved pairs:")
        for what, i in (("wall", 0), ("CPU", 1)):
            ratios = [a[i] / b[i] for a, b in zip(on, off)]
            print(f"  {what:<4} with exchanges {statistics.median(a[i] for a in on):.2f} s, --no-exchanges "
                  f"{statistics.median(b[i] for b in off):.2f} s: {statistics.median(ratios):.2f}x "
                  f"(pairs: {', '.join(f'{r:.2f}' for r in ratios)})")
        print(f"  sidecar {size / 2**20:.1f} MiB ({size / (args.tests * args.trials) / 1024:.1f} KiB a trial); "
              f"result file {results / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
