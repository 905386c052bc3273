"""The CLI against the library: `trialrun run all -k 5` on a 200-test suite, whole process, against the same
evaluation in-process (`evaluate(load_suite(...), trials=5)`, the pytest plugin's loader, in an already-running interpreter).

The suite is written to a temporary folder: test i asks "lookup key-i", the scripted model (a YAML script file,
as a user writes it) calls `lookup(key="key-i")` and answers "The value is value-i."; the tool is a plain
function (`tools = ["lookup_tool:lookup"]`, no workspace), so no trial needs a workdir. `--shell` uses the shell
tools instead (`read_file` of a workspace file), where every trial does. The two are interleaved `--repeat`
times; the medians and the median of the pairwise ratios are printed.

Both sides do the same evaluation from the same files; what only the CLI does is its own job and is counted against
it: starting Python and importing (the in-process side is warm), printing the table, the journal of finished
trials, the result file and latest.json. The child's bytecode caches are warm, as after `pip install`: with
PYTHONDONTWRITEBYTECODE set (as in some sandboxes), an editable install would otherwise compile trialrun's modules
in every process (about 0.1 s), so the child writes and reads them under a temporary PYTHONPYCACHEPREFIX, filled
by the warm-up run.

A second figure, labelled as such, puts the CLI against a COLD in-process script: `python -c` that imports
trialrun, loads the same suite, evaluates it and saves the same result file (`ResultsStore.save`: the result file
and latest.json), in a process of its own like the CLI; what is left between them is what only the command does
(its own imports, the table, the journal, the sidecar, the process's exit). The warm figure above it stays the
issue's measure.

A third figure is the FLOOR: a process that only starts Python and imports what the CLI cannot do without (httpx;
pydantic's BaseModel; click; yaml; asyncio;
rich.console), interleaved with the others. No CLI can cost less than the warm library plus that, so the lowest
CLI/library ratio it leaves possible is 1 + floor/library (per pair; the median is printed).

`--against SRC` also runs the whole process with another checkout's `src` first on PYTHONPATH (an older commit:
`git archive COMMIT src | tar -x -C /tmp/old`), interleaved, and prints this/that: a before/after side by side.

    python bench/cli.py [--tests 200] [--trials 5] [--repeat 5] [--shell] [--no-exchanges] [--against /tmp/old/src]
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


def write_suite(folder: Path, tests: int, shell: bool) -> None:
    suite = [{"id": f"lookup-{i}", "prompt": f"lookup key-{i}",
              "expected_tools": ["read_file" if shell else "lookup"], "max_turns": 2,
              "success_criteria": f"says value-{i}"} for i in range(tests)]
    (folder / "tests.json").write_text(json.dumps(suite, indent=1))
    lines = []
    for i in range(tests):
        call = ("{name: read_file, arguments: {path: value.txt}}" if shell
                else f"{{name: lookup, arguments: {{key: key-{i}}}}}")
        lines += [f"lookup-{i}:", f"  - tool_call: {call}", f"  - reply: \"The value is value-{i}.\""]
    (folder / "model.yaml").write_text("\n".join(lines) + "\n")
    (folder / "lookup_tool.py").write_text(TOOL)
    config = ['suite = "tests.json"', 'model = "scripted:model.yaml"', 'results_dir = "results"']
    if shell:
        (folder / "workspace").mkdir(exist_ok=True)
        (folder / "workspace" / "value.txt").write_text("value\n")
        config += ['tools = ["read_file"]', 'workspace = "workspace"']
    else:
        config += ['tools = ["lookup_tool:lookup"]']
    (folder / "trialrun.toml").write_text("\n".join(config) + "\n")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def child_env(folder: Path, src: str | None = None) -> dict[str, str]:
    """The whole process's environment: the tool module importable (and `src` first, when given), bytecode caches
    written and read (see above)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*([str(Path(src).resolve())] if src else []), str(folder)])}
    if env.pop("PYTHONDONTWRITEBYTECODE", None):
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
    return env


#: extra `trialrun run` arguments (`--no-exchanges`: no sidecar, like the in-process side)
RUN_ARGS: list[str] = []


