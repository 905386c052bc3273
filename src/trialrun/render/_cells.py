"""How every table shows the numbers a reader can misread: one rule a number, for the terminal, Markdown, the HTML
report and the viewer alike.

- A failed test says what failed it beside its score (`FAIL never_ran`): a score of 1.00 next to FAIL is a
  contradiction until the row names the grader outside the score that failed.
- Output quality is shown out of its maximum (`0.5/0.5`): 0.5 is full marks, not half of them.
- pass^k is shown only where k > 1: with one trial it is pass@1 again, and printing both suggests a second measure.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..expect.rubric import QUALITY_MAX
from ..report._why import failed_by
from ..report.results import CaseResult, RunReport

__all__ = ["QUALITY_MAX", "quality", "short_number", "result_word", "shows_pass_pow_k", "run_k", "sub_scores_text"]


def short_number(value: float) -> str:
    """At most two decimals, without trailing zeros: 0.5, 0.25, 0.42, 0."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def quality(value: float | None) -> str:
    """Output quality out of its maximum: `0.5/0.5`, `0.25/0.5`, `0/0.5`; `–` for none."""
    return "–" if value is None else f"{short_number(value)}/{short_number(QUALITY_MAX)}"


def sub_scores_text(subs: dict[str, float] | None) -> list[tuple[str, str]]:
    """(name, shown value) of each sub-score: two decimals, output quality out of its maximum."""
    return [(name, quality(value) if name == "output_quality" else f"{value:.2f}") for name, value in (subs or {}).items()]


def result_word(case: CaseResult) -> str:
    """`PASS`, or `FAIL` with what failed it (`FAIL never_ran`, `FAIL score`, `FAIL invoke error`)."""
    if case.passed:
        return "PASS"
    why = failed_by(case)
    return f"FAIL {why}" if why else "FAIL"


def shows_pass_pow_k(trials: int) -> bool:
    """pass^k means something only for k > 1 trials."""
    return trials > 1


def run_k(report: RunReport) -> int:
    """The k of a run's pass^k: the most trials any graded case ran (the requested count when none ran)."""
    return _most((case.trial_count for case in report.graded_cases), report.trial_count)


def _most(counts: Iterable[int], default: int) -> int:
    counts = list(counts)
    return max(counts) if counts else default
