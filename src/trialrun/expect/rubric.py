"""The eval skill's score: tool accuracy, turn efficiency and output quality, combined by a rubric.

    tool_accuracy   = |expected_tools ∩ used_tools| / |expected_tools|   (1.0 when nothing is expected;
                      extra tools do not lower it)
    turn_efficiency = 1.0 if turns <= max_turns else max_turns / turns   (1.0 when there is no budget; 0 when
                      there is one and no model traffic was observed: no turns seen is not 0 turns taken)
    output_quality  = 0, 0.25 or 0.5 against success_criteria (by hand: 0 to 0.5 in steps of 0.05)

The sub-scores are the skill's under every rubric; the rubric (`RUBRICS`) only says how they make the total:

    "balanced" (the default)  total = (tool_accuracy + turn_efficiency + 2 * output_quality) / 3
    "skill"                   total = min(tool_accuracy + turn_efficiency + output_quality, 1.0)

A test passes when the total is >= the threshold (0.7). The skill's formula, taken literally, passes an agent that
stays within `max_turns` on turn efficiency alone (1.0 + anything clamps to 1.0): an agent that answers "No." in one
turn without calling a tool scores 1.00. The balanced rubric counts each part a third, so that agent scores 0.33
and fails, the right tools within budget with a useless answer score 0.67 and fail, and everything right but twice
over the turn budget scores 0.83 and passes.

Output quality is judged, by default, by a documented deterministic heuristic (`heuristic_quality`); by an LLM
judge when one is given (any callable returning 0, 0.25 or 0.5, see `trialrun.suite.judge`); or later by hand
(`trialrun grade RUN TEST_ID 0.25`). An empty response, or a run that ended in an error, has no answer to judge:
its output_quality is 0 whoever judges (the judge is not asked).

A test with a `verify` command (`expect.verify`: the task's own test run in the workdir after the agent ends) has
its success criteria made executable: its output_quality comes from the verifier instead of the words of the
answer (nor the judge's opinion of them): 0.5 when it passes, 0 when it fails, and the reason says so. Tool
accuracy is unchanged (the skill's |expected_tools ∩ used_tools| / |expected_tools|), so the two combine by the
rubric's formula: under "balanced" a fix that the verifier passes scores (tool_accuracy + turn_efficiency + 1) / 3,
which is >= 0.7 whenever tool_accuracy + turn_efficiency >= 1.1, and a fix it fails scores at most 0.67 and fails.
So list in `expected_tools` only the tools a correct path must use: a test that expects `["edit"]` and gets a
correct fix by `sed -i` through `bash` scores (0 + 1 + 1) / 3 = 0.67 and fails; one that expects `["bash"]` (or
nothing, when any path that passes the verifier is right) passes it with 1.00. And `verify` is also a grader of
its own: a failed verifier fails the trial whatever the score.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Awaitable, Callable, Sequence

from ..trajectory import CallOutcome, Run, observed_nothing
from ._base import Grader, Verdict, clip, flag_arg, number_label, output_text, short_label
from ._calls import INVISIBLE, agent_outcomes, counting, invisible, not_counted, split

__all__ = ["rubric", "score_parts", "heuristic_quality", "key_terms", "QUALITY_LEVELS", "QUALITY_MAX", "HAND_STEP",
           "hand_quality", "nearest_level", "combine", "RUBRICS",
           "DEFAULT_RUBRIC", "passes", "turn_count", "offered_tools"]

QUALITY_LEVELS = (0.0, 0.25, 0.5)
#: A person grading by hand may say more than a judge's three levels: any multiple of HAND_STEP from 0 to
#: QUALITY_MAX ("0.4: right, but missed one file"); the judges' levels are among them.
QUALITY_MAX = 0.5
HAND_STEP = 0.05
#: How the sub-scores make the total: the name (trialrun.toml's `rubric`, `--rubric`) -> what it computes.
RUBRICS = {
    "balanced": "(tool_accuracy + turn_efficiency + 2 * output_quality) / 3",
    "skill": "min(tool_accuracy + turn_efficiency + output_quality, 1.0)",
}
DEFAULT_RUBRIC = "balanced"
_EPSILON = 1e-9  # (0.6 + 1.0 + 0.5) / 3 is 0.7 on paper, 0.6999999999999998 in binary floating point

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


def hand_quality(value: float) -> float:
    """A hand grade of output quality, checked: from 0 to QUALITY_MAX in steps of HAND_STEP (0.35, not 0.333).
    ValueError saying the scale otherwise."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    steps = round(value / HAND_STEP) if number else -1
    if not 0 <= steps <= round(QUALITY_MAX / HAND_STEP) or abs(steps * HAND_STEP - value) > _EPSILON:
        raise ValueError(f"output quality is graded from 0 to {QUALITY_MAX:g} in steps of {HAND_STEP:g} (0 irrelevant "
                         f"or hallucinated, 0.25 partly right, 0.5 fully right), got {value!r}")
    return round(steps * HAND_STEP, 2)


