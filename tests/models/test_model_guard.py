"""Done-when 5: a deterministic run that tries a real host fails with the guard's message; loopback still works."""

from __future__ import annotations

import asyncio
import concurrent.futures
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

import trialrun as tr
from trialrun._util.workers import DAEMON_THREADS
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
        assert seen == {"copied": True, "plain": True}  # a plain thread inherits its starter's state
    assert not guard.is_blocking()
    unguarded = threading.Thread(target=lambda: seen.__setitem__("outside", guard.is_blocking()))
    unguarded.start()
    unguarded.join()
    assert seen["outside"] is False  # started outside no_network: the global default (off)


def test_install_is_idempotent() -> None:
    guard.install()
    patched = socket.getaddrinfo
    guard.install()
    assert socket.getaddrinfo is patched


def test_install_after_uninstall_patches_again() -> None:
    """`install` returns at once when installed (it runs at the start of every deterministic trial): `uninstall`
    must clear that, or the next install would leave the sockets unguarded."""
    try:
        guard.uninstall()
        assert socket.create_connection is not guard._create_connection
        guard.install()
        assert socket.create_connection is guard._create_connection
        with guard.no_network(label="case 'again'") as attempts, pytest.raises(NetworkBlockedError):
            socket.create_connection(("8.8.8.8", 53), timeout=1)
        assert len(attempts) == 1
    finally:
        guard.install()


def test_the_runners_guard_blocks_collects_and_restores_the_context_it_found() -> None:
    """`no_network` as the runner enters it (positionally, a case's label), nested in an allowing scope and
    around a blocking one: the attempts, the messages and the scope it found restored."""
    guard.block_globally(False)
    with guard.allow_network():
        with guard.no_network("deterministic case 'fast'") as attempts:
            assert guard.is_blocking()
            with pytest.raises(NetworkBlockedError) as info:
                socket.getaddrinfo("pypi.org", 443)
            with guard.no_network(label="case 'inner'") as inner, pytest.raises(NetworkBlockedError):
                socket.create_connection(("8.8.8.8", 53), timeout=1)
            assert guard.is_blocking()
        assert not guard.is_blocking()  # the allowing scope is back
    assert str(info.value) == f"trialrun blocked a network connection to pypi.org:443 from deterministic case 'fast'. {ADVICE}"
    assert attempts == [str(info.value)]
    assert len(inner) == 1 and "from deterministic case 'inner'" in inner[0]


# -- threads and executors: a job runs with the guard state of the code that started it ---------------------------
REAL_HOST = ("192.0.2.2", 8765)  # TEST-NET-1: not loopback, so the guard treats it as a real host
REAL_URL = "http://192.0.2.2:8765/"


