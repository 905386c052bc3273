"""Which ready-made agents are installed here, and at which version: what `trialrun agents` shows; and
`trialrun agents install NAME`, which runs the one installer (`trialrun/agents/install.sh`) for the agents named.

An agent is looked for exactly where a trial finds it (`_pins.find_program`: trialrun's agent cache,
`~/.cache/trialrun-agents` or $TRIALRUN_AGENTS_DIR, then PATH). Its version is read from its package's own record (package.json, or the
dist-info METADATA of a Python package) where the program's path leads to one, else asked of the program
(`--version`, a short timeout, a temporary HOME so that asking never writes into the user's). The pins come from
the one pinned list (`_pins`); nothing here imports the presets.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..agents._pins import INSTALLER, Pin, agents_dir, cache_program, find_program, pins

__all__ = ["Installed", "installed", "cache_program", "find_program", "package_version", "asked_version", "table",
           "install", "InstallFailed", "ASK_TIMEOUT_S"]

#: How long `program --version` may take (a node agent starts in about a second).
ASK_TIMEOUT_S = 10.0
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.-]+)?")


@dataclass(frozen=True)
class Installed:
    """One pinned agent as found here: `where` is "PATH", "cache" or "" (not found); `version` None when it is
    not found or cannot say; `version_from` says where the version was read."""

    pin: Pin
    path: str | None
    where: str
    version: str | None
    version_from: str

    @property
    def at_pin(self) -> bool:
        return self.version == self.pin.version

    def as_dict(self) -> dict[str, object]:
        return {"agent": self.pin.name, "registry": self.pin.registry, "package": self.pin.package,
                "program": self.pin.program, "installed": self.path is not None, "where": self.where or None,
                "path": self.path, "version": self.version, "version_from": self.version_from or None,
                "pinned": self.pin.version, "install": self.pin.install_command}


def package_version(pin: Pin, program: str) -> str | None:
    """The version in the package's own record that the program's path leads to (the npm package's package.json
    above the resolved script; the Python package's dist-info in the program's venv), or None."""
    resolved = Path(program).resolve()
    if pin.registry == "npm":
        candidates = [Path(program).parent.parent / pin.package / "package.json"]  # node_modules/.bin/x
        candidates += [folder / "package.json" for folder in resolved.parents]
        for manifest in candidates:
            try:
                data = json.loads(manifest.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and data.get("name") == pin.package and isinstance(data.get("version"), str):
                return str(data["version"])
        return None
    wanted = re.sub(r"[-_.]+", "_", pin.package).lower()
    for prefix in dict.fromkeys((Path(program).parent.parent, resolved.parent.parent)):
        for info in sorted(prefix.glob("lib/python*/site-packages/*.dist-info")):
            name, _, version = info.name[: -len(".dist-info")].partition("-")
            if re.sub(r"[-_.]+", "_", name).lower() == wanted and version:
                return version
    return None


def asked_version(program: str, timeout_s: float | None = None) -> str | None:
    """The version `program --version` prints (its first version-like word), run with a temporary HOME and no
    input; None when it fails, times out or prints none."""
    with tempfile.TemporaryDirectory(prefix="trialrun-agents-version-") as home:
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": home, "NO_COLOR": "1", "CI": "1"}
        try:
            done = subprocess.run([program, "--version"], capture_output=True, text=True,
                                  timeout=timeout_s or ASK_TIMEOUT_S,
                                  stdin=subprocess.DEVNULL, env=env, cwd=home, start_new_session=True)
        except (OSError, subprocess.SubprocessError):
            return None
    if done.returncode != 0:
        return None
    found = _VERSION.search(done.stdout or done.stderr or "")
    return found.group(0) if found else None


def installed(names: list[str] | None = None) -> list[Installed]:
    """Each pinned agent (or those of `names`) as found here."""
    every = pins()
    unknown = [name for name in names or () if name not in every]
    if unknown:
        raise ValueError(f"no ready-made agent {', '.join(map(repr, unknown))} (known: {', '.join(every)})")
    rows = []
    for name in names or list(every):
        pin = every[name]
        path, where = find_program(pin)
        version, source = None, ""
        if path is not None:
            version = package_version(pin, path)
            source = "package.json" if pin.registry == "npm" else "dist-info"
            if version is None:
                version, source = asked_version(path), "--version"
        rows.append(Installed(pin, path, where, version, source if version else ""))
    return rows


def table(rows: list[Installed]) -> str:
    """The rows as a plain-text table: agent, installed (where), version (and where it was read), pinned, install."""
    header = ("agent", "installed", "version", "pinned", "install")
    lines = [header]
    for row in rows:
        where = f"yes ({row.where}: {row.path})" if row.path else "no"
        version = "-" if row.version is None else row.version + ("" if row.at_pin else " (not the pinned version)")
        if row.path and row.version is None:
            version = "unknown (it did not say)"
        lines.append((row.pin.name, where, version, row.pin.version, row.pin.install_command))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    missing = [row.pin.name for row in rows if row.path is None]
    if missing:
        text += ["", f"not installed: {', '.join(missing)}; `trialrun agents install NAME` installs one into "
                     f"trialrun's agent cache, {agents_dir()} ($TRIALRUN_AGENTS_DIR), where `trialrun run` looks "
                     "first (then on PATH)"]
    return "\n".join(text)


class InstallFailed(Exception):
    """The installer failed; the message holds the end of what it printed."""


def install(names: list[str], say: Callable[[str], None]) -> list[Installed]:
    """Install the pinned agents `names` into the agent cache with the one installer (`install.sh`, which
    `.ci/install-agents` runs for all), then find each where a trial will (`find_program`): an install that left
    no program there is a failure, never a silent success."""
    every = pins()
    unknown = [name for name in names if name not in every]
    if unknown:
        raise ValueError(f"no ready-made agent {', '.join(map(repr, unknown))} (known: {', '.join(every)})")
    bash = shutil.which("bash")
    if bash is None:
        raise InstallFailed("bash is not on PATH; the installer is a bash script (install the agent by hand: "
                            + "; ".join(f"`{every[name].install_command}`" for name in names) + ")")
    for name in names:
        say(f"installing {name} ({every[name].spec}) into {agents_dir()} ...")
    env = {**os.environ, "TRIALRUN_AGENTS_DIR": str(agents_dir())}
    env.pop("TRIALRUN_PINNED", None)  # the list trialrun's presets read, never another
    done = subprocess.run([bash, str(INSTALLER), *names], env=env, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True)
    if done.returncode != 0:
        raise InstallFailed((done.stderr or done.stdout).strip() or f"the installer exited {done.returncode}")
    rows = installed(names)
    absent = [row.pin.name for row in rows if row.where != "cache"]
    if absent:
        raise InstallFailed(f"the installer ended, but {', '.join(absent)} is not in {agents_dir()}")
    return rows
