"""`trialrun agents`: the ready-made agents, whether each is installed here and at which version; `trialrun agents
install NAME ...` installs them into trialrun's agent cache (the finding and installing is `_agents`, imported
when the command runs: it imports the pinned list)."""

from __future__ import annotations

import json

import click

from ._common import EXIT_USAGE, _fail_cleanly, _say


@click.command("agents")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@_fail_cleanly
def agents_command(names: tuple[str, ...], as_json: bool) -> None:
    """List the ready-made agents (`agent = "NAME"`): whether each is installed here, where (trialrun's agent
    cache, ~/.cache/trialrun-agents or $TRIALRUN_AGENTS_DIR, then PATH: where `trialrun run` looks, in that
    order), its version, the version the tests run (pinned) and how to install it.

    \b
    trialrun agents install NAME [NAME ...]   install agents at their pinned versions into the agent cache
                                              (npm agents need node and npm; PyPI agents a Python >= 3.10)
    """
    from ._agents import InstallFailed, install, installed, table

    if names[:1] == ("install",):
        if not names[1:]:
            from ..agents._pins import pins

            raise click.UsageError(f"name the agents to install: trialrun agents install NAME (known: {', '.join(pins())})")
        try:
            rows = install(list(names[1:]), _say)
        except ValueError as exc:
            raise click.BadParameter(_with_guess(str(exc), names[1:]), param_hint="NAME") from None
        except InstallFailed as exc:
            _say(f"error: {exc}")
            raise SystemExit(EXIT_USAGE) from None
        for row in rows:
            _say(f"{row.pin.name} {row.version or '(version unknown)'}: {row.path}; `trialrun run` with "
                 f"agent = \"{row.pin.name}\" runs it from there", err=False)
        return
    try:
        rows = installed(list(names) or None)
    except ValueError as exc:
        raise click.BadParameter(_with_guess(str(exc), names), param_hint="NAMES") from None
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
    else:
        _say(table(rows), err=False)


def _with_guess(message: str, names: tuple[str, ...]) -> str:
    """The message, with the ready-made agent a mistyped name most likely meant."""
    from ..agents._pins import preset_suggestion

    guess = next((preset_suggestion(name) for name in names if preset_suggestion(name) not in (None, name)), None)
    return message + (f"; did you mean {guess!r}?" if guess else "")
