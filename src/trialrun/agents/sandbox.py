"""Sandboxes for what agents run (filled in below: "none" for now)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Sandbox", "resolve_sandbox", "SANDBOXES"]

from ..config import SANDBOXES


class Sandbox:
    """No sandbox: the agent runs as the caller, with the caller's environment."""

    name = "none"
    active = False

    def describe(self) -> str:
        return self.name

    def environment(self, home: Path | None) -> dict[str, str]:
        return dict(os.environ)

    def wrap(self, argv: list[str], env: dict[str, str], *, workdir: Path, home: Path | None,
             endpoint: Any) -> tuple[list[str], dict[str, str], Callable[[], None] | None]:
        return argv, env, None


def resolve_sandbox(value: str | Sandbox) -> Sandbox:
    if isinstance(value, Sandbox):
        return value
    if value not in SANDBOXES:
        raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}, got {value!r}")
    return Sandbox()
