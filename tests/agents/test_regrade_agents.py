"""`trialrun regrade` and `trialrun export` on runs of process agents: a plain OpenAI-SDK program run as a
`command:` agent, and the real Claude Code. Their trajectories are read off the model's HTTP traffic only, so a
regrade reads them again from the stored exchanges, and what the agent itself decided (Claude Code's own permission
refusals, read from its result format when the trial ran) must survive the regrade, or a verdict would flip."""

from __future__ import annotations

import json
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml
from _export_schemas import ATIF_V1_4, OTLP_TRACES, atif_problems, genai_problems
from click.testing import CliRunner, Result

from trialrun.cli import main
from trialrun.report.exchanges import read_trial_exchanges, sidecar_path
from trialrun.report.store import load_report

SDK_AGENT = textwrap.dedent("""
    import json, os, subprocess, sys
    import openai
    client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY: the endpoint trialrun serves
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object",
              "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
    messages = [{"role": "user", "content": sys.argv[1]}]
    for _ in range(6):
        message = client.chat.completions.create(model=os.environ["TRIALRUN_MODEL"], messages=messages,
                                                 tools=tools).choices[0].message
        if not message.tool_calls:
            print(message.content)
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            done = subprocess.run(json.loads(call.function.arguments)["command"], shell=True, capture_output=True,
                                  text=True)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": done.stdout + done.stderr or "(no output)"})
""")
SDK_SUITE = [
    {"id": "marker", "prompt": "Write hi into marker.txt", "expected_tools": ["bash"], "max_turns": 3,
     "success_criteria": "Says marker.txt was written", "expect": [{"no_tool_errors": True}]},
    {"id": "look", "prompt": "What is in this folder?", "expected_tools": ["bash"], "max_turns": 3,
     "success_criteria": "Lists the folder", "expect": [{"called": "bash"}]},
]
SDK_MODEL = """\
marker:
  - tool_call: {name: bash, arguments: {command: "echo hi > marker.txt"}}
  - reply: "marker.txt was written"
look:
  - tool_call: {name: bash, arguments: {command: "ls"}}
  - tool_call: {name: bash, arguments: {command: "cat marker.txt || true"}}
  - reply: "The folder lists nothing much"
"""


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def _results(project: Path) -> list[Path]:
    return sorted((project / "state" / "eval").glob("results_*.json"))


def _trials(path: Path) -> dict[tuple[str, int], tuple[bool, dict[str, bool]]]:
    report = load_report(path)
    return {(c.name, t.trial): (t.passed, {v.grader: v.passed for v in t.verdicts}) for c in report.cases for t in c.trials}


def _answered(path: Path, case: str, trial: int) -> int:
    kept = read_trial_exchanges(sidecar_path(path), case, trial)
    assert kept.problem is None, kept.problem
    return sum(1 for e in kept.exchanges if 200 <= e["response"]["status"] < 300)


def _chat_spans(project: Path, run: str) -> Counter:
    done = _cli("export", run, "--format", "otel")
    assert done.exit_code == 0, done.output
    spans = json.loads(done.stdout)["resourceSpans"][0]["scopeSpans"][0]["spans"]

    def attr(span: dict, key: str) -> object:
        return next((next(iter(a["value"].values())) for a in span["attributes"] if a["key"] == key), None)

    roots = {s["traceId"]: (attr(s, "trialrun.case"), int(attr(s, "trialrun.trial"))) for s in spans  # type: ignore[arg-type]
             if attr(s, "gen_ai.operation.name") == "invoke_agent"}
    return Counter(roots[s["traceId"]] for s in spans if attr(s, "gen_ai.operation.name") == "chat")


