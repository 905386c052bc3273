"""The loopback endpoint's edges: it stops at once (never waiting for a poll, never on the event loop), and a
request body over its limit is refused with 413 and a note, read with bounded memory (Content-Length and chunked)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import httpx
import pytest

import trialrun as tr

SRC = str(Path(tr.__file__).resolve().parents[1])


def _chat(text: str = "hi") -> dict[str, object]:
    return {"model": "m", "messages": [{"role": "user", "content": text}]}


def test_stop_returns_at_once_and_the_port_is_closed() -> None:
    times = []
    for _ in range(8):
        endpoint = tr.serve(tr.ScriptedModel([tr.reply("hi")])).start()
        assert httpx.post(endpoint.openai_base_url + "/chat/completions", json=_chat()).status_code == 200
        time.sleep(0.02)  # the serving thread is back in its wait
        started = time.perf_counter()
        endpoint.stop()
        times.append(time.perf_counter() - started)
        host, port = httpx.URL(endpoint.url).host, httpx.URL(endpoint.url).port
        with pytest.raises(OSError):
            socket.create_connection((host, port), timeout=2).close()
    # before: serve_forever's 0.5 s poll, so a stop waited 0-0.5 s (median about 0.25 s)
    assert statistics.median(times) < 0.05, [round(t, 3) for t in times]


def test_closing_a_trial_with_an_endpoint_never_freezes_the_event_loop() -> None:
    case = tr.Case(name="c", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("x")])

    async def main() -> list[float]:
        frozen = []
        for _ in range(6):
            ctx = tr.TrialContext(case, 1)
            endpoint = ctx.serve(tr.ScriptedModel([tr.reply("x")]))
            await asyncio.sleep(0.02)
            ticks: list[float] = []

            async def ticker() -> None:
                while True:
                    ticks.append(time.perf_counter())
                    await asyncio.sleep(0)

            task = asyncio.ensure_future(ticker())
            await asyncio.sleep(0.005)
            before = time.perf_counter()
            await ctx.aclose()
            after = time.perf_counter()
            await asyncio.sleep(0.005)
            task.cancel()
            # the longest stretch around the close in which the loop ran nothing else
            around = [t for t in ticks if before - 0.005 <= t <= after + 0.005]
            frozen.append(max((b - a for a, b in zip(around, around[1:])), default=after - before))
            with pytest.raises(OSError):
                socket.create_connection((httpx.URL(endpoint.url).host, httpx.URL(endpoint.url).port), timeout=2).close()
        return frozen

    frozen = asyncio.run(main())
    # before: ctx.aclose() called the endpoint's synchronous stop() on the loop: frozen for up to 0.5 s
    assert statistics.median(frozen) < 0.05, [round(f, 3) for f in frozen]


def test_a_body_over_the_limit_is_413_with_a_note_and_one_under_it_is_served() -> None:
    model = tr.ScriptedModel([tr.reply("small one"), tr.reply("unused")])
    with tr.serve(model, max_body=2000) as endpoint:
        url = endpoint.openai_base_url + "/chat/completions"
        small = httpx.post(url, json=_chat("x" * 1000))
        big = httpx.post(url, json=_chat("y" * 3000))
        chunked = httpx.post(url, content=iter([json.dumps(_chat("z" * 3000)).encode()]))  # no length: chunked
        after = httpx.post(url, json=_chat("again"))
    assert small.status_code == 200 and small.json()["choices"][0]["message"]["content"] == "small one"
    assert big.status_code == 413 and "over the limit of 2000 bytes" in big.text
    assert chunked.status_code == 413
    assert after.status_code == 200  # still serving
    notes = model.trajectory().notes
    refused = [n for n in notes if "413" in n]
    assert len(refused) == 2, notes
    assert "POST /v1/chat/completions" in refused[0] and "3" in refused[0] and "2000" in refused[0]
    assert len(model.exchanges) == 2  # the refused bodies were never recorded (nor kept in memory)


def test_a_chunked_body_under_the_limit_reaches_the_model() -> None:
    model = tr.ScriptedModel([tr.reply("read it")])
    payload = json.dumps(_chat("sent in pieces")).encode()
    pieces = [payload[i:i + 7] for i in range(0, len(payload), 7)]
    with tr.serve(model) as endpoint:
        reply = httpx.post(endpoint.openai_base_url + "/chat/completions", content=iter(pieces))
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == "read it"
    assert model.trajectory().prompt == "sent in pieces"  # before: a chunked body was read as empty


# The endpoint in a process of its own, so its peak memory (VmHWM, read by the test from /proc) is its alone.
SERVER = textwrap.dedent("""
    import sys, trialrun as tr
    model = tr.ScriptedModel([tr.reply("ok")] * 4)
    endpoint = tr.serve(model).start()
    print(endpoint.url, flush=True)
    sys.stdin.readline()
    print("\\n".join(model.trajectory().notes), flush=True)
""")

GIB = 1 << 30
MIB = 1 << 20


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def _send_gib(url: str, chunked: bool) -> tuple[int, int]:
    """Send a 1 GiB body from memory-cheap zeros; (HTTP status answered, bytes sent before the server let go)."""
    parts = httpx.URL(url)
    sock = socket.create_connection((parts.host, parts.port), timeout=30)
    framing = b"Transfer-Encoding: chunked\r\n" if chunked else b"Content-Length: %d\r\n" % GIB
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + framing + b"\r\n")
    answer = bytearray()
    sent = [0]

    def send() -> None:
        block = b"\0" * MIB
        piece = (b"%x\r\n" % len(block)) + block + b"\r\n" if chunked else block
        try:
            while sent[0] < GIB:
                sock.sendall(piece)
                sent[0] += len(block)
            if chunked:
                sock.sendall(b"0\r\n\r\n")
        except OSError:  # the server answered and closed: what it should do
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        while b"\r\n" not in answer:
            data = sock.recv(4096)
            if not data:
                break
            answer += data
    finally:
        sender.join(timeout=60)
        sock.close()
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/1.1 ") else 0
    return status, sent[0]


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_gib_body_is_refused_with_bounded_memory(chunked: bool) -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONPATH": SRC})
    try:
        assert server.stdout is not None and server.stdin is not None
        url = server.stdout.readline().strip()
        before = _peak_rss(server.pid)
        started = time.perf_counter()
        status, sent = _send_gib(url, chunked)
        took = time.perf_counter() - started
        grew = _peak_rss(server.pid) - before
        server.stdin.write("\n")
        server.stdin.flush()
        notes = server.stdout.readline()
    finally:
        server.kill()
        server.wait()
    # before: 6.2 GiB of memory for a 1 GiB body (and a chunked body was not read as a body at all)
    assert status == 413, (status, sent)
    assert grew < 64 * MIB, f"the endpoint's peak memory grew by {grew / MIB:.0f} MiB while {sent / MIB:.0f} MiB were sent"
    assert "413" in notes and "limit" in notes, notes
    assert took < 30
