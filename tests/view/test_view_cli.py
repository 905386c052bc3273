"""`trialrun view` as a command and as a server's edges: a busy port is exit 2 naming the port and `--port`; a
non-loopback `--host` prints a warning and wants the session token on every page (a cookie after the first visit);
unknown pages and a diff of an unknown test are a styled 404 that links home; `trialrun grade` and the viewer's form
write the same audit, and neither grades a run whose journal is still being written."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _view_folders import TEST, make_runs, stems
from click.testing import CliRunner
from starlette.testclient import TestClient

from trialrun.cli import main
from trialrun.view import create_app


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("runs"))


def test_a_busy_port_is_exit_2_naming_the_port_and_the_way_out(runs: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["view", str(runs), "--port", str(port)])
    assert result.exit_code == 2, result.output
    assert f"error: port {port} on 127.0.0.1 is already in use" in result.output and "--port" in result.output
    assert "Errno" not in result.output


def _free_port(family: socket.AddressFamily, host: str) -> int:
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _viewer(runs: Path, host: str, port: int) -> subprocess.Popen[str]:
    """`trialrun view` as its own process, of the trialrun this test process tests."""
    import os

    import trialrun

    source = Path(trialrun.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen([sys.executable, "-m", "trialrun", "view", str(runs), "--host", host, "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _first_answer(url: str) -> httpx.Response:
    """The viewer's first answer at `url`, once it listens (within 30 s: a loaded 2-core machine took over 10 s to
    start the viewer's interpreter and its web stack)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return httpx.get(url)
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"the viewer did not listen at {url}"
            time.sleep(0.1)


def test_a_non_loopback_host_warns_and_needs_the_token_on_every_page(runs: Path) -> None:
    port = _free_port(socket.AF_INET, "127.0.0.1")
    process = _viewer(runs, "0.0.0.0", port)
    try:
        assert process.stdout is not None
        warning, serving = process.stdout.readline(), process.stdout.readline()
        assert "WARNING: serving on 0.0.0.0, reachable from other machines" in warning
        assert f"at http://0.0.0.0:{port}/?token=" in serving
        token = serving.split("?token=")[1].split()[0]
        base = f"http://127.0.0.1:{port}"
        refused = _first_answer(base + "/")
        assert refused.status_code == 403 and "needs its token" in refused.text
        assert httpx.get(f"{base}/test/{TEST}").status_code == 403
        with httpx.Client(base_url=base) as client:
            first = client.get(f"/?token={token}")
            assert first.status_code == 303 and first.headers["location"] == "/"
            assert "HttpOnly" in first.headers["set-cookie"] and "SameSite=Strict" in first.headers["set-cookie"]
            assert client.get("/").status_code == 200 and client.get(f"/test/{TEST}").status_code == 200
        assert httpx.get(f"{base}/?token=wrong").status_code == 403
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(10)



def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _ipv6_loopback(), reason="this machine has no IPv6 loopback")
def test_a_viewer_bound_to_the_ipv6_loopback_answers_its_own_bracketed_host(runs: Path) -> None:
    """`--host ::1`: the browser's Host header is `[::1]:PORT`, which the host check must read as `[::1]` (before,
    Starlette's check cut it at its first colon, so every page of such a viewer was a 400)."""
    port = _free_port(socket.AF_INET6, "::1")
    process = _viewer(runs, "::1", port)
    base = f"http://[::1]:{port}"
    try:
        page = _first_answer(base + "/")
        assert page.status_code == 200 and "trialrun" in page.text, page.text[:200]  # loopback: no token
        assert httpx.get(f"{base}/test/{TEST}").status_code == 200
        assert httpx.get(base + "/", headers={"host": f"[::2]:{port}"}).status_code == 400
        assert httpx.get(base + "/", headers={"host": "evil.example"}).status_code == 400
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(10)


@pytest.mark.parametrize(("header", "host"), [
    ("127.0.0.1:8765", "127.0.0.1"), ("localhost", "localhost"), ("LocalHost:80", "localhost"),
    ("[::1]:8765", "[::1]"), ("[::1]", "[::1]"), ("[::ffff:127.0.0.1]:1", "[::ffff:127.0.0.1]"),
    ("", None), ("::1", None), ("[::1]x", None), ("a:b:c", None), ("user@evil.example", None),
    ("evil.example/x", None), ("127.0.0.1:99999999", None),
])
def test_the_host_a_host_header_names(header: str, host: str | None) -> None:
    from trialrun.view import _host_of

    assert _host_of(header) == host

def test_unknown_pages_and_a_diff_of_an_unknown_test_are_a_styled_404_linking_home(runs: Path) -> None:
    client = TestClient(create_app(runs), base_url="http://127.0.0.1")
    first, second = stems(runs)[:2]
    for url in ("/no/such/page", f"/diff?test=no-such-test&a={first}&b={second}", "/run/results_1"):
        page = client.get(url)
        assert page.status_code == 404, url
        assert '<a href="/" id="home-link">' in page.text and 'id="search-q"' in page.text
        assert "<style>" in page.text
    assert client.get(f"/diff?test={TEST}&a={first}&b={second}").status_code == 200


