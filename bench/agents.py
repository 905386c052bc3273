"""Process agents at the speed of the agent (issue 23): each installed preset through trialrun against the same
agent run bare, the sandbox's own cost, trials filling the cores, and the guards of the other benchmarks.

    python bench/agents.py [--repeat 8] [--agents pi,codex,claude-code,opencode] [--parallel 8]
                           [--sections stop,table,sandbox,parallel,guards]

0. Closing a trial's endpoint: `ctx.aclose()`'s time and the event loop's longest stall meanwhile (run it with
   PYTHONPATH at an older tree's src for the figure before).

1. The table. Per installed preset, one shell command and an answer per trial (the scripted model asks for
   `echo hi > marker.txt` through the agent's own shell tool, then answers): the agent run BARE (its program with
   the command line, configuration files and environment its preset would give it, started with
   `subprocess.run` against a `tr.serve(ScriptedModel)` endpoint that is already listening; only the process is
   timed), against a whole trial THROUGH ITS PRESET (`tr.evaluate` of one case, one trial: endpoint, private
   HOME, the run, the trajectory, two graders, teardown), without and with `sandbox = "bwrap"`. Every repetition
   runs each (agent, way) once, in a new random order; medians, and the median of the ratios within a
   repetition.
2. The sandbox over none for `true` and `node -e 0`, with the SAME environment on both sides (the sandbox's
   allow-list, so a variable that slows node down is absent from both): a ProcessAgent trial each way, and, under
   it, the bare command against bwrap alone (the same mounts, no endpoint) and the full wrapped command line
   (with the endpoint's handoff), so the sandbox's part is shown apart from the trial's. Sections 0 and 2 also run
   on an older tree (PYTHONPATH at its src: `--sections stop,sandbox`), for the figures before.
3. Eight trials of one preset at concurrency 2 against concurrency 1, beside the same agent run bare eight times,
   two at a time against one at a time (how far the agent itself scales here), shuffled repetitions.
4. The guards, from the other benchmarks' own functions: W1 in its three forms (async, sync with its timed tool,
   sync without a tool time limit) against its floor (`bench/agent.py`), W2 at 50 against its ideal,
   `import trialrun` and `--help` (`bench/startup.py`), memory retained per trial (`bench/overhead.py`).

The agent's exit is noticed as trialrun ships it (its keeper says so on its socket: `agents/_containment.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import trialrun as tr  # noqa: E402
from trialrun._contain.sandbox import ENV_ALLOW  # noqa: E402
from trialrun.agents import _process  # noqa: E402
from trialrun.wire import ModelRequest  # noqa: E402

PRESETS = tuple(tr.agents.CONTRACTS)  # every ready-made agent, its program from its contract
PROGRAMS = {name: contract.program for name, contract in tr.agents.CONTRACTS.items()}
OPTIONS: dict[str, dict[str, Any]] = {"claude-code": {"permission_mode": "acceptEdits"}}  # redirects allowed
PROMPT = "make the marker file"


def agents_path() -> str:
    base = os.environ.get("TRIALRUN_AGENTS_DIR") or str(Path.home() / ".cache" / "trialrun-agents")
    return str(Path(base) / "node_modules" / ".bin")


def installed(wanted: list[str]) -> dict[str, str]:
    search = agents_path() + os.pathsep + os.environ.get("PATH", "")
    found = {name: shutil.which(PROGRAMS[name], path=search) for name in wanted}
    return {name: path for name, path in found.items() if path}


def script(agent: tr.agents.Preset) -> Callable[[ModelRequest], Any]:
    """The agent's own shell tool once (`echo hi > marker.txt`), then an answer; a side request gets a title."""
    shell = agent.contract.shell_tool

    def step(request: ModelRequest) -> Any:
        if not request.tools:
            return tr.reply("Trial run")
        if request.last_tool_results:
            return tr.reply("made it")
        return tr.tool_call(shell.name, shell.call("echo hi > marker.txt"))

    return step


def _marker(run: tr.Run, ctx: tr.TrialContext) -> tr.Verdict:
    made = (ctx.workdir / "marker.txt").is_file()
    return tr.Verdict(made, "marker.txt made", "marker.txt was made" if made else "no marker.txt")


def preset_case(agent: tr.agents.Preset) -> tr.Case:
    return tr.Case(name=f"{agent.label}-marker", invoke=lambda ctx: agent(PROMPT, ctx, model=ctx.scripted(script(agent))),
                   expect_outcome=[_marker], expect_trajectory=[tr.expect.called(agent.shell_tool[0])])


