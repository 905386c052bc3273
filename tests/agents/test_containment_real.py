"""Nothing a real agent starts outlives its trial, whatever the processes do to get away, and the trial says what
was killed. The truth is taken from /proc, outside trialrun: every process the agent's command starts carries a
unique marker in its argv (a symlink to `sleep` named after the trial), and after the trial none may be alive.

The command (run through the agent's own shell tool, as a scripted model asks) starts a child in a new session
(`setsid`), a double-forked grandchild that ignores SIGTERM, a `nohup` job and a `setsid` child with an emptied
environment; then either blocks (the trial times out, or its case's timeout cancels it) or returns (the agent
finishes normally, leaving them running). All trials run in ONE evaluate, concurrently; Ctrl-C of a real
`trialrun run` is a second test, three runs at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _agent_scope
from _procs import holding

import trialrun as tr
from trialrun.wire import ModelRequest

AGENTS = ("pi", "claude-code", "opencode")
#: These scenarios also in bwrap for two of them (every preset runs in bwrap in the battery's ran-bwrap; here the
#: kills and the cancel, which are slow, stay with two that are quick to start)
BOXED = ("pi", "claude-code")
#: Claude Code runs the command only when its permissions allow it
OPTIONS: dict[str, dict[str, Any]] = {"claude-code": {"permission_mode": "acceptEdits", "allow": ["Bash"]}}
#: long enough for the slowest agent (opencode) to reach its first tool call on a loaded 2-core machine; in the gate
#: scope (pi and Claude Code only, each at its first tool call within seconds) the timeouts it waits out are shorter
LIMIT_S = 30.0 if _agent_scope.is_gate() else 90.0
#: What the command starts (each by the marker symlink `./$M`), and how it ends.
ESCAPES = """M="$1"
ln -sf {sleep} "./$M"
setsid "./$M" 1001 </dev/null >/dev/null 2>&1 &
( trap '' TERM; "./$M" 1002 </dev/null >/dev/null 2>&1 & )
nohup "./$M" 1003 </dev/null >/dev/null 2>&1 &
env -i setsid "./$M" 1005 </dev/null >/dev/null 2>&1 &
echo started > "${{2:-started}}"
"""
BLOCK = 'exec "./$M" 1004\n'  # the command itself never ends: the agent waits for it
STARTED = {"timeout": 5, "cancel": 5, "finished": 4}  # marker processes alive when the trial ends


def marked(marker: str) -> list[str]:
    """Every live process whose argv holds `marker` ("pid: argv"), read from /proc."""
    return holding(marker)


def started(marker: str) -> int:
    """How many of the command's own processes (`./MARKER N`) run."""
    return sum(1 for line in marked(marker) if line.split(": ", 1)[1].startswith(f"./{marker} "))


