"""A live-like model whose truth is known: an OpenAI-compatible server on loopback (written here with the standard
library, none of trialrun's code) that answers each request right with a known probability, from a seeded stream.

trialrun reaches it as a live model (`openai-compatible:http://127.0.0.1:PORT/v1#coin`), so a run on it is live in
every sense trialrun can observe, while the test knows the pass rate each test truly has.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["coin_model", "Coin"]


@dataclass
class Coin:
    """The served model: its spec for trialrun, and how many answers it gave right and wrong (the truth)."""

    spec: str
    right: int = 0
    wrong: int = 0


@contextmanager
def coin_model(chance: Callable[[str], float], *, seed: int, right: str = "Buy milk.", wrong: str = "Buy bread.",
               per_prompt: bool = False) -> Iterator[Coin]:
    """Serve the coin model; yields it (`Coin.spec` for `--model`). `chance(text)` is the probability that a request
    is answered `right` (else `wrong`); `text` is its last user message, after its system message and a newline
    when it has one. One seeded stream of draws serves every request; `per_prompt=True` gives each `text` a stream
    of its own, so what each test draws does not depend on the order concurrent trials ask in."""
    shared = random.Random(seed)
    streams: dict[str, random.Random] = {}
    lock = threading.Lock()
    coin = Coin("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the standard library's name
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
            messages = body.get("messages", [])
            prompt = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
            system = next((m.get("content") for m in messages if m.get("role") == "system"), None)
            text = f"{system}\n{prompt}" if system else str(prompt)
            with lock:
                draws = streams.setdefault(text, random.Random(f"{seed}:{text}")) if per_prompt else shared
                good = draws.random() < chance(text)
                coin.right += good
                coin.wrong += not good
            answer = right if good else wrong
            reply = json.dumps({
                "id": "chatcmpl-coin", "object": "chat.completion", "created": 0, "model": body.get("model", "coin"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
            }).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="coin-model", daemon=True)
    thread.start()
    try:
        coin.spec = f"openai-compatible:http://127.0.0.1:{server.server_address[1]}/v1#coin"
        yield coin
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