def whole_process(folder: Path, trials: int, src: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of `trialrun run all -k TRIALS` as a process of its own (with `src`'s trialrun)."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "-m", "trialrun", "run", "all", "-k", str(trials), *RUN_ARGS], cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child_env(folder, src))
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"trialrun run failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


COLD_SCRIPT = """
import sys
from pathlib import Path
import trialrun as tr
from trialrun.suite._build import load_suite
from trialrun.suite.config import load_config
from trialrun.report.store import ResultsStore
config = load_config(Path.cwd())
report = tr.evaluate(load_suite(Path.cwd() / "tests.json", config), trials=int(sys.argv[1]))
ResultsStore(config.results_path()).save(report)
"""


def cold_script(folder: Path, trials: int) -> tuple[float, float]:
    """(wall, CPU) seconds of `COLD_SCRIPT` as a process of its own: the same evaluation, started cold."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "-c", COLD_SCRIPT, str(trials)], cwd=folder, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=child_env(folder))
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the cold script failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


FLOOR_SCRIPT = """
import httpx
from pydantic import BaseModel
import asyncio, click, yaml, rich.console
"""


def floor(folder: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of `FLOOR_SCRIPT` as a process of its own: Python's start and the CLI's dependencies."""
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run([sys.executable, "-c", FLOOR_SCRIPT], cwd=folder, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=child_env(folder))
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the floor failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _children_cpu() - cpu


def in_process(folder: Path, trials: int) -> tuple[float, float]:
    """(wall, CPU) seconds of loading the suite and evaluating it in this (warm) interpreter."""
    import trialrun as tr
    from trialrun.suite._build import load_suite
    from trialrun.suite.config import load_config

    os.chdir(folder)
    sys.path.insert(0, str(folder))
    try:
        started, cpu = time.perf_counter(), time.process_time()  # the same work from the same files: load the suite and its script, run it
        cases = load_suite(folder / "tests.json", load_config(folder))
        report = tr.evaluate(cases, trials=trials)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        sys.path.remove(str(folder))
    assert report.passed_case_count == len(cases), [c.name for c in report.failed_cases][:3]
    return elapsed, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=200)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", help="write the suite here and keep it (for profiling)")
    parser.add_argument("--shell", action="store_true", help="shell tools and a workspace (a workdir per trial)")
    parser.add_argument("--against", help="another checkout's src folder: its whole process, interleaved")
    parser.add_argument("--no-exchanges", action="store_true",
                        help="the CLI keeps no raw exchanges (the sidecar is on by default; the in-process side keeps none)")
    args = parser.parse_args()
    if args.no_exchanges:
        RUN_ARGS.append("--no-exchanges")
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        write_suite(Path(args.keep), args.tests, args.shell)
        return
    with tempfile.TemporaryDirectory(prefix="trialrun-bench-cli-") as name:
        folder = Path(name)
        write_suite(folder, args.tests, args.shell)
        in_process(folder, 1)  # warm-up (imports, caches)
        whole_process(folder, 1)
        cold_script(folder, 1)
        floor(folder)
        if args.against:
            whole_process(folder, 1, args.against)
        cli, lib, old, cold, bottom = [], [], [], [], []
        for _ in range(args.repeat):
            cli.append(whole_process(folder, args.trials))
            lib.append(in_process(folder, args.trials))
            cold.append(cold_script(folder, args.trials))
            bottom.append(floor(folder))
            if args.against:
                old.append(whole_process(folder, args.trials, args.against))
        kind = "shell tools + workspace" if args.shell else "plain tool, no workspace"
        print(f"{args.tests} tests x {args.trials} ({kind}), medians of {args.repeat} interleaved pairs; the issue's "
              "measure, against the WARM library (an already-running interpreter):")
        for what, i in (("wall", 0), ("CPU", 1)):
            ratios = [c[i] / l[i] for c, l in zip(cli, lib)]
            print(f"  {what:<4} `trialrun run all -k {args.trials}` {statistics.median(c[i] for c in cli):.2f} s whole "
                  f"process; in-process {statistics.median(l[i] for l in lib):.2f} s; CLI/library "
                  f"{statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)})")
        print("  second figure, against a COLD script (`python -c`: import trialrun, load, evaluate, save the result "
              "file; a process of its own):")
        for what, i in (("wall", 0), ("CPU", 1)):
            ratios = [c[i] / s[i] for c, s in zip(cli, cold)]
            print(f"  {what:<4} cold script {statistics.median(s[i] for s in cold):.2f} s; CLI/cold script "
                  f"{statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)})")
        print("  the FLOOR (a process that starts Python and imports httpx, pydantic.BaseModel, click, yaml, asyncio, "
              "rich.console; nothing else):")
        for what, i in (("wall", 0), ("CPU", 1)):
            lowest = [1 + f[i] / l[i] for f, l in zip(bottom, lib)]
            print(f"  {what:<4} floor {statistics.median(f[i] for f in bottom):.2f} s; the lowest CLI/library it leaves "
                  f"possible (1 + floor/library) {statistics.median(lowest):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in lowest)})")
        if args.against:
            for what, i in (("wall", 0), ("CPU", 1)):
                ratios = [c[i] / o[i] for c, o in zip(cli, old)]
                against = [o[i] / l[i] for o, l in zip(old, lib)]
                print(f"  {what:<4} {args.against}: {statistics.median(o[i] for o in old):.2f} s whole process, "
                      f"{statistics.median(against):.2f}x the library; this/that {statistics.median(ratios):.2f} "
                      f"(pairs: {', '.join(f'{r:.2f}' for r in ratios)})")

if __name__ == "__main__":
    main()
