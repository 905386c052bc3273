"""The arms of an A/B run: each an overlay on the base configuration (an `[arms.NAME]` table of trialrun.toml, or a
file given to `trialrun run --arms`), checked as the configuration itself is, before anything runs.

An arm sets only what runs the agent (`ARM_KEYS`: the model, the agent and its options, the instructions file, the
skills, the preset, the reference agent's prompt, tools and policy...). Everything else is the run's and the same in
every arm (`RUN_KEYS`: the suite, the pass mark, the rubric and the judge grade every arm alike, which a paired
comparison needs; prices, trials and where results go are one run's). Tables are merged key by key
(`[arms.v2.agent_options] instructions = ...` keeps the base's other agent options); any other value replaces the
base's. In an arm file, the files it names (workspace, a scripted or replay model, skills, `agent_options.path` and
`agent_options.instructions`) are relative to that file; module names and command words are the project's.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .config import Config, ConfigError, _describe, _read, parse_model_spec

__all__ = ["Arm", "ARM_KEYS", "RUN_KEYS", "arms_for", "FILE_MODEL_KINDS"]

#: What an arm may change: what runs the agent.
ARM_KEYS = ("agent", "model", "api", "model_name", "system", "tools", "workspace", "skills", "sandbox",
            "agent_options", "policy", "turn_limit", "pass_env", "rate_limit")
#: What is the run's, the same in every arm.
RUN_KEYS = ("suite", "results_dir", "pass_threshold", "rubric", "judge", "trials", "concurrency", "executor",
            "exchanges", "exchanges_max_bytes", "prices", "prices_source", "arms")
#: Model kinds whose target is a file or folder (relative to the file that names it).
FILE_MODEL_KINDS = ("scripted", "replay", "record")


@dataclass(frozen=True)
class Arm:
    """One arm: its name, its configuration (the base with its overlay), and where it was defined."""

    name: str
    config: Config
    source: str

    @property
    def live(self) -> bool:
        return self.config.model_spec.live


def arms_for(config: Config, selection: str | None) -> list[Arm]:
    """The arms a run compares, in order (the first is the baseline unless told otherwise): the items of
    `selection` (`--arms`: names of `[arms]` tables and arm files, comma-separated), else every `[arms]` table of
    the configuration. Every table is checked, chosen or not. An empty list when there are none."""
    where = str(config.source or "configuration")
    tables = _tables(config, where)
    arms = {name: _arm(config, name, overlay, f"{where}: [arms.{name}]", None, where)
            for name, overlay in tables.items()}
    if selection is None:
        return list(arms.values())
    chosen: list[Arm] = []
    for item in (part.strip() for part in selection.split(",")):
        if not item:
            raise ConfigError(f"--arms {selection!r}: an empty item; name arms (tables of {where}) or arm files, "
                              "separated by commas")
        arm = arms.get(item) or _from_file(config, item, arms, where)
        if any(a.name == arm.name for a in chosen):
            raise ConfigError(f"--arms {selection!r}: two arms are named {arm.name!r}; each arm needs its own name "
                              "(an arm file is named after its file's name without .toml)")
        chosen.append(arm)
    if len(chosen) < 2:
        raise ConfigError(f"--arms {selection!r}: an A/B run needs two or more arms, got {len(chosen)}")
    return chosen


def _tables(config: Config, where: str) -> dict[str, dict[str, Any]]:
    tables: dict[str, dict[str, Any]] = {}
    for name, overlay in config.arms.items():
        _check_name(name, f"{where}: [arms]")
        if not isinstance(overlay, dict):
            raise ConfigError(f"{where}: arms.{name}: an arm is a table of settings, e.g. [arms.{name}] "
                              f"model = \"...\"")
        tables[name] = overlay
    return tables


def _check_name(name: str, where: str) -> None:
    if not name.strip() or "," in name or any(ord(ch) < 32 for ch in name):
        raise ConfigError(f"{where}: {name!r} cannot name an arm (it needs a name without commas or control "
                          "characters)")


def _from_file(config: Config, item: str, tables: dict[str, Arm], where: str) -> Arm:
    """The arm defined by the file `item` names, or a ConfigError saying what the item could have meant."""
    path = Path(item)
    path = path if path.is_absolute() else Path.cwd() / path
    if not path.exists():
        close = difflib.get_close_matches(item, list(tables), n=1)
        known = f"; the [arms] tables of {where}: {', '.join(tables)}" if tables else f"; {where} has no [arms] tables"
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"--arms: {item!r} is neither an arm of the configuration nor a file{hint}{known}")
    overlay = _read(path)
    name = path.stem if path.suffix == ".toml" else path.name
    _check_name(name, str(path))
    return _arm(config, name, overlay, str(path), path.parent.resolve(), str(path))


def _arm(base: Config, name: str, overlay: dict[str, Any], where: str, folder: Path | None, source: str) -> Arm:
    """An arm's configuration: its keys checked (an unknown one says which it most likely meant, a run's key says
    it is the run's), its files made relative to `folder` (an arm file's), then the base with the overlay merged,
    validated as trialrun.toml is."""
    for key in overlay:
        if key in ARM_KEYS:
            continue
        if key in RUN_KEYS:
            raise ConfigError(f"{where}: {key!r} is the run's, the same in every arm (set it in the configuration "
                              f"or on the command line); an arm sets {', '.join(ARM_KEYS)}")
        close = difflib.get_close_matches(key, ARM_KEYS + RUN_KEYS, n=1)
        raise ConfigError(f"{where}: unknown key {key!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                          + f"; an arm sets {', '.join(ARM_KEYS)}")
    if folder is not None:
        overlay = _rooted(overlay, folder, where)
    data = _merged(base.model_dump(exclude={"arms"}), overlay)
    try:
        config = Config.model_validate({**data, "source": base.source, "base_dir": base.base_dir})
        config.model_spec  # noqa: B018 - the spec checked now, not mid-run
    except ValidationError as exc:
        raise ConfigError(_describe(exc, where)) from None
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return Arm(name, config, source)


def _merged(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """`base` with `overlay` on top: tables merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def _rooted(overlay: dict[str, Any], folder: Path, where: str) -> dict[str, Any]:
    """An arm file's overlay with the files it names made absolute against its own folder (malformed values are
    left for the validation to name)."""
    out = dict(overlay)

    def absolute(value: Any) -> Any:
        return str(folder / value) if isinstance(value, str) and value and not Path(value).is_absolute() else value

    if "workspace" in out:
        out["workspace"] = absolute(out["workspace"])
    if isinstance(out.get("skills"), list):
        out["skills"] = [absolute(item) for item in out["skills"]]
    if isinstance(out.get("agent_options"), dict):
        options = dict(out["agent_options"])
        for key in ("path", "instructions"):
            if key in options:
                options[key] = absolute(options[key])
        out["agent_options"] = options
    if isinstance(out.get("model"), str):
        try:
            spec = parse_model_spec(out["model"])
        except ConfigError as exc:
            raise ConfigError(f"{where}: model: {exc}") from None
        if spec.kind in FILE_MODEL_KINDS:
            out["model"] = f"{spec.kind}:{absolute(spec.target)}"
    return out
