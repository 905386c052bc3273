"""The bubblewrap sandbox: each escape works without it and fails with it, and the model endpoint stays reachable.

These run in CI, where .ci/run installs bubblewrap: there a missing or unusable bwrap FAILS (never skips).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import textwrap
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.agents import sandbox as sandboxes



@pytest.fixture(scope="module", autouse=True)
def _bwrap_usable() -> None:
    problem = sandboxes.bwrap_problem()
    if problem is not None:
        message = f"the sandbox tests need bubblewrap: {problem}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def _run(argv: list[str], sandbox: str, **kwargs: object) -> tr.Run:
    agent = tr.ProcessAgent(argv, sandbox=sandbox, **kwargs)  # type: ignore[arg-type]
    case = tr.Case(name="escape", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("Traceback")])
    ctx = tr.TrialContext(case, 1)
    try:
        run = agent.run("p", ctx, model=tr.ScriptedModel([tr.reply("the model answered")]))
        run.output = (run.output, sorted(p.name for p in ctx.workdir.iterdir()))
        return run
    finally:
        ctx.close()


def _sh(command: str, sandbox: str, **kwargs: object) -> tr.Run:
    return _run(["/bin/sh", "-c", command], sandbox, **kwargs)


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_writing_outside_the_workdir(sandbox: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    beside = Path(__file__).parent / f".escape-{uuid.uuid4().hex}"  # not under /tmp: the system itself
    try:
        run = _sh(f"echo inside > in.txt; echo x > {outside}; echo x > {beside}; true", sandbox)
        assert run.output[1] == ["in.txt"]  # the workdir is writable either way
        assert outside.exists() is (sandbox == "none")
        assert beside.exists() is (sandbox == "none")
    finally:
        beside.unlink(missing_ok=True)


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_reading_the_users_ssh_keys(sandbox: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL")
    monkeypatch.setenv("HOME", str(home))
    run = _sh(f"cat {home}/.ssh/id_ed25519 ~/.ssh/id_ed25519; true", sandbox)
    assert ("PRIVATE-KEY-MATERIAL" in run.output[0]) is (sandbox == "none")


def _sleepers(tag: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if tag.encode() in Path("/proc", entry, "cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_setsid_child_does_not_survive_the_kill(sandbox: str) -> None:
    tag = f"3000.{uuid.uuid4().int % 10**9}"
    try:
        run = _sh(f"setsid sleep {tag} >/dev/null 2>&1 < /dev/null & sleep 30", sandbox, timeout_s=1.5)
        assert run.status == "error" and "timed out" in (run.error or "")
        time.sleep(0.3)
        assert not _sleepers(tag)  # a new session escapes neither the keeper (a child subreaper) nor the PID ns
    finally:
        for pid in _sleepers(tag):
            os.kill(pid, 9)


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_reading_the_parents_secrets(sandbox: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "token-parent-secret")
    # a process agent: the key variables hold a dummy key; any other secret is inherited without a sandbox
    run = _sh("printenv MY_SERVICE_TOKEN OPENAI_API_KEY; true", sandbox)
    assert "sk-parent-secret" not in run.output[0]
    assert ("token-parent-secret" in run.output[0]) is (sandbox == "none")
    # the reference agent's run_command starts from an environment allow-list, sandbox or not
    [run_command] = [t for t in tr.shell_tools(tmp_path, sandbox=sandbox) if t.name == "run_command"]
    printed = run_command.run_sync({"command": "printenv OPENAI_API_KEY MY_SERVICE_TOKEN; true"})
    assert "sk-parent-secret" not in str(printed) and "token-parent-secret" not in str(printed)


@pytest.fixture
def other_port() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    def serve() -> None:
        try:
            for _ in range(8):
                server.accept()[0].close()
        except OSError:  # closed at the end of the test
            pass

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


REACH = textwrap.dedent("""
    import json, os, socket, sys, urllib.request
    seen = {}
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=3).close()
        seen["other"] = "connected"
    except OSError as exc:
        seen["other"] = type(exc).__name__
    import openai
    reply = openai.OpenAI().chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    seen["model"] = reply.choices[0].message.content
    print(json.dumps(seen))
""")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_reaching_another_loopback_port_but_still_the_model(sandbox: str, other_port: int) -> None:
    run = _run([sys.executable, "-c", REACH, str(other_port)], sandbox)
    assert run.exit_code == 0, run.stderr
    seen = json.loads(run.output[0])
    assert seen["model"] == "the model answered"  # the endpoint is reachable in the sandbox, at the same URL
    assert (seen["other"] == "connected") is (sandbox == "none")
    # the reference agent's commands have no network at all in the sandbox
    code = f"import socket; socket.create_connection(('127.0.0.1', {other_port}), timeout=3); print('connected')"
    [run_command] = [t for t in tr.shell_tools(Path(os.getcwd()), sandbox=sandbox) if t.name == "run_command"]
    printed = str(run_command.run_sync({"command": f"{sys.executable} -c \"{code}\" 2>&1; true"}))
    assert ("connected" in printed.splitlines()[-1]) is (sandbox == "none")


def test_auto_without_bubblewrap_says_so_once_and_runs_unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandboxes, "bwrap_problem", lambda program="bwrap": "bubblewrap is not installed (test)")
    monkeypatch.setattr(sandboxes, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = sandboxes.resolve_sandbox("auto")
        second = sandboxes.resolve_sandbox("auto")
    assert not first.active and not second.active
    assert first.describe() == "none (auto: bubblewrap is not installed (test))"
    assert [str(w.message) for w in caught] == ["sandbox 'auto': running WITHOUT a sandbox: bubblewrap is not installed (test)"]
    with pytest.raises(ValueError, match="sandbox 'bwrap': bubblewrap is not installed"):
        sandboxes.resolve_sandbox("bwrap")


def test_auto_uses_bwrap_where_it_works() -> None:
    chosen = sandboxes.resolve_sandbox("auto")
    assert chosen.active and chosen.describe() == "bwrap (auto)"


def test_the_sandbox_is_in_config_snapshot_and_a_bad_value_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from trialrun.cli import main

    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps({"tests": [
        {"id": "t", "prompt": "hi", "expected_tools": ["run_command"], "max_turns": 3, "success_criteria": "done"}]}))
    (tmp_path / "model.yaml").write_text("t:\n  - tool_call: {name: run_command, arguments: {command: 'echo hi'}}\n"
                                         "  - reply: done\n")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trialrun.toml").write_text('sandbox = "bwrap"\n')
    result = CliRunner().invoke(main, ["run", "all"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    saved = json.loads((tmp_path / "state" / "eval" / "latest.json").read_text())
    assert saved["config_snapshot"]["sandbox"] == "bwrap"
    (tmp_path / "trialrun.toml").write_text('sandbox = "docker"\n')
    result = CliRunner().invoke(main, ["run", "all"], catch_exceptions=False)
    assert result.exit_code == 2 and "trialrun.toml: sandbox: must be one of none, bwrap, auto" in result.output
