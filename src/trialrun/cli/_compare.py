"""`trialrun compare`: two runs side by side, their regressions, and --fail-on-regression as a gate."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .._util.display import markup
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    THRESHOLD,
    _check_output_file,
    _console,
    _fail_cleanly,
    _note_journals,
    _say,
    _store,
    _warn_skipped,
    _write_outputs,
)


@click.command()
@click.argument("runs", nargs=-1, metavar="[A B]")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (its folder holds the results by default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--threshold", type=THRESHOLD, default=0.10, show_default=True,
              help="A drop of this much or more (between 0 and 1) is a regression; \"not worse\" must rule out a "
                   "bigger drop.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when anything is worse: a test whose every drop is real (deterministic runs), a broken "
                   "safety claim, a live test or the run worse beyond chance; or when the later run lost a test "
                   "(removed, or not finished).")
@click.option("--any-drop", is_flag=True, help="Judge live tests as deterministic ones: every drop is worse, chance or "
                                               "not (a stricter gate that accepts false alarms).")
@click.option("--require-power", is_flag=True, help="With --fail-on-regression: also fail when a test or the run "
                                                    "cannot tell (the runs had too few trials to tell).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write the comparison as Markdown here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML comparison here.")
@click.option("--no-summary", is_flag=True, help="Do not append to $GITHUB_STEP_SUMMARY.")
@_fail_cleanly
def compare(runs: tuple[str, ...], results_dir: str | None, suite: str | None, config_path: str | None, threshold: float,
            fail_on_regression: bool, any_drop: bool, require_power: bool, as_json: bool, markdown_path: str | None, html_path: str | None,
            no_summary: bool) -> None:
    """Compare two runs: the two most recent by default (before -> after); A and B as `report` takes a RUN.
    Each test and the run get a word, worse, not worse or cannot tell: between deterministic runs every drop is
    worse; a broken safety claim is worse; live runs are weighed against chance (docs: "Is it better?")."""
    from ..report import compare as comparing
    from ..report.store import ResultFileError, load_report

    if len(runs) not in (0, 2):
        raise click.UsageError("give two runs (A B) or none for the two most recent")
    _check_output_file(markdown_path, "--markdown")
    _check_output_file(html_path, "--html")
    if runs and all(Path(r).is_file() for r in runs):  # paths need no configuration
        paths = [Path(r) for r in runs]
        _note_journals(paths)
    else:
        store = _store(results_dir, config_path, suite, runs=None if runs else 2)
        paths = [store.resolve(r) for r in runs] if runs else store.recent(2)
        if len(paths) < 2:
            unusable = "; ".join(f"{p.name} ({reason})" for p, reason in store.skipped.items())
            raise ResultFileError(f"{store.directory}: compare needs two runs; found {len(paths)} usable result file(s)"
                                  + (f"; unusable: {unusable}" if unusable else ""))
        _warn_skipped(store, paths)
    before, after = (load_report(p) for p in paths)
    comparison = comparing.compare(before, after, threshold=threshold, any_drop=any_drop, require_power=require_power)
    if as_json:
        from .._scrub import scrub_text

        click.echo(scrub_text(comparison.model_dump_json(indent=2)))
    else:
        from ..render.terminal import print_comparison

        console = _console()
        console.print(f"[dim]{markup(before.run_id)} -> {markup(after.run_id)}[/]")
        print_comparison(comparison, console)

    def markdown() -> str:
        from ..render.markdown import comparison_markdown

        return comparison_markdown(comparison)

    def html() -> str:
        from ..render.html import comparison_html

        return comparison_html(comparison, before, after)

    _write_outputs(markdown_path, None, html_path, markdown=markdown, junit=None, html=html, summary=not no_summary)
    gate = comparison.gate
    failed = fail_on_regression and gate is not None and gate.failed
    if fail_on_regression and gate is not None and as_json:  # the JSON holds the line; the gate's answer goes to stderr
        _say(f"--fail-on-regression: {gate.line}")
    sys.exit(EXIT_FAILED if failed else EXIT_OK)
