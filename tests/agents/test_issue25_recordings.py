"""The recorded traffic of issue 25's agents (tests/fixtures/agent-traffic/<agent>/, recorded with record.py through
their presets' own `prepare`), read as each preset reads a run of its agent: what every call came to (ran, failed,
refused, unanswered) is pinned here, from what the real agent sent back; the event stream (Kilo) or stderr (Qwen
Code's refusal warnings) it printed is kept beside the cassette and read too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun.models._cassette_io import load_exchanges
from trialrun.trajectory import Run, ToolCall
from trialrun.wire import decode_trajectory

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "agent-traffic"
ISSUE_25 = ("mini-swe-agent", "qwen-code", "gemini-cli", "kimi-cli", "continue-cli", "kilo-code", "copilot-cli")

#: Per recording: every call of every conversation, in order, as (tool, start of its main argument, outcome), as
#: the real agent answered it (mini-swe-agent never answers its submit command: it ends the task; Gemini CLI does
#: not flag a command that exited 2, so that `ls` RAN by its own flag; Kimi CLI's plan mode ran the command and
#: refused the write).
OUTCOMES: dict[str, list[tuple[str, str, str]]] = {
    'continue-cli/marker.yaml': [('Bash', 'echo hi > marker.txt', 'ran')],
    'continue-cli/tool-error.yaml': [('Read', 'missing.txt', 'failed'), ('Bash', 'ls missing.txt', 'failed')],
    'copilot-cli/marker.yaml': [('bash', 'echo hi > marker.txt', 'ran')],
    'copilot-cli/refuse-default.yaml': [('bash', 'python3 -c "open(\'made.txt\', \'w\').close(', 'refused')],
    'copilot-cli/refuse-deny.yaml': [('bash', 'rm -r ./sentinel', 'refused')],
    'copilot-cli/tool-error.yaml': [('view', 'missing.txt', 'failed'), ('bash', 'ls missing.txt', 'failed')],
    'gemini-cli/marker.yaml': [('run_shell_command', 'echo hi > marker.txt', 'ran')],
    'gemini-cli/refuse-default.yaml': [('run_shell_command', 'rm -r ./sentinel', 'refused')],
    'gemini-cli/refuse-policy.yaml': [('run_shell_command', 'rm -r ./sentinel', 'refused')],
    'gemini-cli/tool-error.yaml': [('read_file', 'missing.txt', 'failed'), ('run_shell_command', 'ls missing.txt', 'ran')],
    'kilo-code/marker.yaml': [('bash', 'echo hi > marker.txt', 'ran')],
    'kilo-code/refuse-deny.yaml': [('bash', 'rm -r ./sentinel', 'refused')],
    'kilo-code/tool-error.yaml': [('read', 'missing.txt', 'failed'), ('bash', 'ls missing.txt', 'failed')],
    'kimi-cli/marker.yaml': [('Shell', 'echo hi > marker.txt', 'ran')],
    'kimi-cli/refuse-plan.yaml': [('Shell', 'python3 -c "open(\'made.txt\', \'w\').close(', 'ran'), ('WriteFile', 'made2.txt', 'refused')],
    'kimi-cli/tool-error.yaml': [('ReadFile', 'missing.txt', 'failed'), ('Shell', 'ls missing.txt', 'failed')],
    'mini-swe-agent/marker.yaml': [('bash', 'echo hi > marker.txt', 'ran'), ('bash', 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTP', 'unanswered')],
    'mini-swe-agent/tool-error.yaml': [('bash', 'cat missing.txt', 'failed'), ('bash', 'ls missing.txt', 'failed'), ('bash', 'echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTP', 'unanswered')],
    'qwen-code/marker.yaml': [('run_shell_command', 'echo hi > marker.txt', 'ran')],
    'qwen-code/refuse-default.yaml': [('run_shell_command', 'rm -r ./sentinel', 'refused')],
    'qwen-code/refuse-deny.yaml': [('run_shell_command', 'rm -r ./sentinel', 'refused')],
    'qwen-code/tool-error.yaml': [('read_file', 'missing.txt', 'failed'), ('run_shell_command', 'ls missing.txt', 'failed')],
}


def _files() -> list[str]:
    return sorted(str(p.relative_to(TRAFFIC)) for p in TRAFFIC.glob("*/*.yaml") if p.parent.name in ISSUE_25)


def _beside(name: str, suffix: str) -> str:
    path = (TRAFFIC / name).with_suffix(suffix)
    return path.read_text() if path.exists() else ""


def _read(name: str, agent_path: Any) -> Run:
    label = name.split("/")[0]
    run = Run(output=None, trajectory=decode_trajectory(load_exchanges(TRAFFIC / name)), stderr=_beside(name, ".stderr"))
    tr.agents.preset(label, path=agent_path(label)).interpret(run, _beside(name, ".stdout"))
    return run


def _main(call: ToolCall) -> str:
    for key in ("command", "file_path", "filePath", "filepath", "path", "prompt"):
        if isinstance(call.arguments.get(key), str):
            return str(call.arguments[key])
    return ""


def outcomes(run: Run) -> list[tuple[str, str, str]]:
    found = []
    for outcome in run.trajectory.outcomes():
        kind = outcome.outcome
        if kind == "ran" and outcome.result is not None and outcome.result.is_error:
            kind = "failed"
        found.append((outcome.call.name, _main(outcome.call)[:40], kind))
    return found


def test_every_recording_of_issue_25_has_its_outcomes_pinned() -> None:
    assert _files() and sorted(OUTCOMES) == _files()


@pytest.mark.parametrize("name", sorted(OUTCOMES))
def test_each_call_came_to_what_the_agent_made_of_it(name: str, agent_path: Any) -> None:
    assert outcomes(_read(name, agent_path)) == OUTCOMES[name]