def through_preset(agent: tr.agents.Preset, trials: int = 1, concurrency: int = 1) -> float:
    started = time.perf_counter()
    report = tr.evaluate([preset_case(agent)], trials=trials, concurrency=concurrency)
    elapsed = time.perf_counter() - started
    failed = [t.error or [v.reason for v in t.failed_verdicts] for c in report.cases for t in c.trials if not t.passed]
    assert not failed, f"{agent.label}: {failed[:2]}"
    return elapsed


def bare(agent: tr.agents.Preset) -> float:
    """The agent's own program, as its preset would start it (argv, configuration, environment), timed alone."""
    model = tr.ScriptedModel(script(agent))
    case = tr.Case(name="bare", invoke=lambda ctx: None, expect_outcome=[_marker])
    ctx = tr.TrialContext(case, 1)
    home = Path(tempfile.mkdtemp(prefix="trialrun-bench-home-"))
    try:
        with tr.serve(model) as endpoint:
            launch = agent.prepare(PROMPT, ctx, endpoint, home)
            env = agent.base_environment(home)
            env["PWD"] = str(ctx.workdir)
            env.update(_process.endpoint_env(endpoint, agent.api, agent.model_name))
            env.update(launch.env)
            env.update(agent.env)
            started = time.perf_counter()
            done = subprocess.run(launch.argv, cwd=ctx.workdir, env=env, stdin=subprocess.DEVNULL,
                                  capture_output=True, start_new_session=True)
            elapsed = time.perf_counter() - started
        assert done.returncode == 0 and (ctx.workdir / "marker.txt").is_file(), (agent.label, done.stderr[-500:])
        return elapsed
    finally:
        shutil.rmtree(home, ignore_errors=True)
        ctx.close()


def _median_ratio(tops: list[float], bottoms: list[float]) -> str:
    """The median of the ratios within repetitions (their range), and the ratio of the best times: on a shared,
    noisy machine the best of each is the run the others' load disturbed least."""
    ratios = [a / b for a, b in zip(tops, bottoms)]
    return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}; best {min(tops) / min(bottoms):.2f}x)"


def stopping(repeat: int) -> None:
    """What closing a trial with a served endpoint costs the event loop: the close's own time and the longest
    stretch in which the loop ran nothing else (a ticker task yields between its ticks)."""
    case = tr.Case(name="c", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("x")])

    async def measure() -> tuple[list[float], list[float]]:
        closes, stalls = [], []
        for _ in range(repeat * 4):
            ctx = tr.TrialContext(case, 1)
            ctx.serve(tr.ScriptedModel([tr.reply("x")]))
            await asyncio.sleep(0.01)
            ticks: list[float] = []

            async def ticker() -> None:
                while True:
                    ticks.append(time.perf_counter())
                    await asyncio.sleep(0)

            task = asyncio.ensure_future(ticker())
            await asyncio.sleep(0.002)
            before = time.perf_counter()
            await ctx.aclose()
            after = time.perf_counter()
            await asyncio.sleep(0.002)
            task.cancel()
            around = [t for t in ticks if before - 0.002 <= t <= after + 0.002]
            closes.append(after - before)
            stalls.append(max((b - a for a, b in zip(around, around[1:])), default=after - before))
        return closes, stalls

    closes, stalls = asyncio.run(measure())
    print(f"\n0. Closing a trial's endpoint ({len(closes)} trials, {tr.__file__}): ctx.aclose() median "
          f"{statistics.median(closes) * 1e3:.2f} ms (max {max(closes) * 1e3:.1f}), the event loop's longest stall "
          f"median {statistics.median(stalls) * 1e3:.2f} ms (max {max(stalls) * 1e3:.1f})")


def table(programs: dict[str, str], repeat: int) -> None:
    ways: dict[str, Callable[[], float]] = {}
    for name, path in programs.items():
        plain = tr.agents.preset(name, path=path, **OPTIONS.get(name, {}))
        boxed = tr.agents.preset(name, path=path, sandbox="bwrap", **OPTIONS.get(name, {}))
        ways[f"{name}|bare"] = lambda a=plain: bare(a)
        ways[f"{name}|preset"] = lambda a=plain: through_preset(a)
        ways[f"{name}|bwrap"] = lambda a=boxed: through_preset(a)
    for run in ways.values():  # warm-up: file caches, each program's first start
        run()
    times: dict[str, list[float]] = {key: [] for key in ways}
    for _ in range(repeat):
        order = list(ways)
        random.shuffle(order)
        for key in order:
            times[key].append(ways[key]())
    columns = ["preset", "bwrap"]
    print(f"\n1. Each preset against the same agent run bare, {repeat} shuffled repetitions, medians (wall; the ratio "
          "is the median of the ratios within a repetition, with their range):")
    print(f"  {'agent':<12} {'bare':>7}  " + "  ".join(f"{c:>8} {'/bare':<28}" for c in columns))
    for name in programs:
        b = times[f"{name}|bare"]
        cells = [f"{statistics.median(times[f'{name}|{c}']):7.2f}s {_median_ratio(times[f'{name}|{c}'], b):<28}"
                 for c in columns]
        print(f"  {name:<12} {statistics.median(b):6.2f}s  " + "  ".join(cells))


