"""The eval skill's score: tool accuracy + turn efficiency + output quality, clamped to 1.0.

    tool_accuracy   = |expected_tools ∩ used_tools| / |expected_tools|   (1.0 when nothing is expected;
                      extra tools do not lower it)
    turn_efficiency = 1.0 if turns <= max_turns else max_turns / turns   (1.0 when there is no budget)
    output_quality  = 0, 0.25 or 0.5 against success_criteria
    total           = min(tool_accuracy + turn_efficiency + output_quality, 1.0); passes when >= the threshold

Output quality is judged, by default, by a documented deterministic heuristic (`heuristic_quality`); by an LLM
judge when one is given (any callable returning 0, 0.25 or 0.5, see `trialrun.judge`); or later by hand
(`trialrun grade RUN TEST_ID 0.25`). An empty response, or a run that ended in an error, has no answer to judge:
its output_quality is 0 whoever judges (the judge is not asked). The total can still reach the threshold on tool
accuracy and turn efficiency alone, as the formula says; a run that ended in an error fails its trial on that
error (the runner records it), and `trialrun compare` warns when a passing test starts failing at the same score.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Sequence


from ..trajectory import Run
from ._base import Grader, Verdict, clip, output_text

__all__ = ["rubric", "score_parts", "heuristic_quality", "key_terms", "QUALITY_LEVELS", "combine"]

QUALITY_LEVELS = (0.0, 0.25, 0.5)

_STOPWORDS = frozenset(
    """a an the and or but if then than that this these those there their they them it its of to in on at by for
    from with without into onto over under about as is are was were be been being do does did done has have had
    not no nor so such very can could should would will shall may might must also any all each every both either
    some more most less least much many few own same other another what which who whom whose when where why how
    response answer answers user users agent output mentions mention says say said reply replies correctly correct
    fully full clearly clear should include includes including contains contain using uses used use""".split()
)

Judge = Callable[[str, str, Run], "float | Awaitable[float]"]


def key_terms(criteria: str) -> list[str]:
    """The words of the criteria that carry meaning: lower-cased, 3+ letters or any number, stopwords dropped."""
    words = re.findall(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[0-9]", criteria.lower())
    return list(dict.fromkeys(w for w in words if w not in _STOPWORDS and (len(w) >= 3 or w.isdigit())))


def _stem(word: str) -> str:
    return word[:5] if len(word) > 5 else word


def heuristic_quality(criteria: str, response: str, run: Run | None = None) -> tuple[float, str]:
    """0, 0.25 or 0.5, and why. Deterministic:

    - 0 when the response is empty, or the run ended in an error;
    - without criteria, 0.5 for any non-empty response;
    - else by the share of the criteria's key terms found in the response (a term counts when the response has a
      word starting with the term's first five letters, so "summarise" finds "summary"): >= 60% gives 0.5,
      >= 25% gives 0.25, less gives 0.
    """
    no_answer = _no_answer(response, run)
    if no_answer:
        return 0.0, no_answer
    terms = key_terms(criteria)
    if not terms:
        return 0.5, "no criteria terms to check; the response is not empty"
    words = re.findall(r"[a-z0-9][a-z0-9_.\-/]*[a-z0-9]|[0-9]", response.lower())
    stems = {_stem(w) for w in words}
    found = [t for t in terms if t in words or _stem(t) in stems or any(w.startswith(_stem(t)) for w in words)]
    share = len(found) / len(terms)
    level = 0.5 if share >= 0.6 else 0.25 if share >= 0.25 else 0.0
    missing = [t for t in terms if t not in found]
    more = f", +{len(missing) - 6} more" if len(missing) > 6 else ""
    return level, f"{len(found)}/{len(terms)} criteria terms found" + (f" (missing: {', '.join(missing[:6])}{more})" if missing else "")


def _no_answer(response: str, run: Run | None) -> str | None:
    """Why there is no answer to judge (0 whoever judges), or None."""
    if run is not None and run.status == "error":
        return f"the run ended in an error: {run.error or 'unknown'}"
    if not response.strip():
        return "the response is empty"
    return None


def score_parts(expected_tools: Sequence[str], used_tools: Sequence[str], max_turns: int | None, turns: int) -> tuple[float, float]:
    """tool_accuracy and turn_efficiency, exactly as the eval skill defines them."""
    expected = set(expected_tools)
    tool_accuracy = len(expected & set(used_tools)) / len(expected) if expected else 1.0
    if max_turns is None or turns <= max_turns:
        turn_efficiency = 1.0
    else:
        turn_efficiency = max_turns / turns
    return tool_accuracy, turn_efficiency


def combine(tool_accuracy: float, turn_efficiency: float, output_quality: float) -> float:
    return min(tool_accuracy + turn_efficiency + output_quality, 1.0)


def rubric(
    *,
    expected_tools: Sequence[str] = (),
    max_turns: int | None = None,
    success_criteria: str = "",
    threshold: float = 0.7,
    judge: Judge | None = None,
) -> Grader:
    """The eval skill's score as a grader: passes when the total is >= threshold. The verdict's `score` is the
    total and `details["sub_scores"]` holds tool_accuracy, turn_efficiency and output_quality."""
    label = f"rubric(expected_tools={list(expected_tools)!r}, max_turns={max_turns!r}, threshold={threshold:g})"

    def verdict(run: Run, quality: float, why: str) -> Verdict:
        trajectory = run.trajectory
        accuracy, efficiency = score_parts(expected_tools, trajectory.tools_used, max_turns, len(trajectory.turns))
        total = combine(accuracy, efficiency, quality)
        parts = {"tool_accuracy": accuracy, "turn_efficiency": efficiency, "output_quality": quality}
        missing = sorted(set(expected_tools) - set(trajectory.tools_used))
        reason = (
            f"score {total:.2f} ({'>=' if total >= threshold else '<'} {threshold:g}): tool_accuracy {accuracy:.2f}"
            + (f" (never used: {', '.join(missing)})" if missing else "")
            + f", turn_efficiency {efficiency:.2f} ({len(trajectory.turns)} turns, budget {max_turns if max_turns is not None else 'none'})"
            + f", output_quality {quality:g} ({why})"
        )
        return Verdict(total >= threshold, label, reason, score=total, details={"sub_scores": parts, "threshold": threshold,
                                                                                "quality_by": "judge" if judge else "heuristic"})

    if judge is None:
        def grade(run: Run, ctx: object) -> Verdict:
            quality, why = heuristic_quality(success_criteria, output_text(run.output), run)
            return verdict(run, quality, why)

        return Grader(label, grade, "score")

    async def judged(run: Run, ctx: object) -> Verdict:
        response = output_text(run.output)
        no_answer = _no_answer(response, run)
        if no_answer:  # nothing to judge: 0, without spending a judge call
            return verdict(run, 0.0, no_answer)
        result = judge(success_criteria, response, run)
        if inspect.isawaitable(result):
            result = await result
        quality = min(QUALITY_LEVELS, key=lambda level: abs(level - float(result)))
        return verdict(run, quality, f"judged {quality:g} against: {clip(success_criteria, 80)}")

    return Grader(label, judged, "score")


