"""A CLI run's records from start to end, so that no run is lost: its name reserved and its journal opened before
the first trial, every finished trial journalled (and its raw exchanges appended to the run's exchanges sidecar,
`report.exchanges`), the result file saved under the reserved name, and, when the results folder cannot take it (full,
read-only), a fallback file in the temp folder that the message names."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .._scrub import secrets_version
from ..report.exchanges import DEFAULT_MAX_TRIAL_BYTES, ExchangeLog, sidecar_path
from ..report.journal import Journal, case_plan
from ..report.results import RunReport, TrialResult
from ..report.store import LatestNotUpdated, ResultFileError, ResultsStore, has_finished, load_report, report_text

__all__ = ["RunRecorder"]


def _nothing_finished(journal: Path) -> bool:
    """A dead journal of a run that was interrupted before any trial finished (read only when small: such a journal
    is its start line and its end line)."""
    try:
        if journal.stat().st_size > 1 << 20:
            return False
        return not has_finished(load_report(journal))
    except (OSError, ResultFileError):
        return False


def _problem(exc: OSError) -> str:
    where = f"{os.fsdecode(exc.filename)}: " if exc.filename else ""
    return where + (exc.strerror or str(exc))


class RunRecorder:
    """Reserve, journal, save. Build with `start`; every method is safe to call when the journal failed."""

    def __init__(self, store: ResultsStore, stem: str, journal: Journal | None) -> None:
        self.store = store
        self.stem = stem
        self.journal = journal
        self.run_id = f"eval_{stem.removeprefix('results_')}"
        self.notes: list[str] = []
        self.warnings: list[str] = []
        self.save_problem = ""
        #: The run's exchanges sidecar, None when it keeps none (`exchanges = false`, --no-exchanges).
        self.exchanges: ExchangeLog | None = None
        #: Each journalled trial's JSON (scrubbed), by the id of its TrialResult (held, so the id stays its own): the
        #: result file reuses it instead of serialising and scrubbing every trial again.
        self._trial_texts: dict[int, tuple[TrialResult, str, object]] = {}

    @classmethod
    def start(cls, store: ResultsStore, cases: Sequence[Any], *, trials: int, include_live_canary: bool,
              config_snapshot: dict[str, Any], exchanges: bool = True,
              exchanges_max_bytes: int = DEFAULT_MAX_TRIAL_BYTES) -> RunRecorder:
        """Clean up after runs killed while writing, reserve this run's name and write the journal's start line
        (and the exchanges sidecar's, unless `exchanges` is off: the log is the runner's `on_exchanges`, for local
        trials and Ray-executed ones alike)."""
        from .runner import select_cases

        removed = store.remove_stale_temps()
        started = datetime.now(timezone.utc)
        stem, journal = store.reserve(started)
        recorder = cls(store, stem, journal)
        if removed:
            recorder.notes.append(f"removed {len(removed)} temp file(s) a killed run left in {store.directory}")
        unfinished = store.unfinished()
        early = [path for path in unfinished if _nothing_finished(path)]
        for paths, how in (([p for p in unfinished if p not in early], "did not finish (killed?)"),
                           (early, "were interrupted before any test finished")):
            if paths:
                names = ", ".join(p.name for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
                recorder.notes.append(f"{len(paths)} run(s) {how}: {names}; `trialrun recover` saves them as result "
                                      "files")
        _, skipped = select_cases(list(cases), include_live_canary=include_live_canary)
        reasons = {case.name: reason for case, reason in skipped}
        plans = [case_plan(case, trials, skip_reason=reasons.get(case.name)) for case in cases]
        journal.start(run_id=recorder.run_id, started_at=started, trial_count=trials, cases=plans,
                      config_snapshot=config_snapshot)
        if exchanges:
            recorder.exchanges = ExchangeLog.open(sidecar_path(store.directory / stem), run_id=recorder.run_id,
                                                  max_trial_bytes=exchanges_max_bytes)
        return recorder

    def trial(self, case: Any, result: TrialResult) -> None:
        if self.journal is not None:
            version = secrets_version()  # before the scrub: a secret registered meanwhile makes the text stale
            self._trial_texts[id(result)] = (result, self.journal.append(case.name, result), version)

    def abandon(self) -> str:
        """The run is given up on (a second Ctrl-C): keep the journal as it is, for `trialrun recover`."""
        if self.exchanges is not None:
            self.exchanges.close()
        if self.journal is None:
            return "this run was not saved"
        self.journal.close(None)
        return f"the journal {self.journal.path} keeps its {self.journal.trials} finished trial(s): `trialrun recover` saves them"

    def keep(self, report: RunReport) -> Path | None:
        """The run was interrupted before any trial finished: it gets no result file and latest.json is left as it
        is (`store.has_finished`); its journal stays, ended as interrupted, for `trialrun recover` (the path, None
        when there is none)."""
        if self.exchanges is not None:
            self.exchanges.close()
            if not self.exchanges.trials:
                self.exchanges.remove()
        if self.journal is None:
            return None
        self.journal.close(report.status)
        return self.journal.path

    def drop(self) -> None:
        """The run failed before it could be saved: a journal with trials stays (for `recover`), an empty one goes."""
        if self.journal is not None:
            if self.journal.trials:
                self.journal.close(None)
            else:
                self.journal.remove()
        if self.exchanges is not None:
            if self.exchanges.trials:
                self.exchanges.close()
            else:
                self.exchanges.remove()

    def save(self, report: RunReport) -> tuple[Path | None, Path | None]:
        """Save under the reserved name: (the result file, None); when the results folder cannot take it,
        (None, a fallback file in the temp folder), or (None, None) when not even that could be written."""
        journal = self.journal
        if journal is not None:
            journal.close(report.status, rescrub=False)  # removed once the result file is saved
            if journal.problem:
                self.warnings.append(f"the journal stopped: {journal.problem}")
        if self.exchanges is not None:
            self.exchanges.close()
            if self.exchanges.problem:
                self.warnings.append(f"raw exchanges not kept: {self.exchanges.problem}")
        try:
            saved = self.store.save(report, stem=self.stem, trial_texts=self._trial_texts)
        except LatestNotUpdated as exc:  # saved; only the pointer to it failed
            saved = exc.saved
            self.warnings.append(str(exc))
        except OSError as exc:
            self.save_problem = _problem(exc)
            if journal is not None:
                journal.rescrub_if_stale()  # it stays: what `trialrun recover` reads
            return None, self._fallback(report)
        if journal is not None:
            journal.remove()
        if self.exchanges is not None and saved.name != f"{self.stem}.json":
            self.exchanges.rename(sidecar_path(saved))  # the reserved name was taken meanwhile
        return saved, None

    def _fallback(self, report: RunReport) -> Path | None:
        try:
            fd, name = tempfile.mkstemp(prefix=f"trialrun-{self.stem}-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(report_text(report))  # scrubbed, as every result file
        except OSError as exc:
            self.save_problem += f"; the temp folder failed too ({_problem(exc)})"
            return None
        return Path(name)
