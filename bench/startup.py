"""Start-up: `import trialrun`, `trialrun --help` and `trialrun --version`, each a whole process, beside a bare
`python -c pass`, interleaved `--repeat` times; medians (and spreads) of wall and CPU time (the child's
getrusage: far steadier than wall time on a shared machine).

`--against SRC` also runs each command with another checkout's `src` first on PYTHONPATH (an older commit, say:
`git archive COMMIT src | tar -x -C /tmp/old`), interleaved with this one, and prints the ratio this/that per
command: a before/after measured side by side. Bytecode caches are warm, as after `pip install` (with
PYTHONDONTWRITEBYTECODE set they are kept under a temporary PYTHONPYCACHEPREFIX); `--env-bytecode` leaves the
environment's bytecode settings as they are: with PYTHONDONTWRITEBYTECODE and an editable install (or a source
tree on PYTHONPATH) that has no caches, trialrun's own modules are compiled at every start, the installed
packages' caches (written by pip) are read.

    python bench/startup.py [--repeat 15] [--against /tmp/old/src] [--env-bytecode]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from time import perf_counter

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "import trialrun": ["-c", "import trialrun"],
    "trialrun --help": ["-c", "import sys; sys.argv[0] = 'trialrun'; from trialrun.cli import main; main(['--help'])"],
    "trialrun --version": ["-c", "import sys; sys.argv[0] = 'trialrun'; from trialrun.cli import main; main(['--version'])"],
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    started, cpu = perf_counter(), _cpu()
    done = subprocess.run([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall, cpu = perf_counter() - started, _cpu() - cpu
    if done.returncode:
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return wall, cpu


def environment(scratch: str, *, env_bytecode: bool = False) -> dict[str, str]:
    """This process's environment without PYTHONPATH; unless `env_bytecode`, with bytecode caches written (under
    `scratch` when PYTHONDONTWRITEBYTECODE is set), so that a start reads them as it would after `pip install`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if not env_bytecode and env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = str(Path(scratch) / "pycache")
    return env


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--against", help="another checkout's src folder, run interleaved with this one")
    parser.add_argument("--env-bytecode", action="store_true", help="the environment's bytecode settings, as they are")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trialrun-bench-startup-") as scratch:
        env = environment(scratch, env_bytecode=args.env_bytecode)
        sides = {"this": env}
        if args.against:
            sides["that"] = {**env, "PYTHONPATH": str(Path(args.against).resolve())}
        for side in sides.values():  # warm-up: file caches, and the bytecode caches written
            for argv in COMMANDS.values():
                _timed(argv, side)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {(s, c): [] for s in sides for c in COMMANDS}
        for round_ in range(args.repeat):
            order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
            for command, argv in COMMANDS.items():
                for side in order:
                    times[side, command].append(_timed(argv, sides[side]))
        bytecode = "the environment's bytecode settings" if args.env_bytecode else "warm bytecode caches"
        print(f"whole processes, medians (min-max) of {args.repeat} interleaved runs, {bytecode}:")
        for command in COMMANDS:
            for side in sides:
                runs = times[side, command]
                label = command + (f" [{side}]" if args.against else "")
                line = f"  {label:<28} wall {_spread([w for w, _ in runs]):<20} CPU {_spread([c for _, c in runs])}"
                if side == "this" and args.against:
                    ratios = [a / b for (_, a), (_, b) in zip(runs, times["that", command])]
                    walls = [a / b for (a, _), (b, _) in zip(runs, times["that", command])]
                    line += (f"  this/that: CPU {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), "
                             f"wall {statistics.median(walls):.2f}")
                print(line)


if __name__ == "__main__":
    main()