def nearest_level(value: float) -> float:
    """The judges' level (0, 0.25, 0.5) nearest a finer grade: how a hand grade is compared with a judge's."""
    return min(QUALITY_LEVELS, key=lambda level: abs(level - value))
async def _verdict_of(grader: Grader, run: Run, ctx: object) -> tuple[Verdict, str]:
    """The verdict of the grader output quality comes from (a verify: run once a trial, its grader then reuses it).
    In a regrade, where it cannot run again, the run's own verdict of it, said so; else its exception goes on."""
    try:
        result = grader.fn(run, ctx)
        if inspect.isawaitable(result):
            result = await result
    except Exception:
        kept = getattr(ctx, "kept_verdict", None)
        before = kept(grader.label) if kept is not None else None
        if before is None:
            raise
        return before, " (as the run judged it: not run again)"
    if isinstance(result, bool):
        result = Verdict(result, grader.label, "returned True" if result else "returned False")
    if not isinstance(result, Verdict):
        raise TypeError(f"{grader.label} returned {type(result).__name__}; the rubric's quality needs a Verdict")
    return result, ""


def score_parts(expected_tools: Sequence[str], used_tools: Sequence[str], max_turns: int | None, turns: int) -> tuple[float, float]:
    """tool_accuracy and turn_efficiency, exactly as the eval skill defines them."""
    expected = set(expected_tools)
    tool_accuracy = len(expected & set(used_tools)) / len(expected) if expected else 1.0
    if max_turns is None or turns <= max_turns:
        turn_efficiency = 1.0
    else:
        turn_efficiency = max_turns / turns
    return tool_accuracy, turn_efficiency


def combine(tool_accuracy: float, turn_efficiency: float, output_quality: float, formula: str = DEFAULT_RUBRIC) -> float:
    """The total of the three sub-scores under a rubric (`RUBRICS`)."""
    if formula == "balanced":
        return (tool_accuracy + turn_efficiency + 2 * output_quality) / 3
    if formula == "skill":
        return min(tool_accuracy + turn_efficiency + output_quality, 1.0)
    raise ValueError(f"unknown rubric {formula!r}; known: {', '.join(RUBRICS)}")


def passes(total: float, threshold: float) -> bool:
    """The total reaches the pass mark (a total equal to it on paper passes, whatever floating point says)."""
    return total >= threshold - _EPSILON


def turn_count(run: Run) -> int:
    """The turns turn efficiency counts: the model responses of the run's MAIN conversation (a title request or a
    sub-agent is not a turn; the one place that decides it)."""
    return len(run.trajectory.turns)


def offered_tools(run: Run) -> list[str] | None:
    """The tool names the agent offered the model (read off the wire, or the reference agent's own), or None when
    no model request was seen, so nothing is known about what was offered."""
    trajectory = run.trajectory
    if not trajectory.offered_tools and not trajectory.model_calls:
        return None
    return list(trajectory.offered_tools)