@pytest.fixture
def real_host(loopback_server: int, monkeypatch: pytest.MonkeyPatch) -> str:
    """A URL on a real (non-loopback) address whose connections, once the guard has let them through, land on the
    loopback server: a request answers "local ok" exactly when the guard failed to block it."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    connect = guard._originals["create_connection"]

    def redirect(address: tuple[str, int], *args: object, **kwargs: object) -> socket.socket:
        if tuple(address[:2]) == REAL_HOST:
            address = ("127.0.0.1", loopback_server)
        return connect(address, *args, **kwargs)

    monkeypatch.setitem(guard._originals, "create_connection", redirect)
    return REAL_URL


def _fetch(url: str) -> str:
    """What an agent's tool does: "reached" when the request got through, else the error's type."""
    try:
        return "reached" if httpx.get(url, timeout=5).text == "local ok" else "wrong answer"
    except NetworkBlockedError:
        return "blocked"


def _in_thread(url: str) -> str:
    box: list[str] = []
    thread = threading.Thread(target=lambda: box.append(_fetch(url)))
    thread.start()
    thread.join()
    return box[0]


def _in_pool(url: str) -> str:
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        return pool.submit(_fetch, url).result()


def _in_executor(url: str) -> str:
    async def main() -> str:
        return await asyncio.get_running_loop().run_in_executor(None, _fetch, url)

    return asyncio.run(main())


FETCHERS = {"thread": _in_thread, "pool": _in_pool, "executor": _in_executor}


def test_the_redirect_really_reaches_the_server_when_nothing_blocks(real_host: str) -> None:
    guard.block_globally(False)
    assert _fetch(real_host) == "reached"
    with guard.no_network(label="case 'direct'") as attempts:
        assert _fetch(real_host) == "blocked"
    assert attempts == [f"trialrun blocked a network connection to 192.0.2.2:8765 from deterministic case 'direct'. {ADVICE}"]


@pytest.mark.parametrize("how", FETCHERS)
def test_a_deterministic_case_cannot_reach_a_real_host_from_another_thread(real_host: str, how: str) -> None:
    guard.block_globally(False)  # only the case's own guard may block
    fetch = FETCHERS[how]
    case = tr.Case(name=f"via {how}", invoke=lambda ctx: fetch(real_host), expect_outcome=[tr.expect.equals("blocked")])
    report = tr.evaluate([case])
    trial = report.cases[0].trials[0]
    assert trial.output == "blocked"
    assert not trial.passed and trial.error is not None and trial.error.type == "NetworkBlockedError"
    assert trial.error.message.startswith(
        f"trialrun blocked a network connection to 192.0.2.2:8765 from deterministic case 'via {how}'."
    )


def test_every_trial_is_guarded_even_after_something_uninstalled_the_guard(real_host: str) -> None:
    """The runner enters the guard around each trial and teardown, and the guard's install skips its lock once
    installed: a trial after a tool called `uninstall` (in a teardown, here) must be blocked all the same, by its
    own guard (the process default is off), in invoke and teardown, with the case's name in the message."""
    guard.block_globally(False)

    def teardown(ctx: tr.TrialContext) -> None:
        ctx.state["teardown"] = _fetch(real_host)
        if ctx.trial == 1:
            guard.uninstall()  # what a tool that must leave the process as it found it does
        assert ctx.state["teardown"] == "blocked"

    case = tr.Case(name="after uninstall", invoke=lambda ctx: _fetch(real_host), teardown=teardown,
                   expect_outcome=[tr.expect.equals("blocked")])
    try:
        report = tr.evaluate([case], trials=3, concurrency=1)
    finally:
        guard.install()
    for trial in report.cases[0].trials:
        assert trial.output == "blocked" and not trial.passed
        assert trial.error is not None and trial.error.type == "NetworkBlockedError"
        assert "from deterministic case 'after uninstall'" in trial.error.message
        assert trial.teardown_error is not None and trial.teardown_error.phase == "teardown"
        assert "from deterministic case 'after uninstall'" in trial.teardown_error.message


@pytest.mark.parametrize("how", FETCHERS)
def test_a_live_canarys_threads_may_reach_the_network(real_host: str, how: str) -> None:
    guard.block_globally(False)
    fetch = FETCHERS[how]
    case = tr.Case(name=f"live via {how}", mode="live_canary", invoke=lambda ctx: fetch(real_host),
                   expect_outcome=[tr.expect.equals("reached")])
    report = tr.evaluate([case], include_live_canary=True)
    assert report.cases[0].passed, report.cases[0].trials[0]


def test_a_worker_started_in_a_guarded_trial_does_not_guard_later_trials(real_host: str) -> None:
    """The runner's worker thread starts inside the first (deterministic) trial; with one trial at a time, the live
    canary after it runs on that same thread, and each job's own context wins over the one the thread started in."""
    guard.block_globally(False)

    def where(ctx: tr.TrialContext) -> str:
        return f"{threading.current_thread().name}: direct {_fetch(real_host)}, thread {_in_thread(real_host)}"

    cases = [tr.Case(name="guarded", invoke=where, expect_outcome=[tr.expect.contains("blocked")]),
             tr.Case(name="live", mode="live_canary", invoke=where, expect_outcome=[tr.expect.contains("reached")])]
    report = tr.evaluate(cases, include_live_canary=True, concurrency=1)
    guarded, live = (case.trials[0].output for case in report.cases)
    worker = guarded.split(":")[0]
    assert guarded == f"{worker}: direct blocked, thread blocked"
    assert live == f"{worker}: direct reached, thread reached"


