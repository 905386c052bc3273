"""Secrets never reach an artefact: a planted-secrets campaign (issue 11).

Sixteen secrets (every key shape the scrubber knows, plus two values known only from the run's environment) are
planted in every place a run carries text: request headers, query strings, request bodies, tool arguments, tool
results, model replies (JSON and streamed, one key split across SSE events) and the run's own environment. The
agent is the official openai SDK over httpx; the provider answers with secrets in its headers and bodies. Then every
artefact trialrun writes or prints is searched for every secret: the cassette, the result file and latest.json,
`--json` output, HTML (run and comparison), JUnit, Markdown (run, comparison, step summary), the terminal table and
the failure text the pytest plugin prints. The run's report in memory holds them all (so the search can fail);
the artefacts hold none.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import openai
import pytest
from rich.console import Console

import trialrun as tr
from trialrun import expect
from trialrun.render.html import comparison_html, report_html
from trialrun.render.junit import junit_xml
from trialrun.render.markdown import append_step_summary, comparison_markdown, report_markdown
from trialrun.render.terminal import print_report
from trialrun.render.text import case_failure_text
from trialrun.report.compare import compare
from trialrun.report.store import ResultsStore, report_text

# What must never appear (the secret part), and how it is written where it is planted (its context).
_PEM_BODY = "MIIEowIBAAKCAQEAq7BFUpkGp3+LQmlQCampaignPlantedKeyBodyLine0001"
SECRETS: dict[str, tuple[str, str]] = {
    "openai": ("sk-Cmp4ignOpenAIabcdefghijklmnop0123", "{}"),
    "openai-project": ("sk-proj-Cmp4ignProjectKey_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345", "{}"),
    "anthropic": ("sk-ant-api03-Cmp4ignAnthropicKey-abcdefghijklmnopqrstuvwxyz0123456789", "{}"),
    "google": ("AIzaSyCmp4ignGoogleKey0123456789abcdefgh", "{}"),
    "github-ghp": ("ghp_Cmp4ignGitHubPersonal0123456789abcdef", "{}"),
    "github-gho": ("gho_Cmp4ignGitHubOAuth00123456789abcdefgh", "{}"),
    "github-ghs": ("ghs_Cmp4ignGitHubServer0123456789abcdefgh", "{}"),
    "github-pat": ("github_pat_11CMP4IGN0abcdefghijkl_Cmp4ignFineGrainedTokenBody0123456789abcdefghijk", "{}"),
    "slack": ("xoxb-1234567890123-1234567890123-Cmp4ignSlackBotToken0123", "{}"),
    "aws-key-id": ("AKIACMP4IGN0EXAMPLE7", "{}"),
    "aws-secret": ("Cmp4ign/AwsSecretKey+0123456789abcdefGHIJ", "aws_secret_access_key = {}"),
    "jwt": ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJjYW1wYWlnbiJ9.Cmp4ignJwtSignature0123456789abcdef", "{}"),
    "bearer": ("Cmp4ignOpaqueBearerToken0123456789", "Authorization: Bearer {}"),
    "private-key": (_PEM_BODY, "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----"),
    # Known only because the run's environment holds them (no shape says they are secret):
    "env-api-key": ("q7Zp2mX9campaignEnvOnlyValue", "{}"),
    "env-password": ('c0rrect "horse" <battery> staple', "{}"),
    # Issue 22: an AWS secret key beside its key id (on the next line, after a tab, after `=`), one whose name says
    # so in JSON that writes `/` as `\\/`, an AWS session token; cookies, an X-Auth-Token header and a `?key=`
    # value written in a body; the run's own credentials encoded on the way (base64 at each of the three
    # alignments inside a longer base64 text, URL-encoded with lower-case hex).
    "aws-beside-id-line": ("Cmp4ignAwsBesideIdLine0123456789/abcdefG", "AKIACMP4IGN1EXAMPLE8\n{}"),
    "aws-beside-id-tab": ("Cmp4ignAwsBesideIdTab+0123456789abcdefGH", "AKIACMP4IGN2EXAMPLE9\t{}"),
    "aws-beside-id-equals": ("Cmp4ignAwsBesideIdEq0123456789+abcdefGHI", "key_id=AKIACMP4IGN3EXAMPLE0 key={}"),
    "aws-secret-slash-escaped": ("wJalrXUtnFEMI/K7MDENG/Cmp4ignEXAMPLEKEYs",
                                 '{{"AccessKeyId": "ASIACMP4IGN4EXAMPLE1", "SecretAccessKey": "{}"}}'),
    "aws-session-token": ("IQoJb3JpZ2luX2VjECmp4ignSessionToken0123456789abcdefGHIJKLMN+/xyz",
                          "aws_session_token = {}"),
    "cookie": ("Cmp4ignSessionCookieValue0123", "Cookie: theme=dark; sid={}; lang=en"),
    "set-cookie": ("Cmp4ignSetCookieValue4567abc", "Set-Cookie: session={}; Path=/; HttpOnly"),
    "x-auth-token": ("Cmp4ignXAuthTokenValue89abcd", "X-Auth-Token: {}"),
    "query-key": ("Cmp4ignQueryKeyValue0123wxyz", "GET https://api.example.com/v1/items?page=2&key={}&sort=asc"),
    "env-token-encoded": ("deploy-9f8e7d6c5b4a3210/xyz", "{}"),  # planted only encoded (ENCODED below)
}
ENV = {"CAMPAIGN_SERVICE_API_KEY": SECRETS["env-api-key"][0], "CAMPAIGN_DB_PASSWORD": SECRETS["env-password"][0],
       "CAMPAIGN_DEPLOY_TOKEN": SECRETS["env-token-encoded"][0]}
_ENCODED_TOKEN = SECRETS["env-token-encoded"][0].encode()
#: The deploy token as an agent may pass it on: inside a longer text that is then base64-encoded, with the token
#: at each of the three byte alignments (standard and URL-safe alphabets), alone, and URL-encoded with lower-case
#: hex (`%2f`: what some encoders write).
ENCODED = [
    base64.b64encode(b"TOKEN=" + _ENCODED_TOKEN + b"\n").decode(),
    base64.b64encode(b"token: " + _ENCODED_TOKEN + b" (deploy)").decode(),
    base64.urlsafe_b64encode(b"the token: " + _ENCODED_TOKEN + b"!").decode(),
    base64.b64encode(_ENCODED_TOKEN).decode(),
    quote(SECRETS["env-token-encoded"][0], safe=""),
    re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quote(SECRETS["env-token-encoded"][0], safe="")),
]
SLASH_ESCAPED = {"aws-secret-slash-escaped"}  # planted as a JSON writer that escapes `/` writes it
PLANTED = "\n".join([*(context.format(secret.replace("/", "\\/") if name in SLASH_ESCAPED else secret)
                        for name, (secret, context) in SECRETS.items() if name != "env-token-encoded"), *ENCODED])
SPLIT_KEY = SECRETS["openai-project"][0]

ECHO_TOOL = {"type": "function", "function": {"name": "echo", "description": "Echo text",
             "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}}


def _chunk(content: str) -> str:
    data = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": None}]}
    return f"data: {json.dumps(data)}\n\n"


def provider(request: httpx.Request) -> httpx.Response:
    """The provider: a tool call whose arguments hold every secret, then a streamed reply holding them too, with one
    key split across three SSE events; secrets in response headers and a cookie as well."""
    body = json.loads(request.content)
    headers = {"set-cookie": f"session={SECRETS['github-ghs'][0]}", "x-debug-echo": PLANTED.replace("\n", " "),
               "openai-organization": "org-campaign-private"}
    if not body.get("stream"):
        call = {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": json.dumps({"text": PLANTED})}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        data = {"id": "c0", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}}
        return httpx.Response(200, json=data, headers=headers)
    pieces = ["Done. The key was ", SPLIT_KEY[:9], SPLIT_KEY[9:30], SPLIT_KEY[30:], ". Also:\n", PLANTED]
    stream = "".join(_chunk(piece) for piece in pieces) + "data: [DONE]\n\n"
    return httpx.Response(200, content=stream.encode(), headers={**headers, "content-type": "text/event-stream"})


def agent(transport: Any) -> str:
    """The agent under test (the openai SDK): secrets in its headers, query, prompt and tool result."""
    client = openai.OpenAI(
        api_key=SECRETS["openai"][0], http_client=httpx.Client(transport=transport), max_retries=0,
        default_headers={"x-trace-note": f"Bearer {SECRETS['bearer'][0]}", "x-custom-auth": SECRETS["slack"][0]},
        default_query={"key": SECRETS["google"][0], "note": SECRETS["github-ghp"][0]},
    )
    messages: list[Any] = [{"role": "user", "content": f"Remember these:\n{PLANTED}"}]
    first = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[ECHO_TOOL]).choices[0].message
    messages.append(first.model_dump(exclude_none=True))
    call = first.tool_calls[0]
    # A prompt-injected `env`: the tool's result carries the run's own secret environment values.
    result = json.loads(call.function.arguments)["text"] + "\n" + "\n".join(f"{k}={v}" for k, v in ENV.items())
    messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    stream = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[ECHO_TOOL], stream=True)
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def leaks(text: str) -> dict[str, int]:
    """How often each secret occurs in `text`, as written or escaped (JSON once or twice, HTML, repr); and every
    piece of one: all but the two environment values carry the marker `Cmp4ign`, which nothing else has."""
    found = {}
    for name, (secret, _) in SECRETS.items():
        once = json.dumps(secret)[1:-1]
        variants = {secret, once, json.dumps(once)[1:-1], html.escape(secret), html.escape(once), repr(secret)[1:-1],
                    once.replace("<", "\\u003c"),  # the HTML page's data: '<' written as \u003c
                    secret.replace("/", "\\/"), json.dumps(secret.replace("/", "\\/"))[1:-1]}
        count = sum(text.count(v) for v in variants if len(v) >= 6)
        if count:
            found[name] = count
    if pieces := text.lower().count("cmp4ign"):
        found["pieces (Cmp4ign)"] = pieces
    for form in encoded_forms(_ENCODED_TOKEN):
        if count := text.count(form):
            found[f"encoded {form}"] = count
    return found


def encoded_forms(value: bytes) -> set[str]:
    """The token's base64 as it shows inside any longer base64 text, at each of the three byte alignments and in
    both alphabets: the characters that are the same whatever bytes surround it (found by encoding it between two
    different fillers and keeping what agrees), and its URL encodings (upper- and lower-case hex)."""
    forms = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for align in range(3):
            one = encode(b"\x00" * align + value + b"\x00\x00").decode()
            other = encode(b"\xff" * align + value + b"\xff\xff").decode()
            same = "".join(a if a == b else "\n" for a, b in zip(one, other))
            forms |= {part for part in same.split("\n") if len(part) >= 12}
    text = value.decode()
    quoted = quote(text, safe="")
    return forms | {quoted, re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), quoted)}


@pytest.fixture
def campaign(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    cassette_path = tmp_path / "cassettes" / "campaign.yaml"

    def recorded(ctx: tr.TrialContext) -> str:
        return agent(ctx.cassette(cassette_path, mode="record", upstream=httpx.MockTransport(provider)))

    def observed(ctx: tr.TrialContext) -> str:  # nothing scrubbed in memory: every writer must scrub
        return agent(ctx.observe(httpx.MockTransport(provider)))

    cases = [
        tr.Case(name=name, invoke=invoke, expect_outcome=[expect.contains("the answer that never comes")],
                expect_trajectory=[expect.called("echo")])
        for name, invoke in (("recorded", recorded), ("observed", observed))
    ]
    report = tr.evaluate(cases, trials=2)
    return {"report": report, "cassette": cassette_path, "dir": tmp_path}


def artefacts(campaign: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    report, folder = campaign["report"], campaign["dir"]
    store = ResultsStore(folder / "results")
    saved = store.save(report)
    comparison = compare(report, report)
    console_file = io.StringIO()
    print_report(report, Console(file=console_file, width=120, force_terminal=False, color_system=None))
    summary = folder / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    append_step_summary(report_markdown(report))
    return {
        "cassette": campaign["cassette"].read_text(encoding="utf-8"),
        "results json": saved.read_text(encoding="utf-8"),
        "latest.json": (store.directory / "latest.json").read_text(encoding="utf-8"),
        "--json": report_text(report),
        "HTML": report_html(report),
        "HTML compare": comparison_html(comparison, report, report),
        "JUnit": junit_xml(report),
        "Markdown": report_markdown(report),
        "Markdown compare": comparison_markdown(comparison),
        "step summary": summary.read_text(encoding="utf-8"),
        "terminal": console_file.getvalue(),
        "pytest failure text": "\n".join(case_failure_text(case, width=400, max_lines=400) for case in report.cases),
    }


def test_no_planted_secret_reaches_any_artefact(campaign: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    report = campaign["report"]
    assert all(len(case.trials) == 2 and not case.passed for case in report.cases), "the campaign must have run"
    # The report in memory holds every secret (the observed case is not scrubbed): so the search below can fail.
    raw = leaks(report.model_dump_json())
    assert set(SECRETS) - {"env-token-encoded"} <= set(raw), f"not planted: {set(SECRETS) - set(raw)}"
    assert {f"encoded {form}" for form in encoded_forms(_ENCODED_TOKEN)} <= set(raw), "the encoded forms not planted"
    outputs = [trial.output for case in report.cases for trial in case.trials]
    assert all(SPLIT_KEY in output for output in outputs), "the agent saw the live answer, split key reassembled"

    found = artefacts(campaign, monkeypatch)
    leaked = {name: hits for name, text in found.items() if (hits := leaks(text))}
    checks = len(SECRETS) * len(found)
    failed = sum(1 for name in SECRETS for hits in leaked.values()
                 if any(key == name or (name == "env-token-encoded" and key.startswith("encoded ")) for key in hits))
    assert leaked == {}, f"{failed} of {checks} checks (secret x artefact) failed: {leaked}"
    for name, text in found.items():  # each artefact did carry the planted text, scrubbed (a comparison's
        if name != "Markdown compare":  # Markdown shows no trial text: only rates and the config diff)
            assert "REDACTED" in text, name
    # The cassette still replays, and its response headers are the allow-list's only.
    cassette = tr.Cassette(campaign["cassette"], mode="replay")
    kept = {name.lower() for exchange in cassette._recordings for name in exchange.exchange.response_headers}
    assert kept <= {"content-type"}, kept
    assert "x-debug-echo" not in found["cassette"] and "org-campaign-private" not in found["cassette"]


def test_the_split_key_is_scrubbed_from_each_sse_piece(campaign: dict[str, Any]) -> None:
    text = campaign["cassette"].read_text(encoding="utf-8")
    for piece in (SPLIT_KEY[9:30], SPLIT_KEY[30:]):
        assert piece not in text  # each piece alone is no known shape: only the reassembled stream shows the key
    replayed = agent(tr.Cassette(campaign["cassette"], mode="replay"))
    assert SPLIT_KEY not in replayed and "REDACTED" in replayed  # the scrubbed stream is still a valid stream
