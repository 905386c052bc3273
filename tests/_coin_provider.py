"""A live-like model provider for A/B tests: an OpenAI-compatible Chat Completions server on loopback, written here
with the standard library only (none of trialrun's wire code), that answers right with a known probability.

Each request's arm is read from the marker its messages carry (`RULES-<arm>`, e.g. from an AGENTS.md the agent was
given); it is answered "The answer is 42." with that arm's probability (a seeded coin per arm), else "The answer is
41.", in JSON or as the SSE stream it asked for, with usage. Every request is logged, in arrival order, as one JSON
line (its number, arm, model, the first user message, whether it was answered right, when it arrived): the order
the provider itself saw, which tests read to check how the trials were interleaved.

Run as a program: `python _coin_provider.py --rates v1=0.9,v2=0.3 --seed 7 --log FILE` prints its base URL on its
first line and serves until killed. `CoinProvider` starts and stops one from a test.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MARKER = re.compile(r"RULES-([A-Za-z0-9_]+)")
USAGE = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
        return

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._send(404, "application/json", json.dumps({"error": {"message": f"no route {self.path}"}}))
        messages = body.get("messages") or []
        text = " ".join(_text(m.get("content")) for m in messages if isinstance(m, dict))
        found = MARKER.search(text)
        arm = found.group(1) if found else None
        if arm not in self.server.rates:
            return self._send(400, "application/json",
                              json.dumps({"error": {"message": f"no RULES-<arm> marker of {sorted(self.server.rates)}"}}))
        right = self.server.coin(arm)
        answer = "The answer is 42." if right else "The answer is 41."
        user = next((_text(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "user"), "")
        self.server.record({"arm": arm, "model": body.get("model"), "user": user[:200], "right": right,
                            "stream": bool(body.get("stream")), "at": time.time()})
        if body.get("stream"):
            self._send(200, "text/event-stream", _sse(answer, str(body.get("model"))))
        else:
            self._send(200, "application/json", json.dumps({
                "id": "chatcmpl-coin", "object": "chat.completion", "created": int(time.time()), "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": USAGE}))

    def _send(self, status: int, kind: str, text: str) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _sse(answer: str, model: str) -> str:
    def chunk(delta: dict, finish: str | None = None, **extra: object) -> str:
        data = {"id": "chatcmpl-coin", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
        return f"data: {json.dumps(data)}\n\n"

    usage = {"id": "chatcmpl-coin", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
             "choices": [], "usage": USAGE}
    return (chunk({"role": "assistant", "content": ""}) + chunk({"content": answer}) + chunk({}, "stop")
            + f"data: {json.dumps(usage)}\n\n" + "data: [DONE]\n\n")


class _Server(ThreadingHTTPServer):
    def __init__(self, rates: dict[str, float], seed: int, log: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.rates = rates
        self.coins = {arm: random.Random(f"{seed}-{arm}") for arm in rates}
        self.lock = threading.Lock()
        self.log = log
        self.count = 0

    def coin(self, arm: str) -> bool:
        with self.lock:
            return self.coins[arm].random() < self.rates[arm]

    def record(self, entry: dict) -> None:
        with self.lock:
            self.count += 1
            with self.log.open("a") as handle:
                handle.write(json.dumps({"n": self.count, **entry}) + "\n")


class CoinProvider:
    """The provider in a process of its own: `with CoinProvider({"v1": 0.9}, seed, log) as p: p.base_url`."""

    def __init__(self, rates: dict[str, float], seed: int, log: Path) -> None:
        self.rates, self.seed, self.log = rates, seed, log
        self.process: subprocess.Popen[str] | None = None
        self.base_url = ""

    def __enter__(self) -> CoinProvider:
        rates = ",".join(f"{arm}={p}" for arm, p in self.rates.items())
        self.process = subprocess.Popen([sys.executable, __file__, "--rates", rates, "--seed", str(self.seed),
                                         "--log", str(self.log)], stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()
        assert self.base_url.startswith("http://127.0.0.1:"), self.base_url
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(10)

    def requests(self) -> list[dict]:
        """Every request the provider saw, in arrival order."""
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rates", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args()
    rates = {arm: float(p) for arm, p in (item.split("=") for item in args.rates.split(","))}
    server = _Server(rates, args.seed, args.log)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
