"""Done-when 5: a deterministic run that tries a real host fails with the guard's message; loopback still works."""

from __future__ import annotations

import asyncio
import contextvars
import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from trialrun.models import NetworkBlockedError, guard

ADVICE = ("Deterministic cases must not reach the network: use a ScriptedModel or a Cassette, or mark the case "
          "mode='live_canary' and run it with include_live_canary=True (trialrun run --include-live-canary, "
          "pytest --trialrun-include-live-canary).")


@pytest.fixture(autouse=True)
def _restore_global_default() -> Iterator[None]:
    before = guard.is_blocking()
    yield
    guard.block_globally(before)


@pytest.fixture
def loopback_server() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            body = b"local ok"
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_httpx_to_a_real_host_fails_with_the_guards_message_and_is_collected() -> None:
    with guard.no_network(label="case 'read_notes'") as attempts:
        with pytest.raises(NetworkBlockedError) as info, httpx.Client() as client:
            client.get("https://example.com/")
    expected = f"trialrun blocked a network connection to example.com:443 from deterministic case 'read_notes'. {ADVICE}"
    assert str(info.value) == expected
    assert attempts == [expected]
    with guard.no_network(label="deterministic case 'read_notes'") as attempts:
        with pytest.raises(NetworkBlockedError), httpx.Client() as client:
            client.get("https://example.com/")
    assert attempts == [expected]


def test_sdks_with_their_default_transport_are_blocked_and_the_attempt_is_collected() -> None:
    with guard.no_network(label="case 'sdk'") as attempts:
        client = openai.OpenAI(api_key="test", max_retries=0)
        with pytest.raises(Exception) as info:
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
        # Depending on the SDK version the guard's error surfaces as is or wrapped as its cause.
        assert isinstance(info.value, NetworkBlockedError) or isinstance(info.value.__cause__, NetworkBlockedError)

        # The anthropic SDK turns every exception into APIConnectionError("Connection error."), even ours.
        with pytest.raises(anthropic.APIConnectionError, match="Connection error") as wrapped:
            anthropic.Anthropic(api_key="test", max_retries=0).messages.create(
                model="claude-x", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
            )
        assert isinstance(wrapped.value.__cause__, NetworkBlockedError)
    assert attempts[0].startswith(
        "trialrun blocked a network connection to api.openai.com:443 from deterministic case 'sdk'."
    )
    assert attempts[1:] and all("api.anthropic.com:443" in a for a in attempts[1:])


def test_async_clients_are_blocked_too() -> None:
    async def main() -> None:
        async with httpx.AsyncClient() as client:
            await client.get("https://api.anthropic.com/v1/models")

    with guard.no_network(label="case 'async'") as attempts:
        with pytest.raises(NetworkBlockedError, match="api.anthropic.com:443 from deterministic case 'async'"):
            asyncio.run(main())
    assert len(attempts) == 1


def test_raw_sockets_are_blocked_by_address() -> None:
    with guard.no_network(label="case 'raw'") as attempts:
        with pytest.raises(NetworkBlockedError, match="8.8.8.8:53"):
            socket.create_connection(("8.8.8.8", 53), timeout=1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            with pytest.raises(NetworkBlockedError, match="1.1.1.1:443"):
                sock.connect(("1.1.1.1", 443))
            with pytest.raises(NetworkBlockedError, match="1.1.1.1:80"):
                sock.connect_ex(("1.1.1.1", 80))
        with pytest.raises(NetworkBlockedError, match="pypi.org:443"):
            socket.getaddrinfo("pypi.org", 443)
    assert len(attempts) == 4


def test_loopback_and_unix_sockets_are_always_allowed(loopback_server: int, tmp_path: Path) -> None:
    with guard.no_network(label="case 'local'") as attempts:
        for host in ("127.0.0.1", "localhost"):
            with httpx.Client() as client:
                assert client.get(f"http://{host}:{loopback_server}/").text == "local ok"
        if hasattr(socket, "AF_UNIX"):
            path = str(tmp_path / "s.sock")
            with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as client_sock:
                server.bind(path)
                server.listen(1)
                client_sock.connect(path)
    assert attempts == []


def test_global_default_scopes_and_threads() -> None:
    guard.block_globally(True)
    assert guard.is_blocking()
    with pytest.raises(NetworkBlockedError, match="example.org:443 from deterministic code") as info:
        httpx.get("https://example.org/")
    assert "whole process" in str(info.value)
    with guard.allow_network():
        assert not guard.is_blocking()
    guard.block_globally(False)
    assert not guard.is_blocking()

    with guard.no_network(label="case 'threads'"):
        seen: dict[str, bool] = {}
        context = contextvars.copy_context()
        copied = threading.Thread(target=lambda: seen.__setitem__("copied", context.run(guard.is_blocking)))
        plain = threading.Thread(target=lambda: seen.__setitem__("plain", guard.is_blocking()))
        for thread in (copied, plain):
            thread.start()
            thread.join()
        assert seen == {"copied": True, "plain": False}  # a plain thread falls back to the global default
    assert not guard.is_blocking()


def test_install_is_idempotent() -> None:
    guard.install()
    patched = socket.getaddrinfo
    guard.install()
    assert socket.getaddrinfo is patched