def still_alive(marker: str, within: float = 3.0) -> list[str]:
    """The marked processes alive after `within` seconds (a kill takes a moment to land)."""
    deadline = time.monotonic() + within
    while (alive := marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return alive


def slay(marker: str) -> None:
    """Kill what a failed test left (so a failure here leaves nothing behind either)."""
    for line in marked(marker):
        try:
            os.kill(int(line.split(":")[0]), signal.SIGKILL)
        except OSError:
            pass


def script(agent: tr.agents.Preset, command: str) -> Callable[[ModelRequest], Any]:
    """The agent's own shell tool runs `command` once; then the answer "done"."""
    tool, argument = agent.shell_tool or ("bash", "command")

    def step(request: ModelRequest) -> Any:
        if not request.tools:  # a side request (a title): never the main loop's step
            return tr.reply("Trial run")
        if request.last_tool_results:
            return tr.reply("done")
        arguments = {argument: command}
        if agent.label in ("claude-code", "opencode"):
            arguments["description"] = "start the helpers"
        return tr.tool_call(tool, arguments)

    return step


def escapes(blocking: bool) -> str:
    return ESCAPES.format(sleep=shutil.which("sleep")) + (BLOCK if blocking else "")


#: In the gate scope (tests/_agent_scope.py) opencode, the slow one here (it sets LIMIT_S), is left to the full scope.
SCENARIOS = [(scenario, label, box) for scenario in ("timeout", "finished", "cancel") for label in AGENTS
             for box in ("none", "bwrap") if (box == "none" or label in BOXED)
             and (label != "opencode" or not _agent_scope.is_gate())]


def _problems(key: tuple[str, str, str], trial: tr.TrialResult, marker: str, alive: list[str]) -> list[str]:
    """What is wrong with one scenario's trial (nothing: it is right)."""
    scenario = key[0]
    if alive:
        return [f"left alive after the trial: {alive}"]
    problems = []
    killed = [k for k in trial.killed or [] if marker in k]
    # what the command started was alive when the trial ended, and each is named (it was really there to kill)
    numbers = ("1001", "1002", "1003", "1005") + (("1004",) if scenario != "finished" else ())
    missing = [n for n in numbers if not any(k.endswith(f"{marker} {n}") for k in killed)]
    if missing:
        problems.append(f"the note does not list {missing}: killed={trial.killed}, error={trial.error}")
    if scenario == "timeout" and not (trial.error is not None and trial.error.type == "AgentError"
                                      and f"timed out after {LIMIT_S:g}s" in trial.error.message):
        problems.append(f"not the agent's timeout: {trial.error}")
    if scenario == "cancel" and not (trial.error is not None and trial.error.type == "TimeoutError"):
        problems.append(f"not the case's timeout: {trial.error}")
    if scenario == "finished" and not trial.passed:
        problems.append(f"did not pass: {trial.error}, {trial.verdicts}")
    return problems


def test_no_process_of_a_real_agent_outlives_its_trial_and_the_trial_says_what_was_killed(
        agent_path: Callable[[str], str]) -> None:
    """One evaluate, every scenario at once (a timeout, a normal end, a case's timeout; with and without bwrap)."""
    markers = {key: f"trc{uuid.uuid4().hex[:12]}" for key in SCENARIOS}
    cases = []
    for key in SCENARIOS:
        scenario, label, box = key
        agent = tr.agents.preset(label, path=agent_path(label), sandbox=box,
                                 timeout_s=None if scenario == "cancel" else LIMIT_S, **OPTIONS.get(label, {}))
        text = escapes(blocking=scenario != "finished")

        def setup(ctx: tr.TrialContext, text: str = text) -> None:
            (ctx.workdir / "escape.sh").write_text(text)

        def invoke(ctx: tr.TrialContext, agent: tr.agents.Preset = agent, marker: str = markers[key]) -> Any:
            return agent("start the helpers", ctx, model=ctx.scripted(script(agent, f"sh escape.sh {marker}")))

        cases.append(tr.Case(name="-".join(key), setup=setup, invoke=invoke, expect_outcome=[tr.expect.contains("done")],
                             timeout_s=LIMIT_S if scenario == "cancel" else None))
    try:
        report = tr.evaluate(cases, concurrency=len(cases))
        alive = {key: still_alive(markers[key]) for key in SCENARIOS}
    finally:
        for marker in markers.values():
            slay(marker)
    problems = {"-".join(key): found for key, case in zip(SCENARIOS, report.cases)
                if (found := _problems(key, case.trials[0], markers[key], alive[key]))}
    assert problems == {}


# -- Ctrl-C of a real `trialrun run` -----------------------------------------------------------------------------
def _project(root: Path, label: str, path: str, marker: str, sandbox: str) -> Path:
    project = root / f"{label}-{sandbox}"
    (project / "state" / "eval").mkdir(parents=True)
    (project / "workspace").mkdir()
    (project / "workspace" / "escape.sh").write_text(escapes(blocking=True))
    agent = tr.agents.preset(label, path=path, **OPTIONS.get(label, {}))
    tool, argument = agent.shell_tool or ("bash", "command")
    arguments: dict[str, str] = {argument: f"sh escape.sh {marker}"}
    if label in ("claude-code", "opencode"):
        arguments["description"] = "start the helpers"
    suite = [{"id": "hang", "prompt": "start the helpers", "expected_tools": [tool], "max_turns": 3,
              "success_criteria": "Says done", "expect": {"contains": "done"}}]
    (project / "state" / "eval" / "tests.json").write_text(json.dumps(suite))
    (project / "model.yaml").write_text(json.dumps({"hang": [{"tool_call": {"name": tool, "arguments": arguments}},
                                                              {"reply": "done"}]}))
    options = "".join(f"{name} = {json.dumps(value)}\n" for name, value in OPTIONS.get(label, {}).items())
    (project / "trialrun.toml").write_text(f'agent = "{label}"\nmodel = "scripted:model.yaml"\nworkspace = "workspace"\n'
                                           f'sandbox = "{sandbox}"\n[agent_options]\npath = {json.dumps(path)}\n{options}')
    return project


def _default_signals() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


#: Each agent through a real `trialrun run`, and pi in the sandbox too
RUNS = [(label, "none") for label in AGENTS] + [("pi", "bwrap")]
#: What a traceback, asyncio's complaints and click's abort look like after Ctrl-C (tests/cli/test_interrupt.py)
NOISE = ("Traceback", "never retrieved", "Aborted!", "CancelledError", "RuntimeError")


def test_ctrl_c_of_a_real_trialrun_run_leaves_no_process_of_the_agent(tmp_path: Path,
                                                                       agent_path: Callable[[str], str]) -> None:
    markers = {run: f"trc{uuid.uuid4().hex[:12]}" for run in RUNS}
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    runs: dict[tuple[str, str], subprocess.Popen[str]] = {}
    try:
        for run in RUNS:
            project = _project(tmp_path, run[0], agent_path(run[0]), markers[run], run[1])
            runs[run] = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "all"], cwd=project, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                         preexec_fn=_default_signals)
        deadline = time.monotonic() + 2 * LIMIT_S  # several CLI runs starting at once: slower than one evaluate
        waiting = set(RUNS)
        while waiting and time.monotonic() < deadline:
            for run in list(waiting):
                if started(markers[run]) >= 5:  # the command started all it starts (the 5th: itself)
                    runs[run].send_signal(signal.SIGINT)  # Ctrl-C, as a terminal sends it
                    waiting.discard(run)
                elif runs[run].poll() is not None:
                    raise AssertionError((run, runs[run].communicate()))
            time.sleep(0.1)
        assert not waiting, f"these agents never ran the command within {2 * LIMIT_S:g}s: {sorted(waiting)}"
        for run, proc in runs.items():
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 130, (run, out, err)
            assert not any(noise in err for noise in NOISE), (run, err)  # one line, as with any other agent kind
            assert still_alive(markers[run]) == [], (run, err)
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        for marker in markers.values():
            slay(marker)