def _used_tools(run: Run, include_refused: bool = False) -> tuple[list[str], str, list[CallOutcome]]:
    """The tools tool accuracy credits, first use first, with what it counted and left out (reason notes): those
    that RAN in the main conversation or a sub-agent's (`Trajectory.outcomes`; refused ones too with
    include_refused), none when no request offered a tool (a text protocol's calls are not visible). The model
    asking is not the agent running it; the same rule as `expect.called`."""
    counted, left = split(agent_outcomes(run.trajectory), include_refused)
    used = list(dict.fromkeys(o.call.name for o in counted))
    return used, counting(counted), left


def _unseen_note(missing: Sequence[str], run: Run, left: Sequence[CallOutcome]) -> str:
    """Why an expected tool the model did ask for is not credited (a text protocol, a refusal, a call never
    answered)."""
    if not missing:
        return ""
    if invisible(run.trajectory) and any(c.name in missing for c in run.trajectory.all_tool_calls):
        return f" (not credited: {INVISIBLE})"
    note = not_counted([o for o in left if o.call.name in missing])
    return f" ({note[2:]})" if note else ""


def _tool_note(missing: Sequence[str], run: Run, left: Sequence[CallOutcome] = ()) -> str:
    """Why tool accuracy is short: the expected tools never used (a call left out, such as a refused one, is named
    by `_unseen_note` instead), and which of them were never even offered."""
    if not missing:
        return ""
    offered = offered_tools(run)
    tried = {o.call.name for o in left}
    absent = [name for name in missing if offered is not None and name not in offered]
    unused = [name for name in missing if name not in absent and name not in tried]
    parts = [f"never used: {', '.join(unused)}"] if unused else []
    if absent:
        shown = ", ".join(offered or []) or "no tools"
        parts.append(f"{', '.join(repr(name) for name in absent)} {'was' if len(absent) == 1 else 'were'} never offered "
                     f"to the model (offered: {shown})")
    return f" ({'; '.join(parts)})"


def _turn_note(turns: int, max_turns: int | None, unseen: bool) -> str:
    """What turn efficiency counted, against which budget; or that no traffic was seen to count."""
    if unseen and max_turns is not None:
        return f"no model traffic was observed, so the budget of {max_turns} was not checked"
    seen = " seen: no model traffic was observed" if unseen else ""
    return f"{turns} turn{'s' if turns != 1 else ''}{seen}, budget {max_turns if max_turns is not None else 'none'}"


def _label(expected_tools: Sequence[str], max_turns: int | None, threshold: float, formula: str,
           success_criteria: str, judge: Judge | None, include_refused: bool, quality_from: Grader | None = None) -> str:
    """The rubric's label: every option that changes its score, those at their default left out."""
    parts = [f"expected_tools={list(expected_tools)!r}", f"max_turns={max_turns!r}", f"threshold={number_label(threshold)}"]
    if formula != DEFAULT_RUBRIC:
        parts.append(f"formula={formula!r}")
    if success_criteria:
        parts.append(f"success_criteria={short_label(repr(success_criteria), 60)}")
    if judge is not None:
        name = getattr(judge, "__qualname__", None) or type(judge).__name__
        parts.append(f"judge={name.split('.<locals>', 1)[0]}")
    if include_refused:
        parts.append("include_refused=True")
    if quality_from is not None:
        parts.append(f"quality_from={quality_from.label}")
    return f"rubric({', '.join(parts)})"


