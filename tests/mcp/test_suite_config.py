"""`[mcp_servers.NAME]` in trialrun.toml and the MCP graders in tests.json, through the CLI: the example project runs
(the reference agent given both servers' tools), what the servers received is in the result file and every message
in the exchanges sidecar (scrubbed like every other exchange); every mistake is exit 2 naming the file and key, with
a did-you-mean, before anything runs."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner, Result

from trialrun.cli import main
from trialrun.report.exchanges import read_trial_exchanges, sidecar_path
from trialrun.suite._tests_file import suite_json_schema

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mcp"
SECRET = "sk-ant-api03-" + "Zq7" * 20  # an Anthropic key's shape, in a tool's answer


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "project"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("results_*", "latest.json"))
    monkeypatch.chdir(target)
    monkeypatch.setenv("COLUMNS", "160")
    return target


@pytest.fixture
def cli() -> Callable[..., Result]:
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


def test_the_example_runs_and_keeps_what_the_servers_received(project: Path, cli: Callable[..., Result]) -> None:
    notes = project / "notes_mcp.yaml"
    notes.write_text(notes.read_text().replace('answer: "Dentist: Tuesday 10:00, Dr. Ortiz"',
                                               f'answer: "Dentist: Tuesday 10:00, Dr. Ortiz (token {SECRET})"'))
    result = cli("run", "all")
    assert result.exit_code == 0, result.output
    (saved,) = project.glob("state/eval/results_*.json")
    report = json.loads(saved.read_text())
    dentist = next(c for c in report["cases"] if c["name"] == "dentist")["trials"][0]
    [call] = dentist["trajectory"]["mcp_calls"]
    assert (call["server"], call["tool"], call["arguments"], call["joined"]) == (
        "notes", "search_notes", {"query": "dentist"}, True)
    servers = {s["name"]: s for s in dentist["trajectory"]["mcp_servers"]}
    assert servers["notes"]["transport"] == "stdio" and servers["calendar"]["transport"] == "http"
    assert {v["grader"].split("(")[0]: v["passed"] for v in dentist["verdicts"]} == {
        "rubric": True, "mcp_called": True, "mcp_not_called": True, "mcp_as_asked": True, "contains": True}
    assert report["config_snapshot"]["mcp_servers"] == {"notes": {"source": "script", "transport": "stdio"},
                                                         "calendar": {"source": "script", "transport": "http"}}
    kept = read_trial_exchanges(sidecar_path(saved), "dentist", 1)
    mcp = [e for e in kept.exchanges if e["request"]["url"].startswith("mcp://")]
    assert {e["request"]["url"] for e in mcp if e["request"]["method"] == "REQUEST"} == {
        "mcp://notes/initialize", "mcp://notes/tools/list", "mcp://notes/tools/call", "mcp://calendar/initialize",
        "mcp://calendar/tools/list"}
    answered = next(e for e in mcp if e["request"]["url"] == "mcp://notes/tools/call")
    assert answered["n"] == call["exchange"] and answered["request"]["body"]["params"]["arguments"] == {
        "query": "dentist"}
    # scrubbed, as every exchange: the key shape in the tool's answer is in neither file
    assert SECRET not in saved.read_text() and SECRET not in sidecar_path(saved).read_text()
    assert "REDACTED" in json.dumps(answered["response"])


@pytest.mark.parametrize("table, message", [
    ('[mcp_servers.notes]\nscrpt = "notes_mcp.yaml"\n', "mcp_servers.notes.scrpt: unknown key (did you mean 'script'?)"),
    ('[mcp_servers.notes]\nscript = "notes_mcp.yaml"\ncommand = "x"\n', "give exactly one of script"),
    ('[mcp_servers.notes]\nscript = "notes_mcp.yaml"\ntransport = "sse"\n', 'transport must be "stdio" or "http"'),
    ('[mcp_servers.notes]\ncommand = "x"\ntransport = "http"\n', "a command server is reached over stdio"),
    ('[mcp_servers.notes]\nscript = "nope.yaml"\n', "nope.yaml"),
    ('[mcp_servers.notes]\nreplay = "recordings"\n', "is not a folder of recordings"),
    ('[mcp_servers.notes]\nscript = "bad_mcp.yaml"\n', "bad_mcp.yaml: tools[0] (search_notes).anwser: unknown key"),
])
def test_a_wrong_table_is_exit_2_naming_file_and_key(project: Path, cli: Callable[..., Result], table: str,
                                                     message: str) -> None:
    (project / "bad_mcp.yaml").write_text("tools:\n  - name: search_notes\n    anwser: hi\n")
    config = project / "trialrun.toml"
    config.write_text(config.read_text().split("[mcp_servers.notes]")[0] + table)
    result = cli("run", "all")
    assert result.exit_code == 2, result.output
    assert "error:" in result.output and message in result.output and "Traceback" not in result.output
    assert not list(project.glob("state/eval/results_*.json"))


def test_an_agent_that_cannot_take_mcp_servers_is_refused_at_config_time(project: Path,
                                                                       cli: Callable[..., Result]) -> None:
    config = project / "trialrun.toml"
    config.write_text('agent = "pi"\n' + config.read_text() + '\n[agent_options]\npath = "/bin/true"\n')
    result = cli("run", "all")
    assert result.exit_code == 2, result.output
    assert "pi cannot be given MCP servers" in result.output


@pytest.mark.parametrize("expect, message", [
    ({"mcp_caled": {"server": "notes", "tool": "search_notes"}}, "unknown grader 'mcp_caled' (did you mean 'mcp_called'?)"),
    ({"mcp_called": {"server": "notes"}}, "mcp_called: 'tool' is required"),
    ({"mcp_called": {"server": "notes", "tool": "t", "arg": {}}}, "unknown key(s) 'arg'"),
    ({"mcp_as_asked": {"sever": "notes"}}, "unknown key(s) 'sever'"),
])
def test_a_wrong_mcp_grader_in_tests_json_is_exit_2(project: Path, cli: Callable[..., Result], expect: dict,
                                                    message: str) -> None:
    suite = json.loads((project / "tests.json").read_text())
    suite[0]["expect"] = expect
    (project / "tests.json").write_text(json.dumps(suite))
    result = cli("run", "all")
    assert result.exit_code == 2 and message in result.output, result.output
    with pytest.raises(jsonschema.ValidationError):  # the schema an editor uses says so too
        jsonschema.validate(suite, suite_json_schema())


def test_the_schema_accepts_the_example() -> None:
    jsonschema.validate(json.loads((EXAMPLE / "tests.json").read_text()), suite_json_schema())


def test_the_trial_page_and_the_exports_show_what_the_servers_received(project: Path,
                                                                      cli: Callable[..., Result]) -> None:
    from _export_schemas import OTLP_TRACES
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    assert cli("run", "all").exit_code == 0
    (saved,) = project.glob("state/eval/results_*.json")
    page = TestClient(create_app(saved.parent), base_url="http://127.0.0.1").get(
        f"/trial/{saved.stem}", params={"test": "dentist", "trial": 1})
    assert page.status_code == 200
    html = page.text
    # beside the model's call: what the server received, linked to its raw MCP exchange, which is on the page
    note = html[html.index('<p class="mcp-call">'):]
    note = note[:note.index("</p>")]
    assert "<code>notes</code> received <code>search_notes {&quot;query&quot;: &quot;dentist&quot;}</code>" in note \
        or '<code>notes</code> received <code>search_notes {"query": "dentist"}</code>' in note, note
    number = int(note.split('href="#exchange-')[1].split('"')[0])
    assert f'id="exchange-{number}"' in html and 'id="mcp"' in html
    assert "mcp://notes/tools/call" in html and "MCP message" in html
    otel = cli("export", saved.name, "--format", "otel", "-o", str(project / "spans.json"))
    assert otel.exit_code == 0, otel.output
    data = json.loads((project / "spans.json").read_text())
    jsonschema.validate(data, OTLP_TRACES)
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    mcp = [s for s in spans if s["name"].startswith("tools/call ")]
    assert sorted(s["name"] for s in mcp) == ["tools/call free_slots", "tools/call search_notes"]
    attrs = {a["key"]: a["value"] for a in mcp[0]["attributes"]}
    assert attrs["mcp.method.name"] == {"stringValue": "tools/call"} and "trialrun.mcp.server" in attrs
    atif = cli("export", saved.name, "--format", "atif")
    documents = [json.loads(line) for line in atif.stdout.splitlines()]
    calls = [c for d in documents for c in d["extra"]["trialrun"]["mcp_calls"]]
    assert {(c["server"], c["tool"]) for c in calls} == {("notes", "search_notes"), ("calendar", "free_slots")}
