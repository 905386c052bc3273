"""Confinement of the shell tools (issue 11): the parent-folder swap race, names that forge list entries, symlinks
in list_dir, what run_command inherits, and commands whose children leave with `setsid`.

The race: a separate process swaps the folder `d` of the workspace for a symlink to a folder outside it, and back,
as fast as it can, while read_file / write_file / list_dir run on `d/...` many times. A control run of the check-
then-use code the tools had before (resolve, check under root, open by path) escapes under the same swapper, so the
swapper is fast enough to catch a gap; the tools, through openat2 and through the Python walk, never escape.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import trialrun as tr
from trialrun._contain.scope import MARKER
from trialrun.agent import _commands, _confine

TRIES = 1000  # per tool and per resolver; quoted in docs/sandbox.md


def run_tool(tool: tr.Tool, **arguments: object) -> str:
    return tool.run_sync(arguments)


@pytest.fixture
def arena(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """root/d/f.txt inside; outside/f.txt (and outside/only-outside.txt) outside; a process swapping root/d."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    (root / "d" / "f.txt").write_text("inside")
    (outside / "f.txt").write_text("OUTSIDE")
    (outside / "only-outside.txt").write_text("x")
    (root / "d-link").symlink_to(outside)
    # Swap d and d-link atomically (renameat2 RENAME_EXCHANGE: each state half the time), else by renames.
    script = textwrap.dedent(f"""
        import ctypes, os
        d, link, real, out = {str(root / 'd')!r}, {str(root / 'd-link')!r}, {str(root / 'd-real')!r}, {str(outside)!r}
        try:
            exchange = ctypes.CDLL(None, use_errno=True).renameat2
            if exchange(-100, d.encode(), -100, link.encode(), 2) != 0 or exchange(-100, d.encode(), -100, link.encode(), 2) != 0:
                raise OSError
        except (AttributeError, OSError):
            exchange = None
            os.unlink(link)
        print("ready", flush=True)
        while True:
            if exchange is not None:
                exchange(-100, d.encode(), -100, link.encode(), 2)
                continue
            try:
                os.rename(d, real); os.symlink(out, d); os.unlink(d); os.rename(real, d)
            except OSError:
                pass
    """)
    swapper = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert swapper.stdout is not None and swapper.stdout.readline().strip() == "ready"
        yield {"root": root, "outside": outside}
    finally:
        swapper.kill()
        swapper.wait()


def _naive_read(root: Path, path: str) -> str:
    """The check-then-use code read_file had before: resolve, check it is under the root, then open the path."""
    target = (root / path).resolve()
    if root not in target.parents:
        raise PermissionError(path)
    with open(root / path, encoding="utf-8") as handle:
        return handle.read()


def test_the_swapper_catches_a_check_then_use_gap(arena: dict[str, Path]) -> None:
    """The control: the old way escapes under this swapper (else the tests below would prove nothing)."""
    root = arena["root"].resolve()
    escapes = tries = 0
    deadline = time.monotonic() + 20
    while escapes == 0 and time.monotonic() < deadline:
        tries += 1
        try:
            escapes += _naive_read(root, "d/f.txt") == "OUTSIDE"
        except OSError:
            pass
    assert escapes, f"no escape in {tries} tries of the naive check-then-use read"


