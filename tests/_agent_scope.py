"""How much of the real-agent batteries a pytest run drives: `full` (every agent, every scenario) or `gate` (each
battery's gate: the verdict-truth battery's one scenario per preset, and the per-agent batteries on the agents that
answer in seconds).

`TRIALRUN_BATTERY=full|gate` decides; unset, `.ci/battery-scope` does: `full` when this branch changed what the
batteries judge since its merge base with main (the agents, their containment, the shell analyser, the wire codecs,
the pins, the batteries themselves; uncommitted changes count) or when no merge base is found, `gate` otherwise. So
the README's test command and `.ci/run` run the same tests, and a change to an agent's preset runs every agent.
docs/development.md ("Where the tests run") says what each scope runs.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The agents a gate run drives in the per-agent batteries: those whose trials cost a second or two of CPU. The
#: others run in the full scope (whenever what the batteries judge changed, and with `.ci/run --full`): opencode
#: (4-5 s of CPU a trial, a fresh Bun runtime and database in each trial's own home: about 65 s of CPU a gate run
#: across the files-left, MCP and coding-example batteries, measured on a clean clone), Gemini CLI (about 30 s),
#: Kilo, Qwen Code, Kimi (12-73 s a battery each). Every preset still runs its verdict-truth scenario in the gate.
GATE_AGENTS = frozenset({"reference", "pi", "claude-code", "codex", "copilot-cli", "continue-cli"})
#: The per-agent batteries (file, the parameter naming the agent) a gate run narrows to GATE_AGENTS.
NARROWED = {"tests/agents/test_workspace_truth.py": "preset", "tests/test_coding_agent_example.py": "preset",
            "tests/agents/test_mcp_agents.py": "label"}
#: Tests of one slow agent's own behaviour, which the gate leaves to the full scope (by node id).
SLOW_AGENT_TESTS = frozenset({"tests/agents/test_preset_options.py::test_kilo_is_granted_folders_outside_the_workdir"})


@functools.cache
def scope() -> tuple[str, str]:
    """(`full` or `gate`, why), decided once a process."""
    given = os.environ.get("TRIALRUN_BATTERY")
    if given:
        assert given in ("full", "gate"), f"TRIALRUN_BATTERY={given!r}: expected 'full' or 'gate'"
        return given, "TRIALRUN_BATTERY"
    try:
        done = subprocess.run([str(ROOT / ".ci" / "battery-scope")], cwd=ROOT, capture_output=True, text=True,
                              timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return "full", f".ci/battery-scope could not tell ({type(exc).__name__}), so everything"
    word, _, why = done.stdout.strip().partition(" ")
    assert word in ("full", "gate"), f".ci/battery-scope printed {done.stdout!r}"
    return word, why


def is_gate() -> bool:
    return scope()[0] == "gate"


def in_scope(labels: Iterable[str]) -> list[str]:
    """The agents of `labels` this scope drives (a battery that runs its agents in one evaluate builds only these)."""
    return [label for label in labels if not is_gate() or label in GATE_AGENTS]
