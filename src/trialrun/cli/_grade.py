"""`trialrun grade`: a test's output_quality set by hand in a saved run."""

from __future__ import annotations

import click

from ._common import _fail_cleanly, _say, _store


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("test_id")
@click.argument("quality", type=click.Choice(["0", "0.25", "0.5"]))
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--comment", default="", help="Why: kept with the grade (who, when and the value it replaced are kept too).")
@_fail_cleanly
def grade(run_ref: str, test_id: str, quality: str, results_dir: str | None, config_path: str | None,
          comment: str = "") -> None:
    """Set TEST_ID's output_quality (0, 0.25 or 0.5) by hand in RUN: a run id, a result file's name or stem, a path,
    or `latest`. The same edit as the viewer's grade form (`trialrun.report._hand_grade`)."""
    from ..report._hand_grade import grade_by_hand, who

    store = _store(results_dir, config_path)
    path = store.resolve(run_ref)
    try:
        done = grade_by_hand(store, path, test_id, float(quality), by=who(), comment=comment, via="cli")
    except (KeyError, ValueError) as exc:  # GradeRefused is a ValueError
        raise click.UsageError(str(exc.args[0] if exc.args else exc)) from None
    before, after, updated = done.before, done.after, done.report
    _say(
        f"{test_id}: output_quality {quality}; score {before.score:.2f} -> {after.score:.2f}; "
        f"{'passed' if after.passed else 'failed'}; run {updated.passed_case_count}/{len(updated.graded_cases)} passed ({path})",
        err=False,
    )