@contextlib.contextmanager
def allow_listed_environment() -> Iterator[None]:
    """os.environ cut to the sandbox's allow-list for the duration: both sides start from the same variables."""
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update({key: saved[key] for key in ENV_ALLOW if key in saved})
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def sandbox_cost(repeat: int) -> None:
    from trialrun._contain import sandbox as sandboxes

    box = sandboxes.Bwrap()
    print(f"\n2. The sandbox over none, the same environment both sides (the allow-list), {repeat * 3} shuffled "
          "repetitions, medians and best times (wall):")
    with allow_listed_environment():
        env = dict(os.environ)
        for command in (["true"], ["node", "-e", "0"]):
            agents = {way: tr.ProcessAgent(command, sandbox=way, timeout_s=60) for way in ("none", "bwrap")}
            work = Path(tempfile.mkdtemp(prefix="trialrun-bench-sandbox-"))
            endpoint = tr.serve(tr.ScriptedModel([tr.reply("x")])).start()
            box_for = box.for_command(command) if hasattr(box, "for_command") else box  # (an older tree: --against)

            def trial(way: str) -> float:
                case = tr.Case(name="c", invoke=lambda ctx: agents[way]("p", ctx, model=ctx.scripted([tr.reply("x")])),
                               expect_outcome=[tr.expect.not_contains("Traceback")])
                started = time.perf_counter()
                report = tr.evaluate([case])
                elapsed = time.perf_counter() - started
                assert report.cases[0].passed, report.cases[0].trials[0].error
                return elapsed

            def process(wrapped: bool, handoff: bool) -> float:
                argv, cleanup = list(command), None
                if wrapped:
                    argv, _, cleanup = box_for.wrap(argv, env, workdir=work, home=None,
                                                    endpoint=endpoint if handoff else None)
                started = time.perf_counter()
                subprocess.run(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=True)
                elapsed = time.perf_counter() - started
                if cleanup is not None:
                    cleanup()
                return elapsed

            ways: dict[str, Callable[[], float]] = {
                "trial none": lambda: trial("none"), "trial bwrap": lambda: trial("bwrap"),
                "command alone": lambda: process(False, False), "bwrap alone": lambda: process(True, False),
                "bwrap + handoff": lambda: process(True, True)}
            for run in ways.values():
                run()
            times: dict[str, list[float]] = {key: [] for key in ways}
            for _ in range(repeat * 3):
                order = list(ways)
                random.shuffle(order)
                for key in order:
                    times[key].append(ways[key]())
            endpoint.stop()
            shutil.rmtree(work, ignore_errors=True)
            for label, pick in (("median", statistics.median), ("best", min)):
                m = {key: pick(values) * 1e3 for key, values in times.items()}
                print(f"  {' '.join(command) if label == 'median' else '':<10} {label:<6} trial: none "
                      f"{m['trial none']:6.1f} ms, bwrap {m['trial bwrap']:6.1f} ms ({m['trial bwrap'] - m['trial none']:+.1f})")
                print(f"  {'':<10} {'':<6} process: alone {m['command alone']:6.1f} ms, bwrap alone "
                      f"{m['bwrap alone']:6.1f} ms ({m['bwrap alone'] - m['command alone']:+.1f}), with the endpoint's "
                      f"handoff {m['bwrap + handoff']:6.1f} ms ({m['bwrap + handoff'] - m['command alone']:+.1f}; the "
                      f"handoff {m['bwrap + handoff'] - m['bwrap alone']:+.1f})")


