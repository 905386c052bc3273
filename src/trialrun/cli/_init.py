"""`trialrun init`: a working offline project in the current folder, never written over one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ._common import _fail_cleanly, _PathProblem

#: The scaffold's files written with a leading dot (a .gitignore inside the package would be git's own).
_DOT_FILES = ("gitignore",)
#: What `trialrun init` prints when it is done: the next three commands.
INIT_NEXT = ("trialrun run all", "trialrun run all --trials 3", "trialrun compare")


@click.command()
@_fail_cleanly
def init() -> None:
    """Make a working offline project in the current folder: trialrun.toml, state/eval/tests.json, a scripted
    model (model.yaml), a workspace, and state/eval/.gitignore (the run files kept out of git). Never overwrites: if any of them exists, nothing is written."""
    from importlib.resources import files

    from .._util.files import write_atomic

    template = files("trialrun").joinpath("_scaffold")
    wanted: list[tuple[Path, str]] = []

    def walk(node: Any, rel: Path) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                walk(child, rel / child.name)
            else:  # (dot files are kept without their dot in the package: `gitignore` is written as .gitignore)
                name = "." + child.name if child.name in _DOT_FILES else child.name
                wanted.append((rel / name, child.read_text(encoding="utf-8")))

    walk(template, Path())
    there = [str(path) for path, _ in wanted if Path(path).exists()]
    if there:
        raise _PathProblem(f"{Path.cwd()}: already has {', '.join(there)}; trialrun init never overwrites "
                           "(nothing was written)")
    for path, text in wanted:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    click.echo(f"made a trialrun project in {Path.cwd()}: {', '.join(str(p) for p, _ in wanted)}")
    click.echo("next:")
    for command in INIT_NEXT:
        click.echo(f"  {command}")
