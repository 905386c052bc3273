"""Cost graders: what the run spent."""

from __future__ import annotations

from ..trajectory import Run
from ._base import Grader, Verdict, number_label

__all__ = ["max_cost_usd"]


def max_cost_usd(limit: float) -> Grader:
    """The run cost at most `limit` US dollars. Unknown cost fails: a ceiling nobody can check is not a ceiling."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)):
        raise TypeError(f"expect.max_cost_usd: limit must be a number of US dollars, got {type(limit).__name__} {limit!r}")
    if limit < 0:
        raise ValueError(f"expect.max_cost_usd: limit must not be negative, got {limit}")
    label = f"max_cost_usd({number_label(limit)})"

    def grade(run: Run, ctx: object) -> Verdict:
        cost = run.cost_usd
        if cost is None:
            usage = run.usage or run.trajectory.usage
            why = (
                f"the run reported usage ({usage.input_tokens} input, {usage.output_tokens} output tokens) but "
                + _unpriced(run)
                if usage
                else "the run reported neither cost_usd nor token usage"
            )
            return Verdict(False, label, f"cost could not be determined: {why}")
        if cost <= limit:
            return Verdict(True, label, f"cost ${cost:.6f} within ${limit:g}")
        return Verdict(False, label, f"cost ${cost:.6f} exceeds ${limit:g}")

    return Grader(label, grade, "cost")


def _unpriced(run: Run) -> str:
    """Which of the run's models has no price (named, so the fix is one `trialrun.prices.set` away), or which
    model call reported no usage."""
    from ..agent.pricing import prices  # the grader reads the table, it does not own it

    turns = run.trajectory.all_turns
    models = list(dict.fromkeys(turn.model for turn in turns if turn.model))
    unpriced = [model for model in models if model not in prices]
    if unpriced:
        names = ", ".join(repr(model) for model in unpriced)
        noun = "model" if len(unpriced) == 1 else "models"
        return f"no price is known for {noun} {names} (add one with trialrun.prices.set or a price file)"
    silent = next((number for number, turn in enumerate(turns, 1) if turn.usage is None), None)
    if silent is not None:
        return f"model call {silent} reported no token usage"
    return "no price is known for its model (the run does not name it)"
