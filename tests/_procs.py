"""The live processes of this machine, read from /proc: the truth the containment tests check trialrun against."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["holding"]


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
