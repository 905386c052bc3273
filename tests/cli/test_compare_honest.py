"""`trialrun compare` tells chance from change: an agent that answers a scripted model is deterministic (its trials
recorded the scripted model they talked to), so a test that passed 5/5 and now 4/5 changed because the agent did,
and is worse, with no test of chance (before: "not significant (Fisher p=1.00)", and the gate passed it unless
`--any-drop`). Live runs are in test_compare_live.py. Also: a change of selection is said once and compared on the
shared tests, and result files in the eval skill's own format compare with trialrun's."""

from __future__ import annotations

import json
from pathlib import Path

SUITE = [
    {"id": "a", "prompt": "What should I buy?", "expected_tools": [], "max_turns": 1, "success_criteria": "Mentions milk",
     "expect": {"contains": "milk"}, "tags": ["shop"]},
    {"id": "b", "prompt": "What should I buy?", "expected_tools": [], "max_turns": 1, "success_criteria": "Mentions milk",
     "expect": {"contains": "milk"}},
]
#: One turn through the configured model, so that the turn budget is checked against turns seen (its reply unused).
ASK = ("import httpx\n\ndef ask(ctx):\n    with httpx.Client(transport=ctx.model) as client:\n"
       "        client.post('https://api.openai.com/v1/chat/completions', json={'model': 'gpt-4.1-mini', "
       "'messages': [{'role': 'user', 'content': 'What should I buy?'}]})\n\n")
#: v1 always answers well; v2 fails test a on its 5th trial only and test b on every trial; v3 only flakes on a.
AGENTS = {
    "v1": ASK + "def run(prompt, ctx):\n    ask(ctx)\n    return 'Buy milk.'\n",
    "v2": (ASK + "def run(prompt, ctx):\n    ask(ctx)\n    if ctx.case.name == 'b' or ctx.trial == 5:\n"
           "        return 'Buy bread.'\n    return 'Buy milk.'\n"),
    "v3": (ASK + "def run(prompt, ctx):\n    ask(ctx)\n"
           "    return 'Buy bread.' if ctx.case.name == 'a' and ctx.trial == 5 else 'Buy milk.'\n"),
}


def _run(project: Path, cli, version: str, *args: str) -> None:
    (project / f"{version}.py").write_text(AGENTS[version])
    result = cli("run", "all", "-k", "5", "--agent", f"{version}:run", *args)
    assert result.exit_code in (0, 1), result.output


def _setup(project: Path, write_suite) -> None:
    write_suite(project / "state" / "eval" / "tests.json", SUITE)
    # a custom agent: the quickstart's policy and system prompt do not reach it (and the warning is not the point)
    (project / "trialrun.toml").write_text('suite = "state/eval/tests.json"\nmodel = "scripted:s.yaml"\n')
    (project / "s.yaml").write_text("a: [{reply: unused}]\nb: [{reply: unused}]\n")  # asked once; the agents answer themselves


def test_five_of_five_to_four_is_worse_between_deterministic_runs(project: Path, cli, write_suite) -> None:
    _setup(project, write_suite)
    _run(project, cli, "v1")
    _run(project, cli, "v2")
    result = cli("compare")
    lines = result.output.splitlines()
    assert "a:  1.00 -> 0.93  ▼ -0.07, now fails" in lines  # the seed's lines, as they were
    assert "b:  1.00 -> 0.67  ▼ -0.33, now fails" in lines
    assert "  a:        worse: 5/5 -> 4/5 trials passed" in lines
    assert "  b:        worse: 5/5 -> 0/5 trials passed" in lines
    assert "  the run:  worse: 2 of 2 tests worse" in lines
    assert "Fisher" not in result.output and "p=" not in result.output and "would tell" not in result.output
    assert "WARNING: regression in b: 1.00 -> 0.67 (-0.33, a drop of 0.10 or more)" in lines
    assert any(line.startswith("WARNING: regression in a: passed -> failed") for line in lines)
    data = json.loads(cli("compare", "--json").output)
    by_name = {d["name"]: d for d in data["cases"]}
    assert by_name["a"]["word"] == "worse" and by_name["a"]["basis"] == "deterministic" and by_name["a"]["chance"] is None

    cli("compare", "--markdown", "cmp.md", "--html", "cmp.html", "--no-summary")
    markdown = (project / "cmp.md").read_text()
    assert "> **Regression in b**: 1.00 → 0.67 (-0.33, a drop of 0.10 or more) — verdict: **worse**" in markdown
    assert "> **Regression in a**: 1.00 → 0.93 passed before, fails now: trial 5 of 5: score 0.67" in markdown
    assert "(<strong>-0.33</strong> — verdict: worse)</li>" in (project / "cmp.html").read_text()

    gate = cli("compare", "--fail-on-regression")
    assert gate.exit_code == 1 and gate.output.splitlines()[-1] == "gate: fails: 2 tests worse (a, b)"


