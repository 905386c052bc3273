"""The `trialrun` command."""

from __future__ import annotations

import click

from ._version import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trialrun")
def main() -> None:
    """Test the behaviour of tool-calling LLM agents: outcome and trajectory, pass@1 and pass^k."""
