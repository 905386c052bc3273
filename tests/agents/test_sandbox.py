"""The bubblewrap sandbox: each escape works without it and fails with it, and the model endpoint stays reachable.

These run in CI, where .ci/run installs bubblewrap: there a missing or unusable bwrap FAILS (never skips).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

import trialrun as tr
from trialrun._contain import handoff as _handoff, sandbox as sandboxes


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


# -- the relay: the endpoint reached inside the sandbox's own network namespace ------------------------------

@pytest.fixture(params=["namespace", "relay"])
def handoff(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways the endpoint gets into the sandbox: a listening socket made in its network namespace by
    trialrun's namespace helper (the usual way), and the fallback where a forwarder inside makes it and hands
    it out (where the helper cannot enter the namespace: a setuid bubblewrap). The test checks that its way was
    the one taken (a silent fallback would pass every test of the first)."""
    if request.param == "relay":
        monkeypatch.setattr(_handoff, "helper_problem", "forced by the test")
    monkeypatch.setattr(_handoff, "used", type(_handoff.used)())
    yield str(request.param)
    other = "relay" if request.param == "namespace" else "namespace"
    if _handoff.used:  # (a test in a subprocess counts there)
        assert _handoff.used[str(request.param)] and not _handoff.used[other], (_handoff.used, _handoff.last_fallback)


def test_the_model_is_reached_both_ways(handoff: str, other_port: int) -> None:
    run = _run([sys.executable, "-c", REACH, str(other_port)], "bwrap")
    assert run.exit_code == 0, run.stderr
    seen = json.loads(run.output[0])
    assert seen == {"model": "the model answered", "other": "ConnectionRefusedError"}


def test_concurrent_sandboxed_trials_each_reach_their_own_model(handoff: str) -> None:
    ask = ("import openai; print(openai.OpenAI().chat.completions.create(model='m', "
           "messages=[{'role': 'user', 'content': 'hi'}]).choices[0].message.content)")
    agent = tr.ProcessAgent([sys.executable, "-c", ask], sandbox="bwrap")
    cases = [tr.Case(name=f"c{i}", invoke=lambda ctx, i=i: agent("p", ctx, model=ctx.scripted([tr.reply(f"answer {i}")])),
                     expect_outcome=[tr.expect.equals(f"answer {i}")]) for i in range(4)]
    report = tr.evaluate(cases, trials=2, concurrency=4)
    assert [c.passed for c in report.cases] == [True] * 4, [t.error for c in report.cases for t in c.trials]


def _handoff_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("trialrun-endpoint-*"))


@pytest.mark.parametrize("program", ["/nonexistent/agent-program", "bwrap-fails"])
def test_a_program_that_cannot_start_fails_the_trial_at_once_and_leaves_nothing(handoff: str, program: str,
                                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                                 tmp_path: Path) -> None:
    # a temporary folder of this test's own: other xdist workers' trials make hand-off folders in /tmp meanwhile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if program == "bwrap-fails":  # bubblewrap itself stops before the shell that waits for the endpoint starts
        monkeypatch.setattr(sandboxes.Bwrap, "arguments", lambda self, *a: [self.program, "--bind", "/nonexistent-x", "/x"])
    before = _handoff_folders()
    started = time.perf_counter()
    run = _run([program], "bwrap")
    assert run.status == "error" and run.exit_code != 0
    assert time.perf_counter() - started < 30
    for _ in range(50):  # the handoff thread lets go of the trial's folder (FIFOs, lock, socket) at its end
        if not _handoff_folders() - before:
            break
        time.sleep(0.02)
    assert not _handoff_folders() - before
    assert len([t for t in threading.enumerate() if t.name.startswith("trialrun-sandbox")]) <= 1  # one, for all


