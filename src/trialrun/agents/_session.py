"""Processes started in a session of their own, and killing that whole session.

A coding agent starts shells, language servers and background jobs, and some of them start process groups of
their own (a shell running a pipeline with job control), so killing the agent's process group is not enough.
Everything it starts stays in its session unless it calls `setsid` itself, so the kill takes every process whose
session id is the agent's, read from /proc, and repeats until none is left (one may fork while the kill runs).
A process that called `setsid` left the session; only a PID namespace (the bwrap sandbox) catches that one.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["session_members", "kill_session"]


def session_members(sid: int) -> list[int]:
    """The live processes of session `sid` (from /proc; empty where there is no /proc)."""
    members: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return members
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        # fields after the command name (which may hold spaces and parentheses): state ppid pgrp session ...
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 3 and fields[3] == str(sid) and fields[0] != "Z":
            members.append(int(entry))
    return members


def kill_session(sid: int, *, rounds: int = 20) -> int:
    """SIGKILL every process of session `sid` (the leader too) until none is left; returns how many were hit."""
    hit = 0
    for _ in range(rounds):
        members = session_members(sid)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
                hit += 1
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
    try:  # without /proc: at least the process group the session started with
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return hit
