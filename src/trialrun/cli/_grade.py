"""`trialrun grade`: a test's output_quality set by hand in a saved run, or one of its verdicts overridden."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from ._common import EXIT_USAGE, _fail_cleanly, _say, _store


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("test_id")
@click.argument("quality", required=False, metavar="[QUALITY]")
@click.option("--trial", type=click.IntRange(min=1), help="Only this trial (default: every trial of the test).")
@click.option("--pass", "pass_grader", metavar="GRADER", help="Override this verdict (its label, or a part only it has) to pass.")
@click.option("--fail", "fail_grader", metavar="GRADER", help="Override this verdict to fail.")
@click.option("--clear", "clear_grader", metavar="GRADER", help="Take back an override: the grader's own verdict again.")
@click.option("--reason", default="", help="Why the grader was wrong (an override needs one): kept with it.")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--comment", default="", help="Why: kept with the grade (who, when and the value it replaced are kept too).")
@_fail_cleanly
def grade(run_ref: str, test_id: str, quality: str | None, trial: int | None, pass_grader: str | None,
          fail_grader: str | None, clear_grader: str | None, reason: str, results_dir: str | None,
          config_path: str | None, comment: str = "") -> None:
    """Grade TEST_ID of RUN by hand: set its output_quality to QUALITY (0 to 0.5 in steps of 0.05: 0 irrelevant,
    0.25 partly right, 0.5 fully right) in every trial or in --trial N; or override one of its verdicts with
    --pass/--fail GRADER --reason "why" (--clear GRADER takes it back). RUN is a run id, a result file's name or
    stem, a path, or `latest`. Who, when and what it replaced are kept in the result file; the viewer's forms make
    the same edit (`trialrun.report._hand_grade`)."""
    from ..expect.rubric import hand_quality
    from ..report._hand_grade import grade_by_hand, override_by_hand, result_file, who
    from ..report.store import ResultsStore

    overrides = [(g, v) for g, v in ((pass_grader, True), (fail_grader, False), (clear_grader, None)) if g]
    if len(overrides) + (quality is not None) != 1:
        _usage("give QUALITY, or one of --pass/--fail/--clear GRADER (one edit at a time)")
    if run_ref and Path(run_ref).is_file():  # a path: its own folder is the store it is rewritten in
        path = Path(run_ref)
        store = ResultsStore(path.parent)
    else:
        store = _store(results_dir, config_path)
        path = store.resolve(run_ref)
    path = result_file(store, path)
    try:
        if quality is not None:
            level = hand_quality(_number(quality))
            done = grade_by_hand(store, path, test_id, level, by=who(), comment=comment, via="cli", trial=trial)
        else:
            grader, verdict = overrides[0]
            done = override_by_hand(store, path, test_id, str(grader), verdict, by=who(), reason=reason or comment,
                                    via="cli", trial=trial)
    except (KeyError, ValueError) as exc:  # GradeRefused is a ValueError; ResultFileError is _fail_cleanly's
        from ..report.store import ResultFileError

        if isinstance(exc, ResultFileError):
            raise
        _usage(str(exc.args[0] if exc.args else exc))
    before, after, updated = done.before, done.after, done.report
    trials = ", ".join(str(n) for n in done.trials)
    what = (f"output_quality {done.quality:g}" if done.quality is not None
            else f"{done.grader} {'overridden to ' + ('pass' if overrides[0][1] else 'fail') if overrides[0][1] is not None else 'back to its grader'}")
    score = f"score {_rate(before.score)} -> {_rate(after.score)}; " if after.score is not None else ""
    _say(f"{test_id}: {what} in trial{'s' if len(done.trials) > 1 else ''} {trials}; {score}"
         f"{'passed' if after.passed else 'failed'}; run {updated.passed_case_count}/{len(updated.graded_cases)} "
         f"passed ({path})", err=False)


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        _usage(f"QUALITY must be a number from 0 to 0.5 (in steps of 0.05), got {text!r}")


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _usage(message: str) -> NoReturn:
    _say(f"error: {message}")
    sys.exit(EXIT_USAGE)