@pytest.mark.parametrize("resolver", ["openat2", "walk"])
def test_the_parent_folder_swap_race_never_escapes(arena: dict[str, Path], resolver: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    if resolver == "openat2" and not _confine.have_openat2():
        pytest.skip("this kernel has no openat2; the walk is tested below")  # the walk runs everywhere
    monkeypatch.setattr(_confine, "use_openat2", resolver == "openat2")
    root, outside = arena["root"], arena["outside"]
    tools = {t.name: t for t in tr.shell_tools(root, max_output=1000)}
    escapes = {"read_file": 0, "write_file": 0, "list_dir": 0}
    worked = dict.fromkeys(escapes, 0)
    i, deadline = 0, time.monotonic() + 60
    # TRIES rounds at least, and on until each tool also got through between swaps 20 times (a tool that refused
    # everything would pass the escape count trivially).
    while i < TRIES or (min(worked.values()) < 20 and time.monotonic() < deadline):
        i += 1
        for name, arguments in (("read_file", {"path": "d/f.txt"}), ("write_file", {"path": "d/f.txt", "content": f"w{i}"}),
                                ("list_dir", {"path": "d"})):
            if name == "write_file" and i % 50 == 0:
                escapes[name] += (outside / "f.txt").read_text() != "OUTSIDE"
            try:
                result = run_tool(tools[name], **arguments)
            except tr.ToolError:
                continue  # refused mid-swap ("outside the workspace", "no such file"): not an escape
            worked[name] += 1
            if name == "read_file":
                escapes[name] += result == "OUTSIDE"
            elif name == "list_dir":
                escapes[name] += "only-outside.txt" in result
    escapes["write_file"] += (outside / "f.txt").read_text() != "OUTSIDE"
    assert escapes == {"read_file": 0, "write_file": 0, "list_dir": 0}
    assert min(worked.values()) >= 20, worked  # the tools did work between the swaps


def test_list_dir_quotes_a_name_that_would_forge_an_entry(tmp_path: Path) -> None:
    (tmp_path / "evil\nfake.txt").write_text("x")
    (tmp_path / "plain.txt").write_text("x")
    (tmp_path / 'back\\slash').write_text("x")
    listing = run_tool({t.name: t for t in tr.shell_tools(tmp_path)}["list_dir"])
    assert listing.splitlines() == ['"back\\\\slash"', '"evil\\nfake.txt"', "plain.txt"]
    assert "fake.txt" not in listing.splitlines()  # no forged line


def test_list_dir_never_follows_a_symlink(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    (root / "link").symlink_to(outside)
    (root / "sub").mkdir()
    (root / "sub" / "inner").symlink_to("..")  # a relative symlink inside the workspace is not followed either
    tools = {t.name: t for t in tr.shell_tools(root)}
    assert run_tool(tools["list_dir"]) == "link@\nsub/"
    for path in ("link", "sub/inner"):
        with pytest.raises(tr.ToolError, match="is not a folder"):
            run_tool(tools["list_dir"], path=path)
    with pytest.raises(tr.ToolError, match="outside the workspace"):
        run_tool(tools["read_file"], path="link/secret.txt")


def test_symlinks_that_stay_inside_are_followed_by_read_file_and_escapes_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "notes.txt").write_text("hello")
    (tmp_path / "alias").symlink_to("a")
    (tmp_path / "up").symlink_to("a/../..")
    (tmp_path / "abs").symlink_to(tmp_path / "a")  # absolute, even though it points inside: refused, as openat2 does
    tools = {t.name: t for t in tr.shell_tools(tmp_path)}
    for use in (True, False):
        _confine.use_openat2 = use
        try:
            assert run_tool(tools["read_file"], path="alias/notes.txt") == "hello"
            assert run_tool(tools["read_file"], path="a/../a/notes.txt") == "hello"
            for path in ("up/etc/passwd", "abs/notes.txt", "a/../../x"):
                with pytest.raises(tr.ToolError, match="outside the workspace"):
                    run_tool(tools["read_file"], path=path)
        finally:
            _confine.use_openat2 = None


def test_run_command_gets_an_environment_allow_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret-0123456789abcdef")
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/mytool")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    plain = {t.name: t for t in tr.shell_tools(tmp_path)}["run_command"]
    named = {t.name: t for t in tr.shell_tools(tmp_path, pass_env=["MY_TOOL_HOME"])}["run_command"]
    seen = run_tool(plain, command="env")
    names = {line.split("=", 1)[0] for line in seen.splitlines()[1:] if "=" in line}
    assert "sk-parent-secret" not in seen and "OPENAI_API_KEY" not in names and "MY_TOOL_HOME" not in names
    assert {"PATH", "LC_ALL"} <= names
    assert names - {"PWD", "SHLVL", "_", "OLDPWD"} <= set(_commands.COMMAND_ENV) | {"LC_ALL", MARKER}
    assert "MY_TOOL_HOME=/opt/mytool" in run_tool(named, command="env")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def _wait_for_pid(path: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the session scan reads /proc (Linux)")
def test_a_setsid_child_dies_with_its_command_on_timeout(tmp_path: Path) -> None:
    tools = {t.name: t for t in tr.shell_tools(tmp_path, timeout_s=1)}
    command = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' & set -m; (sleep 300 & echo $! > group.pid; wait) & sleep 300"
    with pytest.raises(tr.ToolError, match="timed out"):
        run_tool(tools["run_command"], command=command)
    escaped, other_group = _wait_for_pid(tmp_path / "escaped.pid"), _wait_for_pid(tmp_path / "group.pid")
    assert _gone(escaped), "the setsid child outlived its command"
    assert _gone(other_group), "a child in another process group of the session outlived its command"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="the session scan reads /proc (Linux)")
def test_a_setsid_child_of_a_finished_command_dies_with_the_trial(tmp_path: Path) -> None:
    tools = {t.name: t for t in tr.shell_tools(tmp_path, timeout_s=5)}
    assert run_tool(tools["run_command"], command="setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' >/dev/null 2>&1 &").startswith("exit code: 0")
    escaped = _wait_for_pid(tmp_path / "escaped.pid")
    assert _alive(escaped)  # a background child may outlive its command (a server for later commands)...
    tr.agent.stop_commands(tmp_path)
    assert _gone(escaped)  # ...but not the trial
