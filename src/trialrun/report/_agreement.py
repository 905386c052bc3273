"""How often each judge of output quality (the heuristic, an LLM judge) agreed with the people who graded by hand:
agreement and Cohen's kappa per judge, so users know when to trust a judge.

A pair is one trial graded by hand whose judge's own grade was kept (`hand_grade.machine`, see `_grading`): the
person's grade, placed on the judges' scale (the nearest of 0, 0.25, 0.5: a hand grade may be finer), against the
judge's. A trial counted once per judge: the same hand grade carried onto regrades by the same judge is one pair
(keyed by the run it was first made in), and a regrade by another judge adds that judge's pair.

Cohen's kappa (Cohen 1960) is the agreement beyond what two raters with these marginals would reach by chance:
    kappa = (p_o - p_e) / (1 - p_e),  p_o = agreed / n,  p_e = sum over levels c of (judge's share of c) * (person's share of c)
It is undefined (None) when p_e = 1: both gave every trial the same one level, so chance explains everything.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from ..expect.rubric import nearest_level
from ._grading import graded_by_hand, rubric_verdicts
from .results import RunReport

__all__ = ["Pair", "JudgeAgreement", "hand_pairs", "cohen_kappa", "agreement"]


@dataclass(frozen=True)
class Pair:
    """One trial graded by hand beside its judge's grade."""

    judge: str
    machine: float
    human: float
    origin: str
    test: str
    trial: int


@dataclass(frozen=True)
class JudgeAgreement:
    """One judge against the people: n pairs, how many agreed (on the judges' 0/0.25/0.5 scale), Cohen's kappa
    (None when undefined), and the mean absolute difference of the grades themselves."""

    judge: str
    n: int
    agreed: int
    kappa: float | None
    mean_difference: float

    @property
    def agreement(self) -> float:
        return self.agreed / self.n if self.n else 0.0


def cohen_kappa(first: Sequence[Hashable], second: Sequence[Hashable]) -> float | None:
    """Cohen's kappa of two raters' labels for the same items (None when undefined: no items, or chance agreement
    1). ValueError when the sequences differ in length."""
    if len(first) != len(second):
        raise ValueError(f"two raters must label the same items: {len(first)} labels against {len(second)}")
    n = len(first)
    if n == 0:
        return None
    observed = sum(1 for a, b in zip(first, second) if a == b) / n
    counts_a, counts_b = Counter(first), Counter(second)
    expected = sum(counts_a[label] * counts_b[label] for label in counts_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def hand_pairs(report: RunReport) -> list[Pair]:
    """The run's trials graded by hand whose judge's own grade is known."""
    pairs = []
    for case in report.cases:
        for trial in case.trials:
            for verdict in rubric_verdicts(trial):
                if not graded_by_hand(verdict):
                    continue
                audit = (verdict.details or {}).get("hand_grade")
                machine = audit.get("machine") if isinstance(audit, dict) else None
                human = (verdict.details or {})["sub_scores"].get("output_quality")
                if not isinstance(machine, dict) or not isinstance(machine.get("quality"), (int, float)) \
                        or not isinstance(human, (int, float)):
                    continue
                origin = str(audit.get("origin") or report.run_id or "")  # type: ignore[union-attr]
                pairs.append(Pair(str(machine.get("by", "judge")), float(machine["quality"]), float(human), origin,
                                  case.name, trial.trial))
                break
    return pairs


def agreement(reports: Iterable[RunReport]) -> list[JudgeAgreement]:
    """Each judge's agreement with the hand grades of `reports` (a run, or every run of a folder), judges in the
    order first met."""
    seen: dict[tuple[str, str, str, int], Pair] = {}
    for report in reports:
        for pair in hand_pairs(report):
            seen.setdefault((pair.judge, pair.origin, pair.test, pair.trial), pair)
    by_judge: dict[str, list[Pair]] = {}
    for pair in seen.values():
        by_judge.setdefault(pair.judge, []).append(pair)
    found = []
    for judge, pairs in by_judge.items():
        machine = [nearest_level(p.machine) for p in pairs]
        human = [nearest_level(p.human) for p in pairs]
        found.append(JudgeAgreement(judge, len(pairs), sum(1 for a, b in zip(machine, human) if a == b),
                                    cohen_kappa(machine, human),
                                    sum(abs(p.machine - p.human) for p in pairs) / len(pairs)))
    return found
