"""The `trialrun` command: run a suite, report a run, compare two runs, grade by hand.

Exit codes everywhere: 0 every graded test passed; 1 a test failed (or, with --fail-on-regression, a regression);
2 a usage, configuration or file error (a message, no traceback); 130 interrupted (Ctrl-C), 143 stopped by
SIGTERM, 129 by SIGHUP (128 + the signal, as a shell reports it).

`trialrun.cli:main` is the command (the console script calls it through `_trialrun_cli`, a module outside the package,
so that a Ctrl-C while trialrun is being imported also exits 130): the group is here, each command in a module of its own (`_run`,
`_report`, `_view`, `_compare`, `_recover`, `_grade`, `_regrade`, `_export`, `_init`, `_schema`, `_agents_command`,
`_skill`), what they share in `_common`. May import anything: nothing in trialrun imports the CLI.
"""

from __future__ import annotations

import click

from .._version import __version__
from ._agents_command import agents_command
from ._common import _Group, _setup_logging
from ._compare import compare
from ._export import export
from ._grade import grade
from ._init import INIT_NEXT, init
from ._recover import recover
from ._regrade import regrade
from ._report import report
from ._run import run
from ._schema import schema
from ._skill import skill
from ._view import view

__all__ = ["INIT_NEXT", "main"]


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trialrun")
@click.option("-v", "--verbose", is_flag=True, help="Log what was configured (to stderr).")
@click.option("--debug", is_flag=True, help="Also log each model request's path and status (never a secret).")
def main(verbose: bool = False, debug: bool = False) -> None:
    """Test the behaviour of tool-calling LLM agents: outcome and trajectory, pass@1 and pass^k.

    \b
    trialrun init                    make a working offline project here
    trialrun run all                 run the suite (state/eval/tests.json by default)
    trialrun report                  show the most recent run
    trialrun compare                 compare the last two runs (before/after a config change)
    trialrun view                    browse every run in a local web app (trialrun[view])
    trialrun grade RUN TEST 0.35     grade by hand: output quality, or --pass/--fail a verdict
    trialrun regrade [RUN]           grade a run again with the current suite (no agent runs)
    trialrun export RUN --format F   a run's trajectories as OpenTelemetry spans (otel) or ATIF (atif)
    trialrun schema                  the suite's JSON Schema
    trialrun agents                  the ready-made agents: installed here? which version?
    trialrun agents install pi       install one (pinned version) into trialrun's agent cache
    """
    _setup_logging(verbose, debug)


for _command in (run, report, view, compare, recover, grade, regrade, export, init, schema, agents_command, skill):
    main.add_command(_command)