def _check_options(formula: str, threshold: float, include_refused: bool, quality_from: Grader | None) -> None:
    """The rubric's options, checked when it is built (a wrong one fails before anything runs)."""
    if formula not in RUBRICS:
        raise ValueError(f"unknown rubric {formula!r}; known: {', '.join(RUBRICS)}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"expect.rubric: threshold must be above 0 and at most 1, got {threshold!r} (a pass mark "
                         "of 0 passes every test whatever the agent does; one over 1 passes none)")
    flag_arg("rubric", "include_refused", include_refused)
    if quality_from is not None and not isinstance(quality_from, Grader):
        raise TypeError(f"expect.rubric: quality_from must be a grader (such as expect.verify(...)), got "
                        f"{type(quality_from).__name__}")


def rubric(
    *,
    expected_tools: Sequence[str] = (),
    max_turns: int | None = None,
    success_criteria: str = "",
    threshold: float = 0.7,
    judge: Judge | None = None,
    formula: str = DEFAULT_RUBRIC,
    include_refused: bool = False,
    quality_from: Grader | None = None,
) -> Grader:
    """The eval skill's score as a grader: passes when the total (by the rubric `formula`, see `RUBRICS`) is >=
    threshold. The verdict's `score` is the total, `details["sub_scores"]` holds tool_accuracy, turn_efficiency and
    output_quality, and `details["rubric"]` the formula's name. Tool accuracy credits the tools that ran (refused
    calls too with include_refused=True). `quality_from`: a grader (a test's `expect.verify`) whose verdict is the
    output quality instead of the heuristic or the judge: 0.5 when it passes, 0 when it fails (it runs once a
    trial, however many ask)."""
    _check_options(formula, threshold, include_refused, quality_from)
    label = _label(expected_tools, max_turns, threshold, formula, success_criteria, judge, include_refused,
                   quality_from)

    def verdict(run: Run, quality: float, why: str, by: str | None = None) -> Verdict:
        used, counted, left = _used_tools(run, include_refused)
        turns = turn_count(run)
        accuracy, efficiency = score_parts(expected_tools, used, max_turns, turns)
        unseen = observed_nothing(run.trajectory)
        if unseen and max_turns is not None:
            # "0 turns" here is not a count but no reading: the agent may have taken any number of turns through a
            # client trialrun never saw, so the budget was not checked and earns nothing
            efficiency = 0.0
        total = combine(accuracy, efficiency, quality, formula)
        passed = passes(total, threshold)
        parts = {"tool_accuracy": accuracy, "turn_efficiency": efficiency, "output_quality": quality}
        missing = sorted(set(expected_tools) - set(used))
        reason = (
            f"score {total:.2f} ({'>=' if passed else '<'} {threshold:g}): tool_accuracy {accuracy:.2f}"
            + (f" ({counted[2:]})" if counted and expected_tools else "")
            + _tool_note(missing, run, left)
            + _unseen_note(missing, run, left)
            + f", turn_efficiency {efficiency:.2f} ({_turn_note(turns, max_turns, unseen)})"
            + f", output_quality {quality:g} ({why})"
        )
        return Verdict(passed, label, reason, score=total, details={"sub_scores": parts, "threshold": threshold,
                                                                    "rubric": formula,
                                                                    "quality_by": by or ("judge" if judge else "heuristic")})

    if quality_from is not None:
        async def verified(run: Run, ctx: object) -> Verdict:
            result, how = await _verdict_of(quality_from, run, ctx)
            quality = 0.5 if result.passed else 0.0
            return verdict(run, quality, f"from {quality_from.label}{how}: {'passed' if result.passed else 'failed'}, "
                                         "instead of the words of the answer", by="verify")

        return Grader(label, verified, "score")  # type: ignore[arg-type]  # (async, as the judged one)

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
        if isinstance(result, bool) or not isinstance(result, (int, float)) or not -_EPSILON <= result <= 0.5 + _EPSILON:
            # another scale (7 of 10, 1 for "yes") rounded to the nearest level would invent full marks
            raise ValueError(f"the judge returned {result!r}; expected 0, 0.25 or 0.5 (a number from 0 to 0.5)")
        quality = nearest_level(float(result))
        return verdict(run, quality, f"judged {quality:g} against: {clip(success_criteria, 80)}")

    # agrade awaits an async grader's verdict; GradeFn (expect/_base.py) does not say so yet
    return Grader(label, judged, "score")  # type: ignore[arg-type]


