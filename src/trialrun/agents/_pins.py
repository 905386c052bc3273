"""The pinned list of ready-made agents (`trialrun/agents/pinned.txt`): the one place their names, packages and
tested versions are written. Read by each preset's contract, by the configuration's check of `agent = "..."`, by
`trialrun agents` and by `.ci/install-agents` (a shell script, hence a plain text file and not Python).

Only the standard library, and nothing else of `trialrun.agents`: the configuration imports this, and importing
the agents package would import every preset.
"""

from __future__ import annotations

import difflib
import functools
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Pin", "pins", "PINNED_FILE", "REGISTRIES", "agents_dir", "PRESET_NAMES", "preset_suggestion"]

PINNED_FILE = Path(__file__).resolve().parent / "pinned.txt"
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
        """How a user installs it by hand (`.ci/install-agents` installs every pin into the cache folder)."""
        if self.registry == "pypi":
            return f"pipx install {f'--python python{self.python} ' if self.python else ''}{self.spec}"
        return f"npm install -g {self.spec}"


def agents_dir() -> Path:
    """The cache folder `.ci/install-agents` installs into: $TRIALRUN_AGENTS_DIR, default ~/.cache/trialrun-agents
    (npm packages under node_modules/, each PyPI agent in its own venv under venvs/<name>/)."""
    base = os.environ.get("TRIALRUN_AGENTS_DIR") or str(Path.home() / ".cache" / "trialrun-agents")
    return Path(base)


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