@pytest.fixture
def sdk_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps(SDK_SUITE, indent=2))
    (tmp_path / "model.yaml").write_text(SDK_MODEL)
    (tmp_path / "agent.py").write_text(SDK_AGENT)
    (tmp_path / "trialrun.toml").write_text(
        f'agent = {json.dumps("command: " + sys.executable + " agent.py {prompt}")}\nmodel = "scripted:model.yaml"\n'
        'model_name = "gpt-4.1-mini"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def test_an_sdk_process_agent_regrades_and_exports_from_its_traffic(sdk_project: Path) -> None:
    assert _cli("run", "all", "-k", "2").exit_code == 1
    (original,) = _results(sdk_project)
    # a plain ProcessAgent knows no result format: no_tool_errors cannot tell, and fails (the run's verdict)
    assert {key: passed for key, (passed, _) in _trials(original).items()} == {
        ("marker", 1): False, ("marker", 2): False, ("look", 1): True, ("look", 2): True}
    script = yaml.safe_load(SDK_MODEL)
    # export: a chat span per answer the scripted model gave, as the raw exchanges and the script both count them
    chats = _chat_spans(sdk_project, original.name)
    assert chats == {(case, trial): len(script[case]) for case in script for trial in (1, 2)}
    assert all(chats[key] == _answered(original, *key) for key in chats)
    # unchanged suite: the same verdicts, from the trajectory read again off the exchanges
    same = _cli("regrade")
    assert same.exit_code == 1 and "4 trial(s) regraded, 0 changed" in same.output, same.output
    assert _trials(_results(sdk_project)[-1]) == _trials(original)
    reasons = {v.reason for t in load_report(_results(sdk_project)[-1]).case("marker").trials for v in t.verdicts
               if v.grader == "no_tool_errors()"}
    assert reasons == {v.reason for t in load_report(original).case("marker").trials for v in t.verdicts
                       if v.grader == "no_tool_errors()"}  # what the run said it could not tell, word for word
    # a changed suite: `look` must now never call bash twice; only its trials (which call it twice) flip
    tests = json.loads((sdk_project / "state" / "eval" / "tests.json").read_text())
    tests[1]["expect"].append({"called": {"tool": "bash", "at_most": 1}})
    tests[0]["expect"].append({"called": {"tool": "bash", "at_most": 1}})
    (sdk_project / "state" / "eval" / "tests.json").write_text(json.dumps(tests))
    changed = _cli("regrade", original.name)
    assert changed.exit_code == 1
    after = _trials(_results(sdk_project)[-1])
    flipped = {key for key, (passed, _) in _trials(original).items() if after[key][0] != passed}
    calls = {case: sum(1 for step in steps if "tool_call" in step) for case, steps in script.items()}
    passed_before = {key for key, (passed, _) in _trials(original).items() if passed}
    assert flipped == {key for key in passed_before if calls[key[0]] > 1} == {("look", 1), ("look", 2)}


CLAUDE_SUITE = {"tests": [
    {"id": "marker", "name": "writes a marker file", "prompt": "Write hi into marker.txt",
     "expected_tools": ["Bash"], "max_turns": 3, "success_criteria": "Says marker.txt was written",
     "expect": [{"no_denials": True}]},
    {"id": "tidy", "name": "tidies", "prompt": "Tidy up", "expected_tools": ["Bash"], "max_turns": 3,
     "success_criteria": "Says it tidied up", "expect": [{"no_tool_errors": True}]},
]}
CLAUDE_MODEL = """\
marker:
  - tool_call: {name: Bash, arguments: {command: "echo hi > marker.txt", description: "write the marker"}}
  - reply: "marker.txt was written"
tidy:
  - tool_call: {name: Bash, arguments: {command: "ls", description: "look"}}
  - reply: "I tidied up"
"""


def test_claude_codes_own_refusals_survive_a_regrade(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      agent_path: Callable[[str], str]) -> None:
    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps(CLAUDE_SUITE))
    (tmp_path / "model.yaml").write_text(CLAUDE_MODEL)
    (tmp_path / "workspace").mkdir()
    (tmp_path / "trialrun.toml").write_text(f'agent = "claude-code"\nmodel = "scripted:model.yaml"\nworkspace = "workspace"\n'
                                            f'[agent_options]\npath = {json.dumps(agent_path("claude-code"))}\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    first = _cli("run", "all")
    (original,) = _results(tmp_path)
    before = _trials(original)
    # Claude Code's default mode blocks the redirect: a refusal read from its result format (no exchange says
    # "denied"), which fails no_denials; `ls` runs
    assert before[("marker", 1)][1]["no_denials()"] is False, first.output
    assert before[("tidy", 1)][0] is True, first.output
    same = _cli("regrade")
    assert _trials(_results(tmp_path)[-1]) == before, same.output  # the refusal came through: nothing flipped
    regraded = load_report(_results(tmp_path)[-1])
    assert [d.source for d in regraded.case("marker").trials[0].trajectory.denials] == ["agent"]
    assert _chat_spans(tmp_path, "latest")[("marker", 1)] == _answered(original, "marker", 1) >= 2


REPLAYER = '''
from pathlib import Path

from trialrun.models._cassette_io import load_exchanges

CASSETTE = Path({cassette!r})


def run(prompt, ctx):
    """A real agent's recorded traffic sent again, request by request, through the trial's observed transport (a
    cassette replaying the recorded answers): the run sees that agent's exchanges as if it ran here."""
    with ctx.http_client(ctx.cassette(CASSETTE, "replay")) as client:
        for exchange in load_exchanges(CASSETTE):
            client.request(exchange.method, exchange.url, content=exchange.request_body,
                           headers={{"content-type": "application/json"}})
    return "replayed"
'''


@pytest.mark.parametrize("recording", ["claude-code/subagent.yaml", "codex/subagent.yaml"])
def test_a_recorded_agent_with_a_sub_agent_regrades_and_exports_every_conversation(
        recording: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_agent_recordings import FACTS, TRAFFIC

    facts = FACTS[recording]
    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps([
        {"id": "sub", "prompt": "Make the marker through a sub-agent", "expected_tools": [], "max_turns": 3,
         "success_criteria": "Says it is done", "expect": [{"max_tool_calls": 10}]}]))
    (tmp_path / "model.yaml").write_text("sub:\n  - reply: unused\n")
    (tmp_path / "replayer.py").write_text(REPLAYER.format(cassette=str(TRAFFIC / recording)))
    (tmp_path / "trialrun.toml").write_text('agent = "replayer:run"\nmodel = "scripted:model.yaml"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    ran = _cli("run", "all")
    (original,) = _results(tmp_path)
    trial = load_report(original).case("sub").trials[0]
    assert trial.error is None, ran.output
    roles = Counter(c.role for c in trial.trajectory.conversations for _ in c.turns)
    assert roles == {role: len(numbers) for role, numbers in facts.conversations.items()}  # the recording's truth
    # a suite that now forbids the shell calls the sub-agent made: the regrade must see them (in its conversation)
    shell = next(call.tool for call in facts.calls if call.at in facts.conversations.get("sub", ()))
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps([
        {"id": "sub", "prompt": "Make the marker through a sub-agent", "expected_tools": [], "max_turns": 3,
         "success_criteria": "Says it is done", "expect": [{"max_tool_calls": 10}, {"not_called": shell}]}]))
    done = _cli("regrade")
    assert f"not_called('{shell}') new, fails" in done.output, done.output
    regraded = load_report(_results(tmp_path)[-1]).case("sub").trials[0]
    assert Counter(c.role for c in regraded.trajectory.conversations for _ in c.turns) == roles
    # export: a chat span per answered exchange, in its conversation; ATIF: one trajectory per conversation
    exported = json.loads(_cli("export", _results(tmp_path)[-1].name, "--format", "otel").stdout)  # the regrade's
    jsonschema.validate(exported, OTLP_TRACES)
    otel = exported["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [p for span in otel for p in genai_problems(span)] == []
    providers = {next(a["value"]["stringValue"] for a in s["attributes"] if a["key"] == "gen_ai.provider.name")
                 for s in otel if s["name"].startswith("chat")}  # read off each turn's stored request
    assert providers == {"claude-code/subagent.yaml": {"anthropic"}, "codex/subagent.yaml": {"openai"}}[recording]
    chat_roles = Counter(next(a["value"]["stringValue"] for a in s["attributes"] if a["key"] == "trialrun.conversation")
                         for s in otel if s["name"].startswith("chat"))
    assert chat_roles == roles and sum(roles.values()) == facts.exchanges - len(facts.errors)
    atif = [json.loads(line) for line in _cli("export", "latest", "--format", "atif").stdout.splitlines()]
    assert len(atif) == len(roles)
    for document in atif:
        jsonschema.validate(document, ATIF_V1_4)
        assert atif_problems(document) == []
    assert sorted(sum(1 for s in d["steps"] if s["source"] == "agent") for d in atif) == sorted(roles.values())
    assert atif[0]["extra"]["trialrun"]["other_conversations"] == [d["session_id"] for d in atif[1:]]
