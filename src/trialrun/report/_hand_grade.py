"""Setting a test's output quality by hand: the ONE way `trialrun grade` and the viewer's grade form write it.

Both go through `grade_by_hand`, so a grade from the browser is the same edit as one from the terminal: the same
result file rewritten atomically (`ResultsStore.rewrite`), the same recomputation of score and pass
(`results.regrade_output_quality`), the same audit in each rubric verdict (who, when, the value it replaced, a
comment), and the same refusal while the run is still being written (its journal is locked).
"""

from __future__ import annotations

import getpass
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .results import CaseResult, RunReport, regrade_output_quality
from .store import ResultsStore, load_report

__all__ = ["HandGrade", "GradeRefused", "grade_by_hand", "who", "MAX_COMMENT"]

#: A comment is a note, not a document: longer ones are refused (the form says so).
MAX_COMMENT = 2000

#: One grade at a time in this process: two browser tabs grading the same run never interleave their read and write.
_LOCK = threading.Lock()


class GradeRefused(ValueError):
    """A grade that cannot be written now (the run is in progress), said in a sentence."""


@dataclass(frozen=True)
class HandGrade:
    """What a hand grade changed: the file, the case before and after, and the run after."""

    path: Path
    test: str
    quality: float
    before: CaseResult
    after: CaseResult
    report: RunReport


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


def grade_by_hand(store: ResultsStore, path: Path, test_id: str, quality: float, *, by: str, comment: str = "",
                  via: str = "cli") -> HandGrade:
    """Set `test_id`'s output_quality to `quality` in the result file `path` and return what changed. Raises
    GradeRefused while the run is live, KeyError for an unknown test, ValueError for a level or test that cannot be
    graded (each with a sentence naming the run and test)."""
    comment = "".join(ch for ch in comment if ch.isprintable() or ch in "\n\t").strip()
    if len(comment) > MAX_COMMENT:
        raise ValueError(f"the comment is {len(comment)} characters; at most {MAX_COMMENT}")
    with _LOCK:
        if _live(path):
            raise GradeRefused(f"run {path.name.split('.')[0]} is still in progress (its journal is being written); "
                               "grade it when it has finished")
        original = load_report(path)
        audit = {"by": by, "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "via": via,
                 **({"comment": comment} if comment else {})}
        updated = regrade_output_quality(original, test_id, float(quality), audit)
        target = store if path.parent == store.directory else ResultsStore(path.parent)
        target.rewrite(path.resolve() if path.is_symlink() else path, updated)
    return HandGrade(path, test_id, float(quality), original.case(test_id), updated.case(test_id), updated)
