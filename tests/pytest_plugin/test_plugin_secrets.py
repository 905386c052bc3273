"""The pytest plugin prints and saves no credential its cases' model transports hold (a LiveModel's `api_key` with
no key shape, in no environment variable), though the agent and the model echo it into the prompt and the output."""

from __future__ import annotations

import json
import textwrap

import pytest

# Not in a conftest: pytest refuses `pytest_plugins` in a conftest below the rootdir when the whole suite runs.
pytest_plugins = ["pytester"]

TOKEN = "pytest-plugin-internal-credential"

CASES = textwrap.dedent('''
    import httpx
    import trialrun as tr
    from trialrun import expect

    TOKEN = {token!r}


    def upstream(request):
        key = request.headers["x-api-key"]
        body = {{"id": "m", "type": "message", "role": "assistant", "model": "claude",
                 "content": [{{"type": "text", "text": "your key is " + key}}], "stop_reason": "end_turn",
                 "usage": {{"input_tokens": 3, "output_tokens": 2}}}}
        return httpx.Response(200, json=body)


    def invoke(ctx):
        model = ctx.observe(tr.LiveModel("https://llm.internal.example", api_key=TOKEN, auth_header="x-api-key",
                                         transport=httpx.MockTransport(upstream)))
        return tr.Agent(model, api="anthropic", model_name="claude").run("What is my key? It is " + TOKEN)


    CASES = [tr.Case(name="echoes-its-key", invoke=invoke, expect_outcome=[expect.contains("no key here")])]
''')


def test_the_pytest_plugin_prints_and_saves_no_transport_credential(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_leaky=CASES.format(token=TOKEN))
    run = pytester.runpytest_subprocess("--trialrun-save", "-rA", "-vv")
    text = run.stdout.str() + run.stderr.str()
    run.assert_outcomes(failed=1)
    assert "your key is REDACTED" in text, text  # the failure was shown, with its output, scrubbed
    files = {str(p): p.read_text(encoding="utf-8", errors="replace") for p in pytester.path.rglob("*")
             if p.is_file() and "test_leaky" not in p.name and "__pycache__" not in str(p)}
    assert any(name.endswith("latest.json") for name in files) and any(n.endswith(".ndjson") for n in files), files
    found = [name for name, body in {**files, "terminal": text}.items()
             if TOKEN in body or json.dumps(json.dumps(TOKEN))[1:-1] in body]
    assert found == [], found
