"""`trialrun skill install`: the agent skill that lets a coding agent drive trialrun."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ._common import EXIT_USAGE, _fail_cleanly, _say


@click.group()
def skill() -> None:
    """The agent skill that lets a coding agent drive trialrun ("/eval run", "/eval compare", ...)."""


@skill.command("install")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite an existing SKILL.md.")
@_fail_cleanly
def skill_install(directory: str, force: bool) -> None:
    """Copy the eval skill into DIRECTORY/eval/SKILL.md (e.g. .claude/skills)."""
    from importlib.resources import files

    source = files("trialrun").joinpath("skills").joinpath("eval").joinpath("SKILL.md").read_text(encoding="utf-8")
    target = Path(directory) / "eval" / "SKILL.md"
    if target.exists() and not force:
        _say(f"error: {target} exists; use --force to overwrite")
        sys.exit(EXIT_USAGE)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    _say(f"installed {target}", err=False)
