"""The rubric is chosen by `rubric` in trialrun.toml or `--rubric` and recorded in config_snapshot.rubric: an agent
that answers "No." in one turn without calling a tool fails every bundled test under the default "balanced" rubric,
and passes them all under the skill's literal formula (why the default differs)."""

from __future__ import annotations

import json
from pathlib import Path

# The lazy agent asks the model once (offering a shell tool it never uses) and answers with what it says ("No."):
# one turn, no tool call.
LAZY = """import httpx

TOOLS = [{"type": "function", "function": {"name": "run_command", "parameters": {
    "type": "object", "properties": {"command": {"type": "string"}}}}}]

def run(prompt, ctx):
    with httpx.Client(transport=ctx.model) as client:
        reply = client.post("https://api.openai.com/v1/chat/completions",
                            json={"model": "m", "messages": [{"role": "user", "content": prompt}], "tools": TOOLS})
    return reply.json()["choices"][0]["message"]["content"]
"""
TESTS = ["read-file", "search-json", "list-dir", "refuse-dangerous-command", "summarise-notes"]


def _lazy(project: Path) -> list[str]:
    """The lazy agent and a scripted model that says "No." to every test."""
    (project / "lazy.py").write_text(LAZY)
    (project / "lazy.json").write_text(json.dumps({test: [{"reply": "No."}] for test in TESTS}))
    return ["--agent", "lazy:run", "--model", "scripted:lazy.json"]
NONE = "def run(prompt, ctx):\n    return None\n"


def _latest(project: Path) -> dict:
    return json.loads((project / "state" / "eval" / "latest.json").read_text())


def test_the_lazy_agent_fails_under_balanced_and_passes_under_skill(project: Path, cli) -> None:
    balanced = cli("run", "all", *_lazy(project))
    assert balanced.exit_code == 1
    data = _latest(project)
    assert data["config_snapshot"]["rubric"] == "balanced" and data["passed_case_count"] == 0
    # no tool, one turn, nothing relevant: (0 + 1 + 0) / 3; the tests expecting no tool: (1 + 1 + 0) / 3
    assert [round(t["score"], 2) for t in data["tests"]] == [0.33, 0.33, 0.33, 0.67, 0.33]

    skill = cli("run", "all", *_lazy(project), "--rubric", "skill")
    assert skill.exit_code == 0, skill.output  # 5/5: turn efficiency alone is 1.0 under the skill's sum
    data = _latest(project)
    assert data["config_snapshot"]["rubric"] == "skill" and data["passed_case_count"] == 5
    changes = json.loads(cli("compare", "--json").output)["config_changes"]
    assert {"key": "rubric", "before": "balanced", "after": "skill"} in changes


def test_a_custom_agent_returning_none_fails(project: Path, cli) -> None:
    (project / "none_agent.py").write_text(NONE)
    assert cli("run", "read-file", "--agent", "none_agent:run").exit_code == 1
    assert "the response is empty" in json.dumps(_latest(project)["cases"][0]["trials"][0]["verdicts"])


def test_the_rubric_from_trialrun_toml_and_a_wrong_one_named(project: Path, cli) -> None:
    config = project / "trialrun.toml"
    assert 'rubric = "balanced"' in config.read_text()  # the quickstart names its rubric
    config.write_text(config.read_text().replace('rubric = "balanced"', 'rubric = "skill"'))
    lazy = _lazy(project)
    assert cli("run", "read-file", *lazy).exit_code == 0  # passes on turn efficiency alone
    assert _latest(project)["config_snapshot"]["rubric"] == "skill"
    assert cli("run", "read-file", *lazy, "--rubric", "balanced").exit_code == 1  # the flag wins
    config.write_text(config.read_text().replace('rubric = "skill"', 'rubric = "lenient"'))
    result = cli("run", "read-file")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{config}: rubric: must be one of 'balanced', 'skill' (got 'lenient')" in result.output


def test_the_failing_line_names_the_trial(project: Path, cli) -> None:
    (project / "second.py").write_text(LAZY.replace("def run(prompt, ctx):", "def ask(prompt, ctx):") +
        "\ndef run(prompt, ctx):\n"
        "    said = ask(prompt, ctx)  # one model call: the trial's trajectory is observed\n"
        "    return 'No.' if ctx.trial == 2 else 'I decline to delete everything: which files should I remove?'\n")
    (project / "once.json").write_text(json.dumps({"refuse-dangerous-command": [{"reply": "No."}]}))
    test = "refuse-dangerous-command"  # no expected tools: graded on what the agent says
    result = cli("run", test, "-k", "3", "--agent", "second:run", "--model", "scripted:once.json", "--rubric", "skill")
    assert result.exit_code == 0  # under the skill's sum even trial 2 passes: no line to name
    result = cli("run", test, "-k", "3", "--agent", "second:run", "--model", "scripted:once.json")
    assert result.exit_code == 1
    [line] = [line for line in result.output.splitlines() if line.startswith(f"✗ {test}:")]
    assert line.startswith(f"✗ {test}: trial 2 of 3: score 0.67 (< 0.7): tool_accuracy 1.00"), line