def test_a_pool_keeps_no_guard_state_of_the_code_that_started_its_threads(real_host: str) -> None:
    guard.block_globally(False)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        with guard.no_network(label="case 'starts the pool'"):
            assert pool.submit(_fetch, real_host).result() == "blocked"  # the worker thread starts here
        assert pool.submit(_fetch, real_host).result() == "reached"  # the same worker, an unguarded job
        with guard.no_network(label="case 'later'"):
            assert pool.submit(_fetch, real_host).result() == "blocked"

    # trialrun's own threads (trials, timed tools) run each call in the context of the code that submitted it
    with guard.no_network(label="case 'starts a tool thread'"):
        assert DAEMON_THREADS.submit(_fetch, real_host).result(5) == "blocked"
    assert DAEMON_THREADS.submit(_fetch, real_host).result(5) == "reached"


# -- proxies: a loopback proxy reaches real hosts --------------------------------------------------------------
@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"])
def test_a_loopback_proxy_from_the_environment_is_blocked_and_named(
    loopback_server: int, monkeypatch: pytest.MonkeyPatch, variable: str,
) -> None:
    """The loopback server plays the proxy: it would answer the proxied request for the real host."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = f"http://127.0.0.1:{loopback_server}"
    monkeypatch.setenv(variable, proxy)
    guard.block_globally(False)
    assert httpx.get(REAL_URL, timeout=5).text == "local ok"  # unguarded, the proxy does reach the "real host"

    with guard.no_network(label="case 'proxied'") as attempts:
        with pytest.raises(NetworkBlockedError, match="to 192.0.2.2:8765 from deterministic case 'proxied'"):
            httpx.get(REAL_URL, timeout=5)  # httpx is stopped at the real host it asks for
        with pytest.raises(NetworkBlockedError) as info:
            socket.create_connection(("127.0.0.1", loopback_server), timeout=5)  # any client going via the proxy
    assert str(info.value) == attempts[1]
    assert attempts[1].startswith(
        f"trialrun blocked a network connection to 127.0.0.1:{loopback_server} via proxy {proxy} "
        "from deterministic case 'proxied': a proxy set in the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY) "
        "reaches real hosts for its clients, so it is blocked even on loopback; unset it for deterministic runs."
    )
    assert attempts[1].endswith(ADVICE)


def test_a_proxy_named_localhost_without_a_scheme_matches_its_loopback_address(
    loopback_server: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"localhost:{loopback_server}")
    monkeypatch.setenv("NO_PROXY", "")
    with guard.no_network(label="case 'proxied'") as attempts:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            with pytest.raises(NetworkBlockedError, match=f"via proxy localhost:{loopback_server} "):
                sock.connect(("127.0.0.1", loopback_server))
        with pytest.raises(NetworkBlockedError, match=f"to ::1:{loopback_server} via proxy localhost:{loopback_server} "):
            socket.getaddrinfo("::1", loopback_server)
    assert len(attempts) == 2


def test_loopback_servers_still_work_when_a_proxy_is_set(loopback_server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with guard.no_network(label="case 'local'") as attempts:
        assert httpx.get(f"http://127.0.0.1:{loopback_server}/", timeout=5).text == "local ok"
    assert attempts == []


def test_a_kept_alive_connection_opened_by_a_live_canary_is_not_reused_by_a_deterministic_case(real_host: str) -> None:
    guard.block_globally(False)
    shared = httpx.Client(timeout=5)  # a module-level client, as agents often keep one

    def fetch(ctx: tr.TrialContext) -> str:
        try:
            return "reached" if shared.get(real_host).text == "local ok" else "wrong answer"
        except NetworkBlockedError:
            return "blocked"

    live = tr.Case(name="live first", mode="live_canary", invoke=fetch, expect_outcome=[tr.expect.equals("reached")])
    deterministic = tr.Case(name="then deterministic", invoke=fetch, expect_outcome=[tr.expect.equals("blocked")])
    try:
        report = tr.evaluate([live, deterministic], include_live_canary=True, concurrency=1)
    finally:
        shared.close()
    assert report.cases[0].passed  # the canary opened a connection, kept alive in the pool
    trial = report.cases[1].trials[0]
    assert trial.output == "blocked" and trial.error.type == "NetworkBlockedError"


# -- httpx2 is patched when it is imported, not imported to be patched ---------------------------------------------
_HTTPX2_AFTER_THE_GUARD = '''
import asyncio, http.server, socket, sys, threading
from trialrun.models import NetworkBlockedError, guard

guard.block_globally(True)  # as a test suite does: install() is not called again below
imported_by_the_guard = "httpx2" in sys.modules

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a second request reuses the connection, opening no socket

    def do_GET(self):
        body = b"local ok"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
create_connection, connect = guard._originals["create_connection"], guard._originals["connect"]

def loopback(address):  # the real host's connections land on the loopback server, once the guard let them through
    return ("127.0.0.1", server.server_address[1]) if tuple(address[:2]) == ("192.0.2.2", 8765) else address

guard._originals["create_connection"] = lambda address, *a, **k: create_connection(loopback(address), *a, **k)
guard._originals["connect"] = lambda sock, address: connect(sock, loopback(address))  # asyncio's, anyio's

import httpx2  # only now, after the guard was installed

def fetch(client):
    try:
        return "reached" if client.get("http://192.0.2.2:8765/").text == "local ok" else "wrong answer"
    except NetworkBlockedError:
        return "blocked"

async def afetch(client):
    try:
        return "reached" if (await client.get("http://192.0.2.2:8765/")).text == "local ok" else "wrong answer"
    except NetworkBlockedError:
        return "blocked"

async def async_pair():
    async with httpx2.AsyncClient(timeout=5) as client:
        with guard.allow_network():
            first = await afetch(client)
        return first, await afetch(client), len(guard._global.attempts)

with httpx2.Client(timeout=5) as client:
    with guard.allow_network():  # a live canary opens the connection, kept alive in the pool
        first = fetch(client)
    second = fetch(client)  # then code under the global block, on the same client
print("IMPORTED-BY-GUARD", imported_by_the_guard, "SYNC", first, second, len(guard._global.attempts),
      "ASYNC", *asyncio.run(async_pair()))
'''


def test_httpx2_imported_only_after_the_guard_is_installed_is_still_guarded() -> None:
    """A fresh interpreter (httpx2 not imported yet): installing the guard does not import httpx2, and once
    httpx2 is imported (the guard is not installed again meanwhile) its transports refuse a request under the global
    block on a connection a live canary kept alive, sync and async (the socket patches alone would let it through:
    it opens no socket)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _HTTPX2_AFTER_THE_GUARD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["IMPORTED-BY-GUARD", "False", "SYNC", "reached", "blocked", "1",
                                   "ASYNC", "reached", "blocked", "2"], done.stdout + done.stderr


def test_the_guard_leaves_no_import_hook_behind_and_uninstall_restores_httpx2() -> None:
    """httpx2 imported (as the SDK tests here do): its transports are patched, no finder waits in sys.meta_path,
    and uninstall puts back httpx2's own methods (install patches them again)."""
    import sys

    import httpx2

    guard.install()
    cls = httpx2.HTTPTransport
    original = guard._originals[f"{cls.__module__}.{cls.__qualname__}.handle_request"]
    assert httpx2.HTTPTransport.handle_request is not original
    assert not any(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path)
    blocking = guard.is_blocking()
    guard.uninstall()
    try:
        assert httpx2.HTTPTransport.handle_request is original
        assert not any(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path)
    finally:
        guard.install()
        guard.block_globally(blocking)
    assert httpx2.HTTPTransport.handle_request is not original
