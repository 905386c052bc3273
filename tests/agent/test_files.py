"""read_file, write_file and list_dir: bounded reads and listings, and only regular files with a single link."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

import trialrun as tr


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def _tools(root: Path, max_output: int = 200) -> dict[str, tr.Tool]:
    return {t.name: t for t in tr.shell_tools(root, max_output=max_output)}


def _within(seconds: float, call: Callable[[], object]) -> object:
    """Run `call` on a daemon thread; fail (instead of hanging the suite) if it blocks."""
    outcome: list[object] = []

    def work() -> None:
        try:
            outcome.append(("ok", call()))
        except BaseException as exc:  # noqa: BLE001
            outcome.append(("error", exc))

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"the call blocked for more than {seconds}s"
    kind, value = outcome[0]
    if kind == "error":
        raise value  # type: ignore[misc]
    return value


def test_read_file_reads_at_most_about_max_output_bytes(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {n:06d}\n" for n in range(100_000)))  # 1.2 MB
    out = _tools(root, max_output=400)["read_file"].run_sync({"path": "big.txt"})
    assert out.startswith("line 000000\nline 000001\n")
    assert "\n[... 1199600 bytes cut; the file is 1200000 bytes ...]\n" in out
    assert out.endswith("line 099999\n") and len(out) < 500


def test_read_file_cut_never_splits_a_character(root: Path) -> None:
    (root / "euros.txt").write_text("€" * 1000)  # 3 bytes each: cuts at 75 and 25 bytes land mid-character
    out = _tools(root, max_output=100)["read_file"].run_sync({"path": "euros.txt"})
    head, _, tail = out.partition("\n[... ")
    assert set(head) == {"€"} and len(head) == 25
    assert tail.endswith("\n" + "€" * 8) and "\ufffd" not in out


def test_a_small_file_is_read_whole(root: Path) -> None:
    (root / "notes.txt").write_text("é" * 100)  # 200 bytes, within max_output
    assert _tools(root, max_output=200)["read_file"].run_sync({"path": "notes.txt"}) == "é" * 100


def test_list_dir_is_capped_with_a_note(root: Path) -> None:
    for n in range(1500):
        (root / f"file-{n:05d}.txt").touch()
    out = _tools(root, max_output=300)["list_dir"].run_sync({})
    assert out.startswith("file-00000.txt\nfile-00001.txt\n")
    assert "\n[... 22199 characters cut; output was 22499 characters ...]\n" in out
    assert out.endswith("file-01499.txt") and len(out) < 400


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_a_fifo_is_refused_without_being_opened(root: Path, tool: str) -> None:
    os.mkfifo(root / "pipe")
    arguments = {"path": "pipe"} if tool == "read_file" else {"path": "pipe", "content": "x"}
    with pytest.raises(tr.ToolError, match=r"^pipe is not a regular file; refusing to (read|write) it$"):
        _within(3, lambda: _tools(root)[tool].run_sync(arguments))


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_a_socket_is_refused(root: Path, tool: str) -> None:
    import socket

    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(root / "sock"))
        arguments = {"path": "sock"} if tool == "read_file" else {"path": "sock", "content": "x"}
        with pytest.raises(tr.ToolError, match=r"^sock is not a regular file"):
            _within(3, lambda: _tools(root)[tool].run_sync(arguments))
    finally:
        server.close()


@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_hard_links_are_refused(root: Path, tmp_path: Path, tool: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    os.link(outside, root / "linked.txt")
    arguments = {"path": "linked.txt"} if tool == "read_file" else {"path": "linked.txt", "content": "pwned"}
    with pytest.raises(tr.ToolError, match=r"^linked.txt has 2 hard links: its content is shared with another path"):
        _tools(root)[tool].run_sync(arguments)
    assert outside.read_text() == "secret"  # nothing wrote through


def test_directories_get_their_own_message(root: Path) -> None:
    (root / "sub").mkdir()
    tools = _tools(root)
    with pytest.raises(tr.ToolError, match="^sub is a directory; use list_dir"):
        tools["read_file"].run_sync({"path": "sub"})
    with pytest.raises(tr.ToolError, match="^sub is a directory$"):
        tools["write_file"].run_sync({"path": "sub", "content": "x"})
    (root / "a.txt").write_text("x")
    with pytest.raises(tr.ToolError, match="^a.txt is not a folder$"):
        tools["list_dir"].run_sync({"path": "a.txt"})


def test_write_file_replaces_content_and_creates_folders(root: Path) -> None:
    tools = _tools(root)
    (root / "a.txt").write_text("a much longer old content")
    assert tools["write_file"].run_sync({"path": "a.txt", "content": "new"}) == "wrote 3 characters to a.txt"
    assert (root / "a.txt").read_text() == "new"
    tools["write_file"].run_sync({"path": "deep/er/b.txt", "content": "ü"})
    assert (root / "deep" / "er" / "b.txt").read_text(encoding="utf-8") == "ü"