def test_the_cli_grade_writes_the_audit_the_form_writes_and_neither_grades_a_live_run(runs: Path,
                                                                                     tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "eval"
    shutil.copytree(runs, folder, symlinks=True)
    stem = stems(folder)[-1]
    result = CliRunner().invoke(main, ["grade", stem, TEST, "0.25", "--results-dir", str(folder),
                                       "--comment", "terse but right"])
    assert result.exit_code == 0, result.output
    data = json.loads((folder / f"{stem}.json").read_text())
    audit = next(v["details"]["hand_grade"] for c in data["cases"] if c["name"] == TEST
                 for v in c["trials"][0]["verdicts"] if v.get("kind") == "score")
    assert audit["via"] == "cli" and audit["quality"] == 0.25 and audit["comment"] == "terse but right"
    assert audit["by"] and audit["at"] and "previous" in audit
    # the run is still being written (its journal locked): refused, by the CLI and by the form
    import fcntl
    import os

    journal = folder / f"{stem}.jsonl"
    journal.write_text("", encoding="utf-8")
    fd = os.open(journal, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        refused = CliRunner().invoke(main, ["grade", stem, TEST, "0.5", "--results-dir", str(folder)])
        assert refused.exit_code == 2 and "still in progress" in refused.output
        app = create_app(folder, token="t0ken")
        client = TestClient(app, base_url="http://127.0.0.1")
        posted = client.post("/grade", data={"token": "t0ken", "run": stem, "test": TEST, "quality": "0.5",
                                             "back": "/"}, follow_redirects=False)
        assert posted.status_code == 409 and "still in progress" in posted.text
    finally:
        os.close(fd)
    assert json.loads((folder / f"{stem}.json").read_text()) == data


def test_a_grade_form_with_markup_in_every_field_echoes_none_and_redirects_only_home(runs: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "eval"
    shutil.copytree(runs, folder, symlinks=True)
    before = {p.name: p.read_bytes() for p in folder.glob("results_*.json")}
    client = TestClient(create_app(folder, token="t0ken"), base_url="http://127.0.0.1")
    evil = '"><img src=x onerror=alert(1)>'
    valid = {"token": "t0ken", "run": stems(folder)[-1], "test": TEST, "quality": "0.25", "comment": "", "back": "/"}
    for field in ("run", "test", "quality", "back", "comment"):
        posted = client.post("/grade", data={**valid, field: evil}, follow_redirects=False)
        assert posted.status_code < 500 and "<img" not in posted.text, field
        location = posted.headers.get("location", "")
        assert "<" not in location and '"' not in location and not location.startswith("//"), (field, location)
        if field == "back":
            assert posted.status_code == 303 and location == "/#grade"
    for back in ("//elsewhere.invalid/", "https://elsewhere.invalid/", "/x\r\nset-cookie: a=b"):
        posted = client.post("/grade", data={**valid, "back": back}, follow_redirects=False)
        assert posted.headers["location"] == "/#grade", back
    assert {p.name: p.read_bytes() for p in folder.glob("results_*.json")} != before  # the valid ones did grade


def test_the_override_form_with_markup_in_every_field_echoes_none_and_needs_a_reason(runs: Path, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "eval"
    shutil.copytree(runs, folder, symlinks=True)
    stem = stems(folder)[-1]
    before = (folder / f"{stem}.json").read_bytes()
    client = TestClient(create_app(folder, token="t0ken"), base_url="http://127.0.0.1")
    evil = '"><img src=x onerror=alert(1)>'
    valid = {"token": "t0ken", "run": stem, "test": TEST, "trial": "1", "grader": "rubric", "verdict": "fail",
             "reason": "", "back": "/"}
    for field in ("run", "test", "trial", "grader", "verdict", "reason", "back"):
        posted = client.post("/override", data={**valid, field: evil}, follow_redirects=False)
        assert posted.status_code < 500 and "<img" not in posted.text, field
        assert not posted.headers.get("location", "").startswith("//"), field
    assert (folder / f"{stem}.json").read_bytes() != before  # the one with a reason (the markup one) was written
    page = client.get(f"/trial/{stem}?test={TEST}&trial=1").text
    assert "overridden by hand to FAIL" in page and "<img src=x" not in page  # shown, escaped
    refused = client.post("/override", data=valid, follow_redirects=False)  # no reason
    assert refused.status_code == 409 and "needs a reason" in refused.text
    stray = client.post("/override", data={**valid, "token": "nope", "reason": "x"}, follow_redirects=False)
    assert stray.status_code == 403
