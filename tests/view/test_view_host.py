"""`trialrun view --host` (issue 33.3): the host is resolved, and the viewer runs without its token only when EVERY
address it resolves to is a loopback one (before, `127.<anything>` was taken for loopback by its spelling: a name
`127.x` answered by DNS with 0.0.0.0 listened on every interface, with no token). Any other bind wants the token on
every route; the redirect that trades `?token=` for the cookie goes to a path of this site only (before,
`//evil.example/?token=T` answered `Location: //evil.example/`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from _view_folders import TEST, make_runs, stems
from starlette.testclient import TestClient

import trialrun
from trialrun.view import create_app, is_loopback, same_origin


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("runs"), runs=1)


def _resolving(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    """The name service answering `answers` (name -> addresses) and as usual for every other name."""
    real = socket.getaddrinfo

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> list[tuple]:  # type: ignore[type-arg]
        if host == "no-such-host.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if host in answers:
            return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0))
                    for a in answers[host]]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_loopback_is_what_every_resolved_address_is_not_how_the_name_is_spelled(monkeypatch: pytest.MonkeyPatch) -> None:
    _resolving(monkeypatch, {"127.evil.test": ["0.0.0.0"], "split.test": ["127.0.0.1", "10.1.2.3"],
                             "local.test": ["127.0.1.1", "::1"]})
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("[::1]") and is_loopback("localhost")
    assert is_loopback("127.3.4.5") and is_loopback("local.test")
    assert not is_loopback("127.evil.test")  # spelled like loopback, resolves to every interface
    assert not is_loopback("split.test")  # one of its addresses is another machine's
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("10.1.2.3")
    assert not is_loopback("no-such-host.invalid")


def _urls(stem: str) -> dict[str, tuple[str, str]]:
    """A request for every route of the viewer (route -> method, URL)."""
    return {
        "/": ("GET", "/"), "/run/{stem}": ("GET", f"/run/{stem}"), "/test/{name:path}": ("GET", f"/test/{TEST}"),
        "/compare": ("GET", f"/compare?a={stem}&b={stem}"), "/diff": ("GET", f"/diff?test={TEST}&a={stem}&b={stem}"),
        "/live/{stem}": ("GET", f"/live/{stem}"), "/api/live/{stem}": ("GET", f"/api/live/{stem}"),
        "/api/runs": ("GET", "/api/runs"), "/trial/{stem}": ("GET", f"/trial/{stem}?test={TEST}&trial=1"),
        "/search": ("GET", "/search?q=read"), "/grade": ("POST", "/grade"), "/override": ("POST", "/override"),
    }


def test_a_viewer_open_to_others_wants_the_token_on_every_route(runs: Path) -> None:
    app = create_app(runs, host="0.0.0.0", token="t0ken", require_token=True)
    (stem,) = stems(runs)
    urls = _urls(stem)
    assert sorted(urls) == sorted(app.routes)  # every route the app has is tried here
    stranger = TestClient(app, base_url="http://192.0.2.1")
    for route, (method, url) in urls.items():
        answer = stranger.request(method, url, data={"token": "t0ken"} if method == "POST" else None,
                                  follow_redirects=False)
        assert answer.status_code == 403 and "needs its token" in answer.text, (route, answer.status_code)
    member = TestClient(app, base_url="http://192.0.2.1")
    assert member.get("/?token=t0ken", follow_redirects=False).status_code == 303
    for route, (method, url) in urls.items():
        if method == "GET":
            assert member.get(url).status_code in (200, 404), route  # in (404: no run in progress named so)


@pytest.mark.parametrize(("path", "location"), [
    ("//evil.example/", "/evil.example/"), ("///evil.example/x", "/evil.example/x"), ("/\\evil.example/", "/%5Cevil.example/"),
    ("/run/a b", "/run/a%20b"), ("/", "/"),
])
def test_the_token_redirect_stays_on_this_site(runs: Path, path: str, location: str) -> None:
    assert same_origin(path) == location
    app = create_app(runs, host="0.0.0.0", token="t0ken", require_token=True)
    answer = TestClient(app).get(f"http://192.0.2.1{path}?token=t0ken", follow_redirects=False)  # (a whole URL: the
    # path is sent as it is, where one relative to a base URL starting with // would name another host)
    assert answer.status_code == 303 and answer.headers["location"] == location
    assert not answer.headers["location"].startswith(("//", "/\\"))


#: `trialrun view` in a process whose name service answers 127.evil.test with 0.0.0.0 (a DNS record anyone can make).
RESOLVED = """
import socket, sys
real = socket.getaddrinfo
def getaddrinfo(host, *args, **kwargs):
    return real("0.0.0.0" if host == "127.evil.test" else host, *args, **kwargs)
socket.getaddrinfo = getaddrinfo
from trialrun.cli import main
main(["view", *sys.argv[1:]])
"""


def _listening(port: int) -> list[str]:
    """The local addresses listening on `port`, read from /proc/net/tcp (the kernel's word, not trialrun's)."""
    found = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state = line.split()[1], line.split()[3]
        address, hex_port = local.split(":")
        if int(hex_port, 16) == port and state == "0A":
            found.append(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads the kernel's socket table (Linux)")
def test_a_name_like_127_x_that_resolves_to_every_interface_gets_the_token(runs: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(Path(trialrun.__file__).resolve().parents[1])}
    process = subprocess.Popen([sys.executable, "-c", RESOLVED, str(runs), "--host", "127.evil.test", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert process.stdout is not None
        warning, serving = process.stdout.readline(), process.stdout.readline()
        assert "WARNING: serving on 127.evil.test (0.0.0.0), reachable from other machines" in warning, warning + serving
        assert "?token=" in serving
        assert _listening(port) == ["0.0.0.0"]  # it does listen everywhere: the token is what keeps others out
        base = f"http://127.0.0.1:{port}"
        for _, (method, url) in _urls(stems(runs)[0]).items():
            assert httpx.request(method, base + url).status_code == 403, url
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(10)