DOTDOT = textwrap.dedent("""
    import json, sys
    import trialrun as tr
    from trialrun._contain import handoff as _handoff
    if sys.argv[1] == "relay":
        _handoff.helper_problem = "forced by the test"
    ask = ("import openai; print(openai.OpenAI().chat.completions.create(model='m', "
           "messages=[{'role': 'user', 'content': 'hi'}]).choices[0].message.content)")
    agent = tr.ProcessAgent([sys.executable, "-c", ask], sandbox="bwrap")
    ctx = tr.TrialContext(tr.Case(name="dotdot", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("x")]), 1)
    run = agent.run("p", ctx, model=tr.ScriptedModel([tr.reply("reached")]))
    ctx.close()
    print(json.dumps({"executable": sys.executable, "status": run.status, "output": run.output, "error": run.error,
                      "ways": dict(_handoff.used)}))
""")


def test_python_started_through_a_path_with_dotdot(handoff: str, tmp_path: Path) -> None:
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    relative = os.path.relpath(sys.executable, here)  # ../../../../work/.../bin/python: through /tmp, hidden inside
    assert relative.startswith("..")
    src = str(Path(tr.__file__).resolve().parents[1])
    done = subprocess.run([relative, "-c", DOTDOT, handoff], cwd=here, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": src})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.splitlines()[-1])
    assert ".." in seen["executable"]
    # before: every trial failed: the inner forwarder was started as /tmp/.../a/b/../../.../python
    assert (seen["status"], seen["output"]) == ("completed", "reached"), seen
    assert seen["ways"] == {handoff: 1}, seen



def test_a_console_script_in_a_venv_under_a_hidden_place_runs_in_the_sandbox(tmp_path: Path) -> None:
    """A PyPI agent's program is a console script whose `#!` names its venv's python, in the user's cache (hidden
    inside, as /tmp is here): its venv, its site-packages and the Python the venv was made from are mounted back.
    Before, mini-swe-agent and Kimi CLI exited 127 in bwrap at once (`.../venvs/kimi-cli/bin/kimi: not found`)."""
    venv = tmp_path / "cache" / "venvs" / "agent"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3.*/site-packages"))
    (site / "agentlib.py").write_text("WHERE = 'from the venv'\n")
    script = venv / "bin" / "agent"
    script.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys, agentlib\n"
                      "open('marker.txt', 'w').write(agentlib.WHERE)\nprint(sys.prefix)\n")
    script.chmod(0o755)
    linked = tmp_path / "cache" / "bin" / "agent"  # as .ci/install-agents links it into the folder on PATH
    linked.parent.mkdir()
    linked.symlink_to(script)
    for sandbox in ("none", "bwrap"):
        run = _run([str(linked)], sandbox)
        assert run.exit_code == 0, (sandbox, run.stderr)
        output, files = run.output
        assert output == str(venv) and files == ["marker.txt"], (sandbox, run.output, run.stderr)

# -- what is mounted: a fixed list, never what a prompt or an argument names ---------------------------------

def test_a_prompt_naming_a_file_in_the_home_does_not_mount_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    secret = home / ".ssh" / "id_ed25519"
    secret.write_text("PRIVATE-KEY-MATERIAL")
    monkeypatch.setenv("HOME", str(home))
    for argv in (["/bin/cat"], ["/bin/sh", "-c", 'cat "$1"; true', "sh", "{prompt}"], ["/bin/cat", "--", "{prompt}"]):
        agent = tr.ProcessAgent(argv, sandbox="bwrap")
        ctx = tr.TrialContext(tr.Case(name="named", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("x")]), 1)
        try:
            run = agent.run(str(secret), ctx, model=tr.ScriptedModel([tr.reply("x")]))
        finally:
            ctx.close()
        # before: wrap mounted every absolute file path in argv (the prompt too) back into the sandbox
        assert "PRIVATE-KEY-MATERIAL" not in str(run.output) + run.stderr, argv


def test_a_file_the_configured_command_names_is_mounted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    script = home / "agent.sh"
    script.write_text("echo the agent script ran\n")
    monkeypatch.setenv("HOME", str(home))
    run = _run(["/bin/sh", str(script)], "bwrap")
    assert run.output[0] == "the agent script ran", run.stderr
    mounted = sandboxes.Bwrap().for_command(["/bin/sh", str(script), "{prompt}"]).mounts()
    assert script in mounted and not any("{" in str(p) for p in mounted)


# -- host sockets: none is reachable from inside but the endpoint's own --------------------------------------