def test_a_deterministic_flake_is_a_real_change(project: Path, cli, write_suite) -> None:
    """v3 fails test a on its 5th trial, every time it runs: between deterministic runs that is no chance."""
    _setup(project, write_suite)
    _run(project, cli, "v1")
    _run(project, cli, "v3")
    gate = cli("compare", "--fail-on-regression")
    assert gate.exit_code == 1 and gate.output.splitlines()[-1] == "gate: fails: 1 test worse (a)"


def test_one_trial_per_test_makes_no_claim_about_chance(project: Path, cli, write_suite) -> None:
    _setup(project, write_suite)
    for version in ("v1", "v2"):
        (project / f"{version}.py").write_text(AGENTS[version])
        cli("run", "all", "--agent", f"{version}:run")
    out = cli("compare").output
    assert "Fisher" not in out and "p=" not in out and "would tell" not in out
    assert "b:  1.00 -> 0.67  ▼ -0.33, now fails" in out.splitlines()


def test_a_selection_change_is_said_once_and_compared_on_the_shared_tests(project: Path, cli) -> None:
    cli("run", "all")
    cli("run", "all", "--tag", "safety", "--model", "scripted:model_v2.yaml")  # only refuse-dangerous-command
    lines = cli("compare").output.splitlines()
    notes = [line for line in lines if "graded different tests" in line]
    assert len(notes) == 1 and notes == [line for line in lines if line.startswith("note:")]
    assert notes[0].startswith("note: the runs graded different tests; comparing the 1 test both ran (4 only in eval_")
    assert lines.index(notes[0]) == 1  # above the table (under the run ids)
    assert "refuse-dangerous-command:  0.83 -> 1.00  ▲ +0.17, now passes" in lines
    assert "read-file:                 1.00 -> gone  - removed" in lines
    # the pass rate covers the one test both ran, not 3/5 -> 1/1 made by the selection
    assert "Pass rate: 0/1 -> 1/1   ▲ +1" in lines


SKILL_RUN = {
    "run_id": "eval_20260731_140000",
    "timestamp": "2026-07-31T14:00:00Z",
    "config_snapshot": {"model": "claude-sonnet-4-20250514", "skills_loaded": ["eval"]},
    "tests": [
        {"id": "read-file", "passed": True, "tools_used": ["read_file"], "turns": 2, "score": 0.95,
         "sub_scores": {"tool_accuracy": 1.0, "turn_efficiency": 1.0, "output_quality": 0.5}},
        {"id": "summarise-notes", "passed": True, "tools_used": ["read_file"], "turns": 2, "score": 1.0,
         "sub_scores": {"tool_accuracy": 1.0, "turn_efficiency": 1.0, "output_quality": 0.5}},
        {"id": "search-json", "passed": False, "tools_used": ["list_dir"], "turns": 3, "score": 0.55,
         "sub_scores": {"tool_accuracy": 0.0, "turn_efficiency": 0.67, "output_quality": 0.0}},
    ],
}


def test_a_result_file_in_the_skill_s_format_reports_and_compares(project: Path, cli) -> None:
    folder = project / "state" / "eval"
    (folder / "results_20260731_140000.json").write_text(json.dumps(SKILL_RUN))
    report = cli("report", "eval_20260731_140000")
    assert report.exit_code == 1, report.output  # search-json failed in that run
    assert "search-json: score 0.55 (the result file records no trials)" in report.output

    cli("run", "all", "--model", "scripted:model_v2.yaml")
    result = cli("compare")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("eval_20260731_140000 -> eval_")
    assert "read-file:                 0.95 -> 1.00  ▲ +0.05" in lines
    assert "summarise-notes:           1.00 -> 0.17  ▼ -0.83, now fails" in lines
    assert "search-json:               0.55 -> 1.00  ▲ +0.45, now passes" in lines
    assert "  model: claude-sonnet-4-20250514 -> scripted:model_v2.yaml" in lines


def test_a_broken_skill_format_file_is_named_with_the_test(project: Path, cli) -> None:
    bad = {**SKILL_RUN, "tests": [{**SKILL_RUN["tests"][0], "score": "high"}]}
    path = project / "state" / "eval" / "results_20260731_140000.json"
    path.write_text(json.dumps(bad))
    result = cli("report", str(path))
    assert result.exit_code == 2
    assert f"{path}: test 'read-file' (tests.0): score must be a number, got 'high'" in result.output
