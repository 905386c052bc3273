"""The live processes of this machine, read from /proc: the truth the containment tests check trialrun against."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

__all__ = ["holding", "wait_for_port"]


def holding(text: str) -> list[str]:
    """Every live (not zombie) process whose argv holds `text`, as "pid: argv"."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path("/proc", entry, "cmdline").read_bytes()
            state = Path("/proc", entry, "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if text.encode() in argv and state != "Z":
            found.append(f"{entry}: " + argv.replace(b"\0", b" ").decode(errors="replace"))
    return found


def wait_for_port(port: int, seconds: float = 30.0) -> None:
    """Until something listens on 127.0.0.1:`port` (a server process this test started), or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
