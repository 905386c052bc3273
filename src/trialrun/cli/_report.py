"""`trialrun report`: show a run (the table, JSON, JUnit, Markdown, HTML), or with --history every run of the
results dir as one HTML file."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from .._util.display import clean
from ._common import (
    EXIT_FAILED,
    EXIT_OK,
    _check_output_file,
    _console,
    _emit_report,
    _fail_cleanly,
    _note_journals,
    _print_styled,
    _report_files,
    _say,
    _store,
    _warn_skipped,
)


@click.command()
@click.argument("run_ref", required=False, metavar="[RUN]")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (its folder holds the results by default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write a Markdown summary here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here.")
@click.option("--history", is_flag=True, help="With --html: write every run of the results dir (runs list, trend charts).")
@click.option("--table", "show_table", is_flag=True, help="Print the table even when writing files.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever the run's result (to look, not to gate).")
@click.option("--verdict", is_flag=True, help="Exit 1 when a test of the run failed also when writing a file "
                                              "(--html, --junit, --markdown), which otherwise exits 0 once written.")
@click.option("--files", "show_files", is_flag=True,
              help="Also print the files each trial left in its workdir (added, changed, removed, with their diffs).")
@click.option("--test", "only_tests", multiple=True, metavar="ID", help="With --files: only this test's trials (repeatable).")
@_fail_cleanly
def report(run_ref: str | None, results_dir: str | None, suite: str | None, config_path: str | None, as_json: bool,
           junit_path: str | None, markdown_path: str | None, html_path: str | None, history: bool,
           show_table: bool, exit_zero: bool, verdict: bool = False, show_files: bool = False,
           only_tests: tuple[str, ...] = ()) -> None:
    """Show a run: the most recent by default (latest.json), or RUN: a run id (eval_20260731_140000), a result
    file's name or stem (results_20260731_140000), a path, or `latest`. Writing a file (--html, --junit,
    --markdown) prints one line instead of the table, unless --table.

    Exit code: 0 when every graded test of the run passed, 1 when one failed (0 with --exit-zero), 2 for a usage
    or file error. Writing a file (--html, --junit, --markdown) exits 0 once it is written: the command did what
    it was asked; --verdict makes its exit code the run's again.

    With --history --html F: write the runs of the results dir (newest first, the config changes between them, the
    suite's trend and each test's chart) as one self-contained file."""
    from ..report.store import load_report

    _check_output_file(junit_path, "--junit")
    _check_output_file(markdown_path, "--markdown")
    _check_output_file(html_path, "--html")
    if history:
        _history_report(run_ref, results_dir, config_path, suite, html_path, junit_path or markdown_path or as_json)
        return
    if run_ref and Path(run_ref).is_file():  # a path needs no configuration
        path = Path(run_ref)
        _note_journals([path])
    else:
        store = _store(results_dir, config_path, suite, runs=None if run_ref else 1)
        path = store.resolve(run_ref)
        _warn_skipped(store, [path])
    result = load_report(path)
    _check_tests(result, only_tests, show_files)
    written = [p for p in (html_path, junit_path, markdown_path) if p]
    if as_json or show_table or not written:
        _emit_report(result, as_json=as_json, saved=None)
        if not as_json:
            _agreement(result)
            _print_styled(_console(plain_ok=True), clean(path), "dim")
    if show_files and not as_json:
        _print_files(result, only_tests)
    _report_files(result, junit_path=junit_path, markdown_path=markdown_path, html_path=html_path, summary=False)
    if written and not as_json and not show_table:
        from ..render.terminal import summary_line

        _console().print(f"wrote {', '.join(written)}: {summary_line(result)} [dim]({path})[/]")
    gating = verdict or not written  # a report written is the answer asked for; the run's verdict only on request
    sys.exit(EXIT_FAILED if result.failed_case_count and gating and not exit_zero else EXIT_OK)


def _agreement(result: Any) -> None:
    """The judges against the run's hand grades, when it has any (`render._agreement`)."""
    from ..render._agreement import agreement_lines
    from ..report._agreement import agreement

    for line in agreement_lines(agreement([result])):
        _say(line, err=False)


def _check_tests(result: Any, only: tuple[str, ...], show_files: bool) -> None:
    """`--test` names tests of the run, and goes with `--files`: a usage error naming the run's tests otherwise."""
    from ..suite.config import ConfigError

    if only and not show_files:
        raise ConfigError("--test chooses whose files --files prints: give --files too")
    names = [case.name for case in result.cases]
    unknown = [name for name in only if name not in names]
    if unknown:
        raise ConfigError(f"--test: no test {', '.join(map(repr, unknown))} in this run; its tests: "
                          f"{', '.join(names) or 'none'}")


def _print_files(result: Any, only: tuple[str, ...]) -> None:
    """The files each trial left (`--files`), after the table."""
    from ..render._files import report_files_text

    click.echo("\nFiles left:\n" + report_files_text(result, only), nl=False)


def _history_report(run_ref: str | None, results_dir: str | None, config_path: str | None, suite: str | None,
                    html_path: str | None, other: Any) -> None:
    from .._util.files import write_atomic
    from ..render.history import history_html
    from ..report._history import load_history

    if run_ref or other or not html_path:
        raise click.UsageError("--history writes the runs list as HTML: give --html FILE (and no RUN, --json, "
                               "--junit or --markdown)")
    store = _store(results_dir, config_path, suite)
    found = load_history(store.directory)
    for path, reason in found.skipped.items():
        _say(f"warning: skipped {path}: {reason}")
    write_atomic(Path(html_path), history_html(found))
    _say(f"wrote {html_path}: {len(found.runs)} run(s) of {store.directory}", err=False)
    sys.exit(EXIT_OK)
