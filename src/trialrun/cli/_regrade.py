"""`trialrun regrade` at the command line: find the run, grade it again (`_regrade`), save it beside the original
with a copy of its exchanges (so the regraded run can be viewed, exported and regraded in turn), say what changed."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ._common import EXIT_FAILED, EXIT_OK, _fail_cleanly, _say

if TYPE_CHECKING:
    from ..suite._regrade import Regrade


@click.command()
@click.argument("run_ref", required=False, metavar="[RUN]")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file to grade with (default: the configured one).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file (rubric, judge, threshold).")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--json", "as_json", is_flag=True, help="Print the regraded run as JSON.")
@click.option("--make-latest", is_flag=True, help="Point latest.json at the regraded run (by default it keeps "
              "pointing at the last run of the agent: a regrade runs none).")
@_fail_cleanly
def regrade(run_ref: str | None, suite: str | None, config_path: str | None, results_dir: str | None,
            as_json: bool, make_latest: bool = False) -> None:
    """Grade RUN (default: the latest) again with the current suite's graders and rubric, from the exchanges it
    kept, without running any agent; save it as a new run marked `regraded_from`. Hand grades and verdict
    overrides of RUN are carried forward (and listed), never dropped. latest.json stays where it was unless
    --make-latest. Exit code as `run`'s."""
    sys.exit(regrade_command(run_ref, suite, config_path, results_dir, as_json, say=_say, make_latest=make_latest))


def regrade_command(run_ref: str | None, suite: str | None, config_path: str | None, results_dir: str | None,
                    as_json: bool, *, say: Callable[..., None], make_latest: bool = False) -> int:
    """Regrade the run `run_ref` names and save it; the exit code (`run`'s: 1 when a test of it fails)."""
    from ..report._grading import carry_forward
    from ..report.exchanges import copy_sidecar, sidecar_path
    from ..report.store import (
        LATEST,
        LatestNotUpdated,
        ResultsStore,
        ResultWriteError,
        load_report,
        report_text,
        writing,
    )
    from ..suite._regrade import regrade_report
    from ..suite._tests_file import read_suite
    from ..suite.config import load_config

    config = load_config(Path.cwd(), path=config_path).with_overrides(suite=Path(suite).resolve() if suite else None)
    if run_ref and Path(run_ref).is_file():
        path = Path(run_ref)
    else:
        store = ResultsStore(Path(results_dir) if results_dir else config.results_path())
        path = store.resolve(run_ref)
        for skipped, reason in store.skipped.items():
            say(f"warning: skipped {skipped}: {reason}")
    path = path.resolve() if path.is_symlink() else path  # latest.json: the run it links
    original = load_report(path)
    if path.name == LATEST and original.run_id:  # a copy (no symlinks here): the result file it copies, whose
        path = ResultsStore(path.parent).resolve(original.run_id)  # exchanges are beside it
        original = load_report(path)
    suite_file = read_suite(config.suite_path())
    import logging

    logging.getLogger("trialrun.regrade").info("config file: %s; run: %s; suite: %s; rubric: %s; judge: %s",
                                               config.source or "none (defaults)", path, suite_file.path,
                                               config.rubric, config.judge or "heuristic")
    done = regrade_report(path, original, suite_file, config)  # (no lock held: a judge may take minutes)
    store = ResultsStore(path.parent)
    with store.write_lock():  # the run as it is now: a grade made while the regrade ran is carried too
        done.report, carried = carry_forward(load_report(path), done.report)
        try:
            saved = store.save(done.report, point_latest=make_latest)
        except LatestNotUpdated as exc:  # saved all the same: its exchanges go beside it
            saved = exc.saved
            say(f"warning: {exc}")
        except OSError as exc:  # a full disk: said with the file and the folder
            raise ResultWriteError(Path(exc.filename) if exc.filename else store.directory / "results_*.json", exc) from exc
    with writing(sidecar_path(saved), "exchanges file"):
        copy_sidecar(sidecar_path(path), sidecar_path(saved), run_id=done.report.run_id)
    if as_json:
        say(report_text(done.report), err=False)
    else:
        _summary(done, path, saved, suite_file.path, say, carried)
        if not make_latest:
            say(f"latest.json still points at the last run of the agent (a regrade runs none; --make-latest to "
                f"point it at {saved.name})", err=False)
    return EXIT_FAILED if done.report.failed_case_count else EXIT_OK


def _summary(done: Regrade, source: Path, saved: Path, suite: Path, say: Callable[..., None],
             carried: list[str]) -> None:
    from ..render._plain import summary_parts

    report = done.report
    say(f"regraded {report.regraded_from} ({source.name}) with {suite}; no agent ran: "
        f"{done.regraded} trial(s) regraded, {done.changed} changed, {done.kept} kept as they were"
        + (f", {done.unregradable} verdict(s) not regradable" if done.unregradable else ""), err=False)
    for line in done.lines:
        say(f"  {line}", err=False)
    if carried:
        say(f"carried forward from {report.regraded_from}: {len(carried)} hand grade(s) and override(s)", err=False)
        for line in carried:
            say(f"  {line}", err=False)
    say(" · ".join(text for text, _ in summary_parts(report)), err=False)
    say(f"saved {saved} (regraded_from {report.regraded_from}); `trialrun compare` shows it against the original",
        err=False)
