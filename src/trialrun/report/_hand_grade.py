"""A person's grades written into a result file: the ONE way `trialrun grade` and the viewer's forms write them.

Both go through `grade_by_hand` (output quality, one trial or every trial of a test) and `override_by_hand` (a
verdict's pass/fail, with a reason), so a grade from the browser is the same edit as one from the terminal: the
edit itself (`_grading`), the trial judged again by the one rule, the same audit (who, when, via, what it replaced),
and the same file handling: under the results folder's write lock (`ResultsStore.write_lock`, across processes)
from the read to the atomic rewrite, so graders at once never lose each other's grade; refused while the run is
still being written (its journal is locked), for a result file that is a symbolic link or outside the folder.
"""

from __future__ import annotations

import getpass
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .results import CaseResult, RunReport
from .store import ResultsStore, load_report

__all__ = ["HandGrade", "GradeRefused", "grade_by_hand", "override_by_hand", "who", "MAX_COMMENT"]

#: A comment (or an override's reason) is a note, not a document: longer ones are refused (the form says so).
MAX_COMMENT = 2000


class GradeRefused(ValueError):
    """A grade that cannot be written now (the run is in progress), said in a sentence."""


@dataclass(frozen=True)
class HandGrade:
    """What a hand grade or override changed: the file, the test before and after, the run after, the trials."""

    path: Path
    test: str
    quality: float | None
    before: CaseResult
    after: CaseResult
    report: RunReport
    trials: list[int] = field(default_factory=list)
    grader: str | None = None


def who() -> str:
    """The person grading: the login name of this process (a grade made on a shared viewer is still its owner's)."""
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container without a passwd entry): say so, never fail
        return "unknown"


def _live(path: Path) -> bool:
    from .journal import is_live

    journal = path.with_name(path.name.split(".")[0] + ".jsonl")
    return journal.exists() and is_live(journal)


def _note(text: str, what: str = "the comment") -> str:
    text = "".join(ch for ch in text if ch.isprintable() or ch in "\n\t").strip()
    if len(text) > MAX_COMMENT:
        raise ValueError(f"{what} is {len(text)} characters; at most {MAX_COMMENT}")
    return text


def _audit(by: str, via: str, **notes: str) -> dict[str, Any]:
    return {"by": by, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "via": via,
            **{key: value for key, value in notes.items() if value}}


def result_file(store: ResultsStore, path: Path) -> Path:
    """The result file a grade of `path` rewrites: latest.json stands for the run it links to or copies (a copy is
    rewritten when its run is), every other path for itself."""
    from .store import LATEST, ResultFileError

    if path.name != LATEST:
        return path
    if path.is_symlink():
        return store.resolve("latest")
    run_id = load_report(path).run_id
    if not run_id:
        raise ResultFileError(f"{path}: a copy of a run with no run_id; grade the result file itself", path=path)
    return store.resolve(run_id)


def edit_result(store: ResultsStore, path: Path, edit: Callable[[RunReport], RunReport]) -> tuple[RunReport, RunReport]:
    """Read the result file `path` of `store`'s folder, `edit` it and write it back, all under the folder's write
    lock: (before, after). Raises GradeRefused while the run is live, ResultFileError for a file that cannot be
    rewritten in place (a link, outside the folder) or written (a full disk: the file and folder named)."""
    store.writable(path)
    with store.write_lock():
        if _live(path):
            raise GradeRefused(f"run {path.name.split('.')[0]} is still in progress (its journal is being written); "
                               "grade it when it has finished")
        original = load_report(path)
        updated = edit(original)
        store.rewrite(path, updated)
    return original, updated


def grade_by_hand(store: ResultsStore, path: Path, test_id: str, quality: float, *, by: str, comment: str = "",
                  via: str = "cli", trial: int | None = None) -> HandGrade:
    """Set `test_id`'s output_quality to `quality` (0 to 0.5 in steps of 0.05) in trial `trial`, or in every trial
    that was graded, of the result file `path`, and return what changed. Raises GradeRefused while the run is live,
    KeyError for an unknown test or trial, ValueError for a grade or test that cannot be graded (each with a
    sentence naming the run and test)."""
    from ._grading import set_quality

    audit = _audit(by, via, comment=_note(comment))
    changed: list[int] = []

    def edit(report: RunReport) -> RunReport:
        updated, trials = set_quality(report, test_id, float(quality), audit, trial=trial)
        changed.extend(trials)
        return updated

    before, after = edit_result(store, path, edit)
    return HandGrade(path, test_id, float(quality), before.case(test_id), after.case(test_id), after, changed)


def override_by_hand(store: ResultsStore, path: Path, test_id: str, grader: str, passed: bool | None, *, by: str,
                     reason: str = "", via: str = "cli", trial: int | None = None) -> HandGrade:
    """Set the verdict `grader` names (its label, or a part of it only it has) in test `test_id` to pass or fail
    (`passed` None: back to the grader's own verdict), with `reason`, in trial `trial` or every trial that has it."""
    from ._grading import override

    audit = _audit(by, via, reason=_note(reason, "the reason"))
    changed: list[int] = []
    labels: list[str] = []

    def edit(report: RunReport) -> RunReport:
        updated, trials, label = override(report, test_id, grader, passed, audit, trial=trial)
        changed.extend(trials)
        labels.append(label)
        return updated

    before, after = edit_result(store, path, edit)
    return HandGrade(path, test_id, None, before.case(test_id), after.case(test_id), after, changed, labels[0])