def _socket_places() -> dict[str, str]:
    tag = uuid.uuid4().hex[:10]
    return {
        "/run": f"/run/trialrun-{tag}.sock",
        "/var/run": f"/var/run/trialrun-{tag}.sock",
        "/run/user": f"/run/user/{os.getuid()}/trialrun-{tag}.sock",
        "/var/tmp": f"/var/tmp/trialrun-{tag}.sock",
        "/dev/shm": f"/dev/shm/trialrun-{tag}.sock",
        "/var/lib": f"/var/lib/trialrun-{tag}/db.sock",
        "/tmp": f"/tmp/trialrun-{tag}.sock",
        "/srv": f"/srv/trialrun-{tag}.sock",
        "the home": f"{Path.home()}/.trialrun-{tag}.sock",
        "elsewhere (beside the tests)": str(Path(__file__).parent / f".trialrun-{tag}.sock"),
    }


@pytest.fixture(params=list(_socket_places()))
def host_socket(request: pytest.FixtureRequest) -> Iterator[str]:
    """A real Unix socket server listening on the host at one class of path (a database's socket, say)."""
    path = Path(_socket_places()[request.param])
    made = [p for p in reversed(path.parents) if not p.exists()]
    try:
        for folder in made:
            folder.mkdir()
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(path))
    except OSError as exc:
        pytest.skip(f"cannot make a socket at {path} here: {exc}")
    server.listen(8)

    def serve() -> None:
        try:
            while True:
                client, _ = server.accept()
                client.sendall(b"host socket")
                client.close()
        except OSError:
            pass

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield str(path)
    finally:
        server.close()
        path.unlink(missing_ok=True)
        for folder in reversed(made):
            folder.rmdir()


CONNECT = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1]); print(s.recv(100).decode())\n"
           "except OSError as exc:\n    print(type(exc).__name__)\n")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_a_host_socket_is_unreachable_from_inside(sandbox: str, host_socket: str) -> None:
    run = _run([sys.executable, "-c", CONNECT, host_socket], sandbox)
    assert (run.output[0] == "host socket") is (sandbox == "none"), (run.output, run.stderr)
    [run_command] = [t for t in tr.shell_tools(Path(os.getcwd()), sandbox=sandbox) if t.name == "run_command"]
    printed = str(run_command.run_sync({"command": f"{sys.executable} -c '{CONNECT}' {host_socket}"}))
    assert ("host socket" in printed) is (sandbox == "none"), printed


# -- output = "file:...": read from inside the workdir with the shell tools' confinement ---------------------

def _output_run(setup: str, sandbox: str, tmp_path: Path) -> tr.Run:
    return _run(["/bin/sh", "-c", setup], sandbox, output="file:out.txt")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
