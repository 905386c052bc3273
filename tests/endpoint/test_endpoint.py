"""The loopback endpoint: an agent in another process talks to a scripted model, and trialrun still sees its
trajectory."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import httpx
import openai
import pytest

import trialrun as tr


def _tool(name: str, arg: str) -> dict:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": {arg: {"type": "string"}}}}}


def test_openai_sdk_over_real_http_json_and_stream() -> None:
    model = tr.ScriptedModel([tr.tool_call("lookup", key="k"), tr.reply("The value is v.")])
    with tr.serve(model) as endpoint:
        client = openai.OpenAI(api_key="test", base_url=endpoint.openai_base_url, max_retries=0)
        first = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "go"}],
                                               tools=[_tool("lookup", "key")])
        call = first.choices[0].message.tool_calls[0]
        stream = client.chat.completions.create(
            model="gpt-4.1-mini", stream=True, tools=[_tool("lookup", "key")],
            messages=[{"role": "user", "content": "go"}, first.choices[0].message.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id, "content": "v"}],
        )
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert (call.function.name, json.loads(call.function.arguments)) == ("lookup", {"key": "k"})
    assert text == "The value is v."
    trajectory = model.trajectory()
    assert [c.name for c in trajectory.tool_calls] == ["lookup"] and trajectory.tool_results[0].content == "v"
    assert trajectory.final_text == "The value is v."


def test_an_agent_in_another_process() -> None:
    model = tr.ScriptedModel([tr.reply("hello from the endpoint")])
    script = textwrap.dedent("""
        import os, sys, httpx
        reply = httpx.post(os.environ["BASE"] + "/chat/completions",
                           json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        print(reply.json()["choices"][0]["message"]["content"])
    """)
    with tr.serve(model) as endpoint:
        done = subprocess.run([sys.executable, "-c", script], env={"BASE": endpoint.openai_base_url, "PATH": ""},
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hello from the endpoint"
    assert model.trajectory().final_text == "hello from the endpoint"


def test_a_transport_that_raises_is_a_502_and_the_endpoint_keeps_serving() -> None:
    calls = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return httpx.Response(200, json={"ok": True})

    with tr.serve(httpx.MockTransport(flaky)) as endpoint:
        first = httpx.post(endpoint.url + "/x", json={})
        second = httpx.post(endpoint.url + "/y", json={})
    assert first.status_code == 502 and "RuntimeError: boom" in first.text
    assert second.json() == {"ok": True}


def test_inside_a_case_the_served_model_is_observed() -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        endpoint = ctx.serve(ctx.scripted([tr.tool_call("read_file", path="a.txt"), tr.reply("done")]))
        client = openai.OpenAI(api_key="test", base_url=endpoint.openai_base_url, max_retries=0)
        tools = [_tool("read_file", "path")]
        first = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "go"}], tools=tools)
        call = first.choices[0].message.tool_calls[0]
        second = client.chat.completions.create(model="gpt-4.1-mini", tools=tools, messages=[
            {"role": "user", "content": "go"}, first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "text of a"}])
        return second.choices[0].message.content

    case = tr.Case(name="served", invoke=invoke, expect_outcome=[tr.expect.equals("done")],
                   expect_trajectory=[tr.expect.called("read_file", args={"path": "a.txt"})])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, [v.reason for v in trial.verdicts]


def test_a_client_that_hangs_up_prints_no_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    import socket
    import struct

    with tr.serve(tr.ScriptedModel([tr.reply("hi")])) as endpoint:
        parts = httpx.URL(endpoint.url)
        host, port = parts.host, parts.port
        for _ in range(5):
            sock = socket.create_connection((host, port))
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # reset, not close
            sock.close()
        with httpx.Client() as client:  # still serving
            response = client.post(endpoint.openai_base_url + "/chat/completions",
                                   json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert response.status_code == 200
    assert "Traceback" not in capsys.readouterr().err
