"""Secrets written in a body, in forms the scrubber did not know before issue 22, through the real `trialrun run`:
an echo provider (httpbin's `/anything` style) answers the official openai SDK with the request's own headers and
URL in its reply: a `Cookie:` header, an `X-Auth-Token`, a `?key=` query value; plus a `Set-Cookie` response
header, an AWS secret access key on the line after its key id, and the run's deploy token (from its environment)
base64-encoded inside longer texts at each of the three byte alignments and URL-encoded with lower-case hex.

Every byte trialrun leaves is searched: the journal and the exchanges sidecar while the run is still going (a later
trial waits), then every file of the results folder, `--junit`, `--markdown`, `trialrun report --html/--json`, and
what both commands printed. The reply did reach the agent whole (its output in memory is not what is checked: the
model's own request log, written by the provider outside trialrun, is)."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import quote

DEPLOY_TOKEN = "dpl-7c1e0b9a8f6d5e4c/x"  # ACME_DEPLOY_TOKEN: a value known from the run's environment
PLAIN = {  # no key shape and nothing registered: only a context rule can find these
    "cookie": "c00kie-s3ssion-4a7f9e2b",
    "set-cookie": "s3t-c00kie-8e1d2c3b4a",
    "x-auth-token": "x-auth-t0ken-6f5e4d3c",
    "query key": "qu3ry-k3y-1b2c3d4e5f",
    "aws secret": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
}
AWS_ID = "AKIAIOSFODNN7EXAMPLE"

AGENT = textwrap.dedent('''
    import base64, json, os, time
    from pathlib import Path
    from urllib.parse import quote

    import httpx, openai

    HERE = Path(__file__).parent
    PLAIN = {plain!r}
    AWS_ID = {aws_id!r}


    def provider(request):
        """Echoes the request's headers and URL (httpbin's /anything), and more, in its reply."""
        token = os.environ["ACME_DEPLOY_TOKEN"].encode()
        blobs = [base64.b64encode(prefix + token + b" and the rest").decode() for prefix in (b"", b"t=", b"tk: ")]
        blobs.append(quote(token.decode(), safe="").replace("%2F", "%2f"))
        echoed = "\\n".join(f"{{k}}: {{v}}" for k, v in request.headers.items())
        content = (f"You sent:\\n{{echoed}}\\nurl: {{request.url}}\\ncredentials file:\\n{{AWS_ID}}\\n{{PLAIN['aws secret']}}"
                   f"\\nas curl -i shows it:\\nSet-Cookie: sid={{PLAIN['set-cookie']}}; Path=/; HttpOnly"
                   f"\\nencoded: {{' '.join(blobs)}}")
        with open(HERE / "provider.log", "a") as log:  # what the model was shown and answered, outside trialrun
            log.write(json.dumps({{"content": content}}) + "\\n")
        data = {{"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                 "choices": [{{"index": 0, "message": {{"role": "assistant", "content": content}},
                              "finish_reason": "stop"}}],
                 "usage": {{"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}}}}
        return httpx.Response(200, json=data, headers={{"set-cookie": f"sid={{PLAIN['set-cookie']}}; Path=/"}})


    def run(prompt, ctx):
        if ctx.case.name == "wait":
            (HERE / "waiting").write_text("yes")
            deadline = time.time() + 60
            while not (HERE / "go").exists() and time.time() < deadline:
                time.sleep(0.05)
            return "waited"
        client = openai.OpenAI(
            api_key="sk-proj-EchoAgentKey0123456789abcdefABCDEF", max_retries=0,
            http_client=httpx.Client(transport=ctx.observe(httpx.MockTransport(provider))),
            default_headers={{"Cookie": f"theme=dark; sid={{PLAIN['cookie']}}", "X-Auth-Token": PLAIN["x-auth-token"]}},
            default_query={{"key": PLAIN["query key"], "page": "2"}})
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{{"role": "user", "content": prompt}}])
        return reply.choices[0].message.content
''').format(plain=PLAIN, aws_id=AWS_ID)


def forms() -> dict[str, set[str]]:
    """Each secret as it may be written: as is, JSON-escaped once and twice, HTML-escaped; the deploy token also
    as the base64 runs that do not depend on its neighbours (encoded between two different fillers, at each
    alignment, the characters that agree) and URL-encoded (both cases of hex)."""
    found: dict[str, set[str]] = {}
    for name, value in PLAIN.items():
        once = json.dumps(value)[1:-1]
        found[name] = {value, once, json.dumps(once)[1:-1], value.replace("/", "\\/")}
    token = DEPLOY_TOKEN.encode()
    runs = set()
    for align in range(3):
        one = base64.b64encode(b"\x00" * align + token + b"\x00\x00").decode()
        other = base64.b64encode(b"\xff" * align + token + b"\xff\xff").decode()
        runs |= {run for run in "".join(a if a == b else " " for a, b in zip(one, other)).split() if len(run) >= 12}
    quoted = quote(DEPLOY_TOKEN, safe="")
    found["deploy token"] = {DEPLOY_TOKEN, quoted, re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quoted), *runs}
    return found


def leaked(text: str) -> list[str]:
    return sorted(name for name, written in forms().items() if any(form in text for form in written))


def _env(project: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update(COLUMNS="200", ACME_DEPLOY_TOKEN=DEPLOY_TOKEN,
               PYTHONPATH=os.pathsep.join([str(project), env.get("PYTHONPATH", "")]))
    return env


def test_encoded_and_header_shaped_secrets_in_a_body_reach_no_artefact(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "state" / "eval").mkdir(parents=True)
    suite = [{"id": ident, "name": ident, "prompt": "Call the service.", "expected_tools": [], "max_turns": 2,
              "success_criteria": "Says the call worked"} for ident in ("echo", "wait")]
    (project / "state" / "eval" / "tests.json").write_text(json.dumps(suite, indent=2))
    (project / "echo_agent.py").write_text(AGENT)
    (project / "trialrun.toml").write_text('agent = "echo_agent:run"\nmodel = "scripted:unused.yaml"\n')
    (project / "unused.yaml").write_text("echo: [{reply: unused}]\nwait: [{reply: unused}]\n")
    folder = project / "state" / "eval"
    process = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "all", "-j", "1", "--junit", "out/junit.xml",
                                "--markdown", "out/summary.md"], cwd=project, env=_env(project),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    texts: dict[str, str] = {}
    try:
        deadline = time.time() + 90
        while not (project / "waiting").exists():
            assert process.poll() is None, process.communicate()
            assert time.time() < deadline
            time.sleep(0.05)
        for path in folder.iterdir():  # the live run's journal and sidecar, as they are on disk now
            texts[f"live {path.name}"] = path.read_text(errors="replace")
    finally:
        (project / "go").write_text("go")
        stdout, stderr = process.communicate(timeout=60)
    assert any(name.endswith(".jsonl") for name in texts) and any(name.endswith(".ndjson") for name in texts)
    texts.update({"run stdout": stdout, "run stderr": stderr})
    report = subprocess.run([sys.executable, "-m", "trialrun", "report", "--html", "out/report.html"], cwd=project,
                            env=_env(project), capture_output=True, text=True, timeout=120, check=False)
    as_json = subprocess.run([sys.executable, "-m", "trialrun", "report", "--json"], cwd=project, env=_env(project),
                             capture_output=True, text=True, timeout=120, check=False)
    texts.update({"report output": report.stdout + report.stderr, "report --json": as_json.stdout + as_json.stderr})
    for path in [*folder.iterdir(), *(project / "out").iterdir()]:
        texts[path.name] = path.read_text(errors="replace")
    assert {"junit.xml", "summary.md", "report.html", "latest.json"} <= set(texts)

    # The provider did send every form (its own log, outside trialrun): so the search below can fail.
    sent = (project / "provider.log").read_text()
    assert leaked(json.loads(sent.splitlines()[0])["content"]) == sorted(forms())
    leaks = {name: found for name, text in texts.items() if (found := leaked(text))}
    assert leaks == {}, f"{len(leaks)} of {len(texts)} artefacts: {leaks}"
    output = json.loads(texts["latest.json"])["cases"][0]["trials"][0]["output"]
    assert "sid=REDACTED" in output and "x-auth-token: REDACTED" in output and "REDACTED" in output.split("encoded:")[1]
