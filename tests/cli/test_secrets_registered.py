"""Credentials with no key shape, known only to trialrun's model transports, never reach a file or the terminal.

The agent is echoed its own credentials: a LiveModel's `api_key`, an `x-api-key` header the agent sends, a Basic
`Authorization` header, and a token in the process agent's `env` of trialrun.toml. None of them looks like a key
(no `sk-`, no `Bearer` in the text, no `api_key=`), and no environment variable holds them. The agent writes them
into its prompt, the model echoes them into tool arguments and replies, a tool puts them in its result and in an
error, the graders quote the output. Then `trialrun run` (in a process of its own, as a user runs it), `trialrun
report` (in another, which never saw a transport), `trialrun view`'s pages and the pytest plugin are searched: no
file under the results dir and no byte of stdout/stderr may hold any of them, in any of the encodings looked for.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

LIVE_TOKEN = "hunter2-internal-token"  # a LiveModel's api_key
HEADER_TOKEN = "corp.gateway/passphrase+7"  # an x-api-key header the agent sends (URL- and JSON-special characters)
BASIC_USER, BASIC_PASSWORD = "svc-eval", "tr0ub4dor-and-3"  # Authorization: Basic base64(user:password)
CONFIG_TOKEN = "plain-config-value-4ae1"  # [agent_options] env of trialrun.toml, for a command agent
TOKENS = (LIVE_TOKEN, HEADER_TOKEN, BASIC_PASSWORD, f"{BASIC_USER}:{BASIC_PASSWORD}", CONFIG_TOKEN)

AGENT = textwrap.dedent('''
    """The agent under test: echoes its credentials into its prompt; its models echo them back."""
    import base64
    import json

    import httpx
    import trialrun as tr

    LIVE_TOKEN, HEADER_TOKEN = {live!r}, {header!r}
    BASIC = base64.b64encode({basic!r}.encode()).decode()


    def upstream(request):
        """The provider behind the LiveModel: answers with the key the LiveModel sent it."""
        key = request.headers["authorization"].removeprefix("Bearer ")
        body = json.loads(request.content)
        if body["messages"][-1]["role"] == "user":
            call = {{"id": "call_1", "type": "function",
                     "function": {{"name": "lookup", "arguments": json.dumps({{"query": key}})}}}}
            message = {{"role": "assistant", "content": None, "tool_calls": [call]}}
        else:
            message = {{"role": "assistant", "content": f"The key I was sent is {{key}}."}}
        return httpx.Response(200, json={{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                                          "choices": [{{"index": 0, "message": message, "finish_reason": "stop"}}],
                                          "usage": {{"prompt_tokens": 3, "completion_tokens": 2}}}})


    def echo_model(request):
        """A scripted model that echoes the secret the user wrote in the prompt, in a tool call and in its reply."""
        secret = request.messages[1].text.rpartition(" ")[2] if request.messages[0].role == "system" else \\
            request.messages[0].text.rpartition(" ")[2]
        if not request.last_tool_results:
            return tr.tool_call("lookup", query=secret)
        return tr.reply(f"Looked up {{secret}}: {{request.last_tool_results[0].content}}")


    @tr.tool
    def lookup(query: str) -> str:
        """Look a value up."""
        if "/" in query:
            raise tr.ToolError(f"no entry for {{query}}")
        return f"entry for {{query}} found"


    def run(prompt, ctx):
        if ctx.case.name == "live-key":
            model = ctx.observe(tr.LiveModel("https://models.internal.example/v1", api_key=LIVE_TOKEN,
                                             transport=httpx.MockTransport(upstream)))
            secret = LIVE_TOKEN
            headers = {{}}
        elif ctx.case.name == "header-key":
            model, secret, headers = ctx.scripted(echo_model), HEADER_TOKEN, {{"x-api-key": HEADER_TOKEN}}
        else:
            model, secret = ctx.scripted(echo_model), base64.b64decode(BASIC).decode().partition(":")[2]
            headers = {{"authorization": "Basic " + BASIC}}
        agent = tr.Agent(model, tools=[lookup], headers=headers, system="Be brief.")
        return agent.run(f"{{prompt}} My credential is {{secret}}")
''').format(live=LIVE_TOKEN, header=HEADER_TOKEN, basic=f"{BASIC_USER}:{BASIC_PASSWORD}")

SUITE = [{"id": name, "name": name, "prompt": "Check my access.", "expected_tools": ["lookup"], "max_turns": 3,
          "success_criteria": "Says access is fine without repeating any credential"}
         for name in ("live-key", "header-key", "basic-auth")]


def encodings(value: str) -> set[str]:
    """How a value may be written in an artefact: as is, JSON-escaped (once, twice, ASCII-only), URL-encoded,
    HTML-escaped, and (for `user:password`) as the base64 of a Basic credential."""
    once = json.dumps(value)[1:-1]
    found = {value, once, json.dumps(once)[1:-1], quote(value, safe=""), quote_plus(value), quote(value),
             value.replace("/", "\\/"), value.replace("+", "\\u002b")}
    if ":" in value:
        found.add(base64.b64encode(value.encode()).decode())
    return found


def leaked(text: str) -> list[str]:
    return sorted({token for token in TOKENS for form in encodings(token) if form in text})


def _trialrun(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update(COLUMNS="200", PYTHONPATH=os.pathsep.join([str(project), env.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "trialrun", *args], check=False, cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "state" / "eval").mkdir(parents=True)
    (root / "state" / "eval" / "tests.json").write_text(json.dumps(SUITE, indent=2))
    (root / "leaky_agent.py").write_text(AGENT)
    (root / "trialrun.toml").write_text('agent = "leaky_agent:run"\nmodel = "scripted:unused.yaml"\n')
    # The suite's own model (what `ctx.model` is); the agent builds the models it talks to itself.
    (root / "unused.yaml").write_text("".join(f"{test['id']}: [{{reply: unused}}]\n" for test in SUITE))
    return root


def files_under(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_transport_credentials_reach_no_file_and_no_terminal(project: Path) -> None:
    as_json = _trialrun(project, "run", "live-key", "--json")
    run = _trialrun(project, "run", "all", "--junit", "state/eval/junit.xml", "--markdown", "state/eval/summary.md")
    assert run.returncode == 1, run.stdout + run.stderr  # every test fails its rubric: a result, with reasons
    report = _trialrun(project, "report", "--html", "state/eval/report.html", "--table")
    again = _trialrun(project, "report", "--json", "--junit", "state/eval/junit2.xml", "--markdown",
                      "state/eval/summary2.md")
    texts = files_under(project / "state" / "eval")
    assert any(name.endswith(".exchanges.ndjson") for name in texts)
    assert {"junit.xml", "summary.md", "report.html", "junit2.xml", "summary2.md", "latest.json"} <= set(texts)
    for label, process in (("run", run), ("run --json", as_json), ("report", report), ("report --json", again)):
        texts[f"{label} stdout"], texts[f"{label} stderr"] = process.stdout, process.stderr
    leaks = {name: found for name, text in texts.items() if (found := leaked(text))}
    assert leaks == {}, leaks

    # The run did carry the credentials everywhere (so the search above could fail): the model echoed them into
    # the tool calls, the tools into their results (an error for the one with a '/'), the model into the output.
    by_case = {case["name"]: case for case in json.loads(texts["latest.json"])["cases"]}
    assert set(by_case) == {"live-key", "header-key", "basic-auth"}
    for name, case in by_case.items():
        turns = case["trials"][0]["trajectory"]["turns"]
        calls = [c for turn in turns for c in turn["tool_calls"]]
        results = [r for turn in turns for r in turn["tool_results"]]
        assert [c["name"] for c in calls] == ["lookup"] and len(results) == 1, name
        assert calls[0]["arguments"] == {"query": "REDACTED"}, name
        assert "REDACTED" in results[0]["content"] and results[0]["is_error"] == (name == "header-key"), name
        assert "REDACTED" in case["trials"][0]["output"], name
    assert "REDACTED" in texts["run --json stdout"]  # the output, scrubbed, as printed

def test_the_view_pages_show_no_transport_credential(project: Path) -> None:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    run = _trialrun(project, "run", "all")
    assert run.returncode == 1, run.stdout + run.stderr
    folder = project / "state" / "eval"
    stem = next(p.stem for p in folder.glob("results_*.json") if not p.name.endswith(".exchanges.ndjson"))
    client = TestClient(create_app(folder), base_url="http://127.0.0.1")
    pages = {"/": client.get("/"), f"/run/{stem}": client.get(f"/run/{stem}")}
    for name in ("live-key", "header-key", "basic-auth"):
        pages[name] = client.get(f"/trial/{stem}", params={"test": name, "trial": 1})
        pages[f"test {name}"] = client.get(f"/test/{name}")
    assert all(page.status_code == 200 for page in pages.values()), {k: v.status_code for k, v in pages.items()}
    assert all("REDACTED" in pages[name].text for name in ("live-key", "header-key", "basic-auth"))
    leaks = {name: found for name, page in pages.items() if (found := leaked(page.text))}
    assert leaks == {}, leaks


COMMAND_AGENT = textwrap.dedent('''
    import os, sys
    print("deploying with", os.environ["DEPLOY_TOKEN"], "as", sys.argv[1])
    sys.stderr.write("token was " + os.environ["DEPLOY_TOKEN"] + "\\n")
''')


def test_a_credential_from_trialrun_toml_reaches_no_file(project: Path) -> None:
    """A command agent's `env` in trialrun.toml holds a credential (its name says so; the run's own environment
    does not have it): what the agent prints of it is scrubbed like any other."""
    (project / "command_agent.py").write_text(COMMAND_AGENT)
    (project / "trialrun.toml").write_text(
        f'agent = "command: {sys.executable} command_agent.py {{prompt}}"\nmodel = "scripted:unused.yaml"\n'
        f'[agent_options]\nenv = {{DEPLOY_TOKEN = "{CONFIG_TOKEN}"}}\n')
    run = _trialrun(project, "run", "live-key", "--junit", "state/eval/junit.xml")
    assert run.returncode == 1, run.stdout + run.stderr
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    output = latest["cases"][0]["trials"][0]["output"]
    assert "deploying with REDACTED as" in output, output  # the agent did print it
    texts = {**files_under(project / "state" / "eval"), "stdout": run.stdout, "stderr": run.stderr}
    leaks = {name: found for name, text in texts.items() if (found := leaked(text))}
    assert leaks == {}, leaks
