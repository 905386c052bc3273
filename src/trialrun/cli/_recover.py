"""`trialrun recover`: the runs that were killed, saved from their journals as interrupted result files."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_USAGE, _fail_cleanly, _say, _store


@click.command()
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (its folder holds the results by default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@_fail_cleanly
def recover(results_dir: str | None, suite: str | None, config_path: str | None) -> None:
    """Save the runs that were killed (SIGKILL, power loss) as result files with "status": "interrupted", from
    their journals (results_<stamp>.jsonl with no results_<stamp>.json)."""
    from ..report.journal import SUFFIX as JOURNAL_SUFFIX
    from ..report.store import LatestNotUpdated, ResultFileError, load_report

    store = _store(results_dir, config_path, suite)
    journals = [path for path in store.files() if path.suffix == JOURNAL_SUFFIX]  # FIFOs too: said, never opened
    if not journals:
        _say(f"nothing to recover in {store.directory}", err=False)
        return
    failed = 0
    for journal in journals:
        try:
            saved = store.recover(journal)
        except LatestNotUpdated as exc:
            saved = exc.saved
            _say(f"warning: {exc}")
        except ResultFileError as exc:  # one journal that cannot be read: say so, recover the others
            failed += 1
            _say(f"error: not recovered: {exc}")
            continue
        report = load_report(saved)
        trials = sum(len(c.trials) for c in report.cases)
        _say(f"recovered {saved}: {trials} finished trial(s) of {len(report.cases)} test(s), "
             f"{len(report.unfinished_cases)} test(s) not started; status {report.status}", err=False)
    if failed:
        sys.exit(EXIT_USAGE)