def parallel(programs: dict[str, str], trials: int, repeat: int) -> None:
    """`trials` trials of one preset at concurrency 2 against 1, beside the same agent run bare that many times
    two at a time against one at a time (how far the agent itself scales on this machine: the yardstick)."""
    from concurrent.futures import ThreadPoolExecutor

    name = next((n for n in ("codex", "claude-code", "pi", "opencode") if n in programs), None)
    if name is None:
        return
    agent = tr.agents.preset(name, path=programs[name], **OPTIONS.get(name, {}))

    def bare_runs(concurrency: int) -> float:
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(lambda _: bare(agent), range(trials)))
        return time.perf_counter() - started

    ways: dict[str, Callable[[], float]] = {
        "preset 1": lambda: through_preset(agent, trials, 1), "preset 2": lambda: through_preset(agent, trials, 2),
        "bare 1": lambda: bare_runs(1), "bare 2": lambda: bare_runs(2)}
    times: dict[str, list[float]] = {key: [] for key in ways}
    for _ in range(repeat):
        order = list(ways)
        random.shuffle(order)
        for key in order:
            times[key].append(ways[key]())
    print(f"\n3. {trials} trials of {name}, concurrency 2 against 1, {repeat} shuffled repetitions (wall):")
    for label in ("preset", "bare"):
        one, two = times[f"{label} 1"], times[f"{label} 2"]
        print(f"  {label:<8} {statistics.median(one):6.2f} s at 1, {statistics.median(two):6.2f} s at 2: "
              f"{_median_ratio(two, one)}")


def guards(repeat: int) -> None:
    import agent as w1  # bench/agent.py
    import overhead  # bench/overhead.py
    import startup  # bench/startup.py

    print("\n4. Guards (the other benchmarks' functions):")
    cases, trials = 200, 5
    forms = {"async": w1.make_cases(cases, asynchronous=True), "sync with its timed tool": w1.make_cases(cases),
             "sync without a tool limit": w1.make_cases(cases, untimed=True)}
    w1.run("", w1.make_cases(20), 1, quiet=True)
    w1.floor(20, 1)
    floors: list[float] = []
    measured: dict[str, list[float]] = {form: [] for form in forms}
    for _ in range(repeat):
        floors.append(w1.floor(cases, trials)[1])
        for form, form_cases in forms.items():
            measured[form].append(w1.run("", form_cases, trials, quiet=True)[1])
    print("  W1 CPU against the floor (goal <= 2.0x, issue 35): "
          + ", ".join(f"{form} {_median_ratio(cpu, floors)}" for form, cpu in measured.items()))
    slow = w1.make_cases(cases, 0.05)
    walls = [w1.run("", slow, trials, quiet=True, concurrency=50)[0] for _ in range(3)]
    ideal = 2 * cases * trials * 0.05 / 50
    print(f"  W2 at 50: {statistics.median(walls):.2f} s, {statistics.median(walls) / ideal:.2f}x the ideal "
          f"{ideal:.2f} s (goal <= 1.08x)")
    with tempfile.TemporaryDirectory(prefix="trialrun-bench-guards-") as scratch:
        # warm bytecode caches, as bench/startup.py measures: with PYTHONDONTWRITEBYTECODE (set on some machines
        # here) and a source tree on PYTHONPATH, trialrun's modules would otherwise be compiled at every start
        env = {**startup.environment(scratch), "PYTHONPATH": str(Path(tr.__file__).resolve().parents[1])}
        for label in ("import trialrun", "trialrun --help"):
            argv = startup.COMMANDS[label]
            startup._timed(argv, env)
            cpu = [startup._timed(argv, env)[1] for _ in range(repeat * 2)]
            print(f"  {label}: {statistics.median(cpu) * 1e3:.0f} ms CPU (goal <= 150 ms)")
    overhead.retained(overhead.sync_cases(1000), 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=8)
    parser.add_argument("--agents", default=",".join(PRESETS))
    parser.add_argument("--parallel", type=int, default=8, help="trials of the concurrency comparison (0: skip)")
    parser.add_argument("--sections", default="stop,table,sandbox,parallel,guards",
                        help="which to run, of stop, table, sandbox, parallel, guards")
    args = parser.parse_args()
    os.environ["PATH"] = agents_path() + os.pathsep + os.environ.get("PATH", "")
    programs = installed([name.strip() for name in args.agents.split(",") if name.strip()])
    print(f"presets installed: {', '.join(programs) or 'none'}; "
          f"load average {os.getloadavg()[0]:.1f}")
    sections = {name.strip() for name in args.sections.split(",")}
    if "stop" in sections:
        stopping(args.repeat)
    if programs and "table" in sections:
        table(programs, args.repeat)
    if "sandbox" in sections:
        sandbox_cost(args.repeat)
    if programs and args.parallel and "parallel" in sections:
        parallel(programs, args.parallel, max(2, args.repeat // 2))
    if "guards" in sections:
        guards(max(3, args.repeat // 2))
    print(f"\nload average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
