"""`trialrun agents`: the ready-made agents, whether each is installed here and at which version (the
finding is `_agents`, imported when the command runs: it imports the pinned list)."""

from __future__ import annotations

import json

import click

from ._common import _fail_cleanly, _say


@click.command("agents")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@_fail_cleanly
def agents_command(names: tuple[str, ...], as_json: bool) -> None:
    """List the ready-made agents (`agent = "NAME"`): whether each is installed here (on PATH, or in the cache
    folder .ci/install-agents fills), its version, the version the tests run (pinned) and how to install it."""
    from ._agents import installed, table

    try:
        rows = installed(list(names) or None)
    except ValueError as exc:
        from ..agents._pins import preset_suggestion

        guess = next((preset_suggestion(name) for name in names if preset_suggestion(name) not in (None, name)), None)
        raise click.BadParameter(str(exc) + (f"; did you mean {guess!r}?" if guess else ""), param_hint="NAMES") from None
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
    else:
        _say(table(rows), err=False)
