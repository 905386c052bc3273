"""The pinned list of ready-made agents (`trialrun/agents/pinned.txt`): the one place their names, packages and
tested versions are written. Read by each preset's contract, by the configuration's check of `agent = "..."`, by
`trialrun agents` and by the installer beside it (`install.sh`, a shell script, hence a plain text file and not
Python; `trialrun agents install NAME` and `.ci/install-agents` both run it).

Also the one rule for where an agent's program is (`find_program`): trialrun's agent cache first (what the
installer fills, at the pinned version), then PATH. A trial (`Preset.find`), `trialrun agents` and the tests all
ask it, so they never disagree about the same cache.

Only the standard library, and nothing else of `trialrun.agents`: the configuration imports this, and importing
the agents package would import every preset.
"""

from __future__ import annotations

import difflib
import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Pin", "pins", "PINNED_FILE", "INSTALLER", "REGISTRIES", "agents_dir", "cache_program", "find_program",
           "PRESET_NAMES", "preset_suggestion"]

PINNED_FILE = Path(__file__).resolve().parent / "pinned.txt"
#: The installer of the pinned agents into the cache (`bash install.sh [NAME ...]`).
INSTALLER = PINNED_FILE.parent / "install.sh"
#: The registries an agent comes from, and how each is installed by hand.
REGISTRIES = ("npm", "pypi")


@dataclass(frozen=True)
class Pin:
    """One ready-made agent's package: where it comes from, the version the tests run, the program it installs."""

    name: str
    registry: str
    package: str
    version: str
    program: str
    python: str = ""  # a PyPI agent's oldest Python ("3.12"): its venv is made with one at least that new

    @property
    def spec(self) -> str:
        """The package at its pinned version, as its registry's client spells it."""
        return f"{self.package}=={self.version}" if self.registry == "pypi" else f"{self.package}@{self.version}"

    @property
    def install_command(self) -> str:
        """How a user installs it by hand onto PATH (`trialrun agents install NAME` installs it into trialrun's
        agent cache instead)."""
        if self.registry == "pypi":
            return f"pipx install {f'--python python{self.python} ' if self.python else ''}{self.spec}"
        return f"npm install -g {self.spec}"


def agents_dir() -> Path:
    """trialrun's agent cache, where the installer puts agents and where a trial looks first:
    $TRIALRUN_AGENTS_DIR, default ~/.cache/trialrun-agents (npm packages under node_modules/, each PyPI agent in
    its own venv under venvs/<name>/)."""
    base = os.environ.get("TRIALRUN_AGENTS_DIR") or str(Path.home() / ".cache" / "trialrun-agents")
    return Path(base)


def cache_program(pin: Pin, base: Path | None = None) -> Path:
    """Where the installer puts the pinned agent's program in the cache."""
    base = base or agents_dir()
    if pin.registry == "pypi":
        return base / "venvs" / pin.name / "bin" / pin.program
    return base / "node_modules" / ".bin" / pin.program


def find_program(pin: Pin) -> tuple[str | None, str]:
    """(the program's path, "cache" or "PATH"), or (None, "") when it is in neither.

    The cache first: it holds the version the tests ran, put there on purpose by `trialrun agents install`; a
    program on PATH is whatever version the user has."""
    cached = cache_program(pin)
    if cached.is_file() and os.access(cached, os.X_OK):
        return str(cached), "cache"
    found = shutil.which(pin.program)
    if found is not None:
        return found, "PATH"
    return None, ""


def parse(text: str, source: str = "pinned.txt") -> dict[str, Pin]:
    """The pins of a pinned list's text; a malformed line is a ValueError naming the file and line."""
    found: dict[str, Pin] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip() if line.lstrip().startswith("#") else line.strip()
        if not line:
            continue
        fields = line.split()
        python = ""
        if len(fields) == 6 and fields[5].startswith("python>="):
            python = fields.pop()[len("python>="):]
        if len(fields) != 5:
            raise ValueError(f"{source}:{number}: expected `name registry package version program [python>=X.Y]`, "
                             f"got {line!r}")
        name, registry, package, version, program = fields
        pin = Pin(name, registry, package, version, program, python)
        if pin.registry not in REGISTRIES:
            raise ValueError(f"{source}:{number}: registry {pin.registry!r} is not one of {', '.join(REGISTRIES)}")
        if pin.name in found:
            raise ValueError(f"{source}:{number}: {pin.name!r} is pinned twice")
        found[pin.name] = pin
    return found


@functools.lru_cache(maxsize=1)
def pins() -> dict[str, Pin]:
    """Every pinned agent by its trialrun.toml name, in the file's order."""
    return parse(PINNED_FILE.read_text(encoding="utf-8"), str(PINNED_FILE))


#: The ready-made agents by their trialrun.toml names, from the one pinned list (`trialrun.agents.PRESETS` has
#: their factories, `trialrun.agents.CONTRACTS` their contracts).
PRESET_NAMES = tuple(pins())


def preset_suggestion(name: str) -> str | None:
    """The ready-made agent a mistyped name most likely means (`claude`, `claude_code`, `Pi`, `open-code`), or None."""
    wanted = name.strip().lower().replace("_", "-").replace(" ", "-")
    if wanted in PRESET_NAMES:
        return wanted
    squashed = {preset.replace("-", ""): preset for preset in PRESET_NAMES}
    if wanted.replace("-", "") in squashed:
        return squashed[wanted.replace("-", "")]
    starts = [preset for preset in PRESET_NAMES if preset.startswith(wanted) or wanted.startswith(preset)]
    if len(wanted) >= 2 and len(starts) == 1:
        return starts[0]
    close = difflib.get_close_matches(wanted, PRESET_NAMES, n=1, cutoff=0.6)
    return close[0] if close else None