def test_an_output_file_linked_out_of_the_workdir_is_a_trial_error(sandbox: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE-KEY-MATERIAL")
    monkeypatch.setenv("HOME", str(home))
    run = _output_run(f"ln -s {home}/.ssh/id_ed25519 out.txt", sandbox, tmp_path)
    # before: trialrun, outside the sandbox, followed the link and put the key in the result
    assert "PRIVATE-KEY-MATERIAL" not in str(run.output)
    assert run.status == "error" and "out.txt" in (run.error or "") and "symlink" in (run.error or ""), run.error
    inside = _output_run("echo kept > real.txt; ln -s real.txt out.txt", sandbox, tmp_path)  # stays inside: followed
    assert (inside.status, inside.output[0]) == ("completed", "kept\n"), inside.error


ODD_OUTPUT = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    import trialrun as tr
    agent = tr.ProcessAgent(["/bin/sh", "-c", sys.argv[1]], sandbox=sys.argv[2], output="file:out.txt")
    ctx = tr.TrialContext(tr.Case(name="odd", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("x")]), 1)
    run = agent.run("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))
    ctx.close()
    print(json.dumps({"status": run.status, "error": run.error, "output": str(run.output)[:200],
                      "length": len(str(run.output))}))
""")


@pytest.mark.parametrize("sandbox", ["none", "bwrap"])
@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "big"])
def test_an_output_file_that_is_a_fifo_a_device_or_huge(sandbox: str, what: str) -> None:
    setup = {"fifo": "mkfifo out.txt", "/dev/zero": "ln -s /dev/zero out.txt",
             "big": "head -c 30000000 /dev/zero | tr '\\0' a > out.txt"}[what]
    src = str(Path(tr.__file__).resolve().parents[1])
    try:
        done = subprocess.run([sys.executable, "-c", ODD_OUTPUT, setup, sandbox], capture_output=True, text=True,
                              timeout=60, env={**os.environ, "PYTHONPATH": src})
    except subprocess.TimeoutExpired:  # before: reading a FIFO waited forever
        pytest.fail(f"reading the output {what} hung")
    assert done.returncode == 0, done.stderr[-2000:]  # before: /dev/zero was read until MemoryError
    seen = json.loads(done.stdout.splitlines()[-1])
    if what == "big":
        assert seen["status"] == "completed" and seen["output"].startswith("a" * 100)
        assert seen["length"] < 1_100_000, seen["length"]  # bounded: head and tail around a note of what was cut
        return
    assert seen["status"] == "error" and "out.txt" in seen["error"], seen
    assert ("not a regular file" if what == "fifo" else "outside the workspace") in seen["error"], seen


UNPRIVILEGED = textwrap.dedent("""
    import importlib.util, json, os, socket, subprocess, sys, threading, types
    # trialrun's package without its __init__ (which needs pydantic, httpx): the handoff and the one module it
    # imports (_per_process) are standard library only
    agents = os.path.dirname(sys.argv[1])
    for name, folder in (("trialrun", os.path.dirname(agents)), ("trialrun.agents", agents)):
        sys.modules[name] = types.ModuleType(name)
        sys.modules[name].__path__ = [folder]
    spec = importlib.util.spec_from_file_location("trialrun._contain.handoff", sys.argv[1])
    handoffs = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = handoffs
    spec.loader.exec_module(handoffs)

    class Endpoint:  # what the handoff needs of one: add_listener; this one answers one connection
        def add_listener(self, listener):
            def serve():
                connection, _ = listener.accept()
                connection.sendall(b"from the endpoint")
                connection.close()
            threading.Thread(target=serve, daemon=True).start()

    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    handoff = handoffs.Handoff(Endpoint(), "127.0.0.1", port)
    agent = [sys.executable, "-c", "import socket; print(socket.create_connection(('127.0.0.1', %d)).recv(99).decode())" % port]
    argv = ["bwrap", "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp", *handoff.bwrap_options(), "--", *handoffs.inner_command(f"127.0.0.1:{port}", agent)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    handoff.close()
    print(json.dumps({"uid": os.getuid(), "out": done.stdout.strip(), "err": done.stderr[-500:],
                      "ways": dict(handoffs.used), "fallback": handoffs.last_fallback}))
""")


def test_the_namespace_handoff_works_for_an_unprivileged_user() -> None:
    """As root (here) the helper could enter any namespace; as a plain user it must first enter the user namespace
    that owns the sandbox's network namespace. CI runs every test above unprivileged; this runs that path here too,
    as `nobody`, with the system's Python (the handoff module is standard library only)."""
    system_python = shutil.which("python3", path="/usr/bin:/bin")
    if os.getuid() != 0 or shutil.which("setpriv") is None or system_python is None:
        pytest.skip("needs root (to become nobody), setpriv and a system python3; unprivileged runs test this above")
    # nobody reads the package from a copy in a folder anyone may enter: the checkout itself may sit under one only
    # its owner may (a clone into `mktemp -d`, a home folder of mode 0700), and then the import was refused
    package = Path(_handoff.__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="trialrun-handoff-") as folder:
        os.chmod(folder, 0o755)
        copy = Path(folder) / "trialrun"
        shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
        for path in [copy, *copy.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        module = str(copy / Path(_handoff.__file__).resolve().relative_to(package))
        done = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", system_python, "-I",
                               "-c", UNPRIVILEGED, module], capture_output=True, text=True, timeout=120, cwd="/")
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert (seen["uid"], seen["out"], seen["ways"]) == (65534, "from the endpoint", {"namespace": 1}), seen
