"""W1 of ../shared/bench/WORKLOAD.md in trialrun and in its peers, pydantic-evals (with pydantic-ai's agent loop)
and Inspect AI, each as a whole process in a virtualenv of its own (never trialrun's):

    python bench/peers.py --make-venvs            # once: the peers' venvs, pinned, under --venvs
    python bench/peers.py [--repeat 3] [--cases 200] [--trials 5] [--venvs DIR]

Each framework runs the same W1 (`bench/peers/*_w1.py`: 200 cases of "lookup key-i", a scripted model that decides
from the conversation it is shown, a plain `lookup` tool through the framework's own tool-calling loop, an outcome
and a trajectory check, 5 trials a case) with its default settings, and checks that every trial was graded and
passed before it reports. The processes take turns, in a new random order each repetition; medians are quoted:
whole-process wall time (import included), the in-process time and CPU of the evaluation call, and peak RSS, with
each figure's ratio to trialrun's sync form (its slowest: a sync invoke whose timed tool runs on a companion thread).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# name: (script, the packages of its venv, pinned to the versions measured)
PEERS: dict[str, tuple[str, list[str]]] = {
    "pydantic-evals": ("pydantic_evals_w1.py", ["pydantic-evals==2.71.0", "pydantic-ai-slim==2.71.0"]),
    "inspect_ai": ("inspect_w1.py", ["inspect-ai==0.3.285"]),
}


def make_venvs(venvs: Path) -> None:
    """One venv per peer, with only that framework (and what it needs) installed."""
    for name, (_, packages) in PEERS.items():
        folder = venvs / name
        if not (folder / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
        subprocess.run([str(folder / "bin" / "python"), "-m", "pip", "install", "-q", *packages], check=True)
        print(f"{name}: {folder}")


def run_once(argv: list[str]) -> tuple[float, dict[str, object]]:
    """One whole process: (its wall time, what it reported). A run that fails or reports nothing stops the bench."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - started
    lines = [line for line in done.stdout.splitlines() if line.startswith("W1-RESULT ")]
    if done.returncode != 0 or len(lines) != 1:
        sys.exit(f"{' '.join(argv)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return wall, json.loads(lines[0].removeprefix("W1-RESULT "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venvs", type=Path, default=Path.home() / ".cache" / "trialrun-bench-peers")
    parser.add_argument("--make-venvs", action="store_true", help="create the peers' venvs, then stop")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    if args.make_venvs:
        make_venvs(args.venvs)
        return
    size = ["--cases", str(args.cases), "--trials", str(args.trials)]
    commands = {
        "trialrun (sync)": [sys.executable, str(HERE / "peers" / "trialrun_w1.py"), *size, "--form", "sync"],
        "trialrun (async)": [sys.executable, str(HERE / "peers" / "trialrun_w1.py"), *size, "--form", "async"],
    }
    for name, (script, _) in PEERS.items():
        python = args.venvs / name / "bin" / "python"
        if not python.exists():
            sys.exit(f"no venv for {name} at {python.parent.parent}: run `python bench/peers.py --make-venvs` first")
        commands[name] = [str(python), str(HERE / "peers" / script), *size]
    walls: dict[str, list[float]] = {name: [] for name in commands}
    reports: dict[str, list[dict[str, object]]] = {name: [] for name in commands}
    for repetition in range(args.repeat):
        order = list(commands)
        random.shuffle(order)
        for name in order:
            wall, report = run_once(commands[name])
            walls[name].append(wall)
            reports[name].append(report)
        print(f"repetition {repetition + 1}/{args.repeat} done", file=sys.stderr)

    def median(name: str, key: str) -> float:
        return statistics.median(float(report[key]) for report in reports[name])  # type: ignore[arg-type]

    base = "trialrun (sync)"
    print(f"W1, {args.cases} cases x {args.trials} trials, medians of {args.repeat} (x: against {base}):")
    print(f"  {'framework':<18} {'version':<9} {'process':>15} {'evaluation':>16} {'its CPU':>15} {'peak RSS':>15}")
    for name in commands:
        process, evaluation = statistics.median(walls[name]), median(name, "eval_s")
        cpu, rss = median(name, "eval_cpu_s"), median(name, "peak_rss_mib")
        print(f"  {name:<18} {str(reports[name][0]['version']):<9} "
              f"{process:6.2f} s {process / statistics.median(walls[base]):5.1f}x "
              f"{evaluation:7.3f} s {evaluation / median(base, 'eval_s'):5.1f}x "
              f"{cpu:6.3f} s {cpu / median(base, 'eval_cpu_s'):5.1f}x "
              f"{rss:5.0f} MiB {rss / median(base, 'peak_rss_mib'):4.1f}x")


if __name__ == "__main__":
    main()
