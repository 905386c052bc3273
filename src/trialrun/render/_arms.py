"""An A/B run in words: each arm's line, why the run stopped, and each arm's verdict against the baseline (the
terminal's lines, the Markdown summary's, and the progress line of each round)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._scrub import scrub_text
from .._util.display import clean

__all__ = ["arms_lines", "verdict_line", "round_line", "stop_line", "arms_markdown"]

_STOPS = {
    "trials": "every planned trial ran",
    "decided": "decided",
    "deterministic": "deterministic arms (scripted or replayed models): every change is real, so one round decides",
    "max_trials": "the trial cap",
    "max_cost": "the cost cap",
    "cost_unknown": "the cost cap cannot be kept: a trial's cost is unknown (no price for its model; add one under "
                    "[prices] in trialrun.toml)",
}


def _money(value: float | None) -> str:
    return "cost unknown" if value is None else f"${value:.4f}"


def _share(passed: int, run: int) -> str:
    return f"{passed}/{run} trials passed"


def stop_line(run: Any) -> str:
    """Why the run stopped, and after how many rounds."""
    rounds = f"{run.rounds} round{'' if run.rounds == 1 else 's'}"
    caps = []
    if run.until_decided and run.max_trials is not None:
        caps.append(f"trial cap {run.max_trials} per test per arm")
    if run.max_cost_usd is not None:
        caps.append(f"cost cap ${run.max_cost_usd:g}")
    why = _STOPS[run.stopped]
    return f"Stopped after {rounds}: {why}" + (f" ({'; '.join(caps)})" if caps else "")


def verdict_line(arm: str, baseline: str, verdict: Any, run: Any) -> str:
    """One arm's sequential verdict against the baseline: the word, the interval, the trials it took; undecided,
    what stopped it, never "no difference"."""
    interval = f"[{verdict.low:+.2f}, {verdict.high:+.2f}]"
    change = "n/a" if verdict.change is None else f"{verdict.change:+.2f}"
    how = (f"sequential test by betting, alpha {verdict.alpha:g}, each bound valid at any stop; "
           f"{verdict.fell} pair(s) fell, {verdict.rose} rose of {verdict.pairs}")
    trials = f"{verdict.rounds} trial{'' if verdict.rounds == 1 else 's'} per test per arm"
    if verdict.verdict == "cannot tell":
        why = _STOPS.get(run.stopped, run.stopped)
        return (f"{arm} vs {baseline}: cannot tell after {trials} ({why}): the change in pass@1 {change} lies in "
                f"{interval}, which holds a drop of {verdict.threshold:.2f} or more and no drop alike; more trials "
                f"would tell ({how})")
    word = verdict.verdict + (", better" if verdict.better else "")
    decided = f"decided at trial {verdict.decided_at}" if verdict.decided_at else ""
    return f"{arm} vs {baseline}: {word}: change in pass@1 {change} {interval} after {trials}, {decided} ({how})"


def round_line(note: Any, baseline: str) -> str:
    """`round 3 [v2, v1]: v1 28/30 · v2 12/30 · $0.0123 · v2: cannot tell yet (worse 4.1 of 20)`."""
    parts = [f"round {note.round} [{', '.join(note.order)}]"]
    parts += [f"{arm} {note.passed[arm]}/{note.run[arm]} passed" for arm in note.run]
    if note.cost_usd is not None:
        parts.append(_money(note.cost_usd))
    for arm, verdict in note.verdicts.items():
        bar = 1 / verdict.alpha
        state = verdict.verdict if verdict.verdict != "cannot tell" else "cannot tell yet"
        parts.append(f"{arm} vs {baseline}: {state} (worse {min(verdict.e_worse, 1e9):.3g} / not worse "
                     f"{min(verdict.e_not_worse, 1e9):.3g} of {bar:g})")
    return clean(scrub_text(" · ".join(parts)), lines=False)


def arms_lines(run: Any, saved: Mapping[str, str | None], sources: Mapping[str, str]) -> list[str]:
    """The A/B run's head: the arms (the baseline first), each one's pass@1, trials, cost and result file, the seed
    and why the run stopped."""
    arms = list(run.reports)
    tests = len([c for c in run.reports[run.baseline].cases if not c.skipped])
    lines = [f"A/B run: {len(arms)} arms, baseline {run.baseline}; {tests} test(s); trials interleaved in rounds "
             f"(arm order shuffled with seed {run.seed})"]
    width = max(len(a) for a in arms)
    for arm in arms:
        report = run.reports[arm]
        trials = [t for c in report.cases for t in c.trials]
        p1 = "n/a" if report.pass_at_1 is None else f"{report.pass_at_1:.2f}"
        lines.append(f"  {arm.ljust(width)}  pass@1 {p1}  {_share(sum(t.passed for t in trials), len(trials))}  "
                     f"{_money(report.cost_usd)}  {saved.get(arm) or 'not saved'}  ({sources.get(arm, '')})")
    lines.append(stop_line(run))
    return [clean(scrub_text(line), lines=False) for line in lines]


def arms_markdown(run: Any, saved: Mapping[str, str | None], sources: Mapping[str, str], verdicts: list[str],
                  gate: str | None) -> str:
    """The A/B run for a PR's job summary: the head, each verdict, what the gate decided."""
    out = ["## trialrun A/B run", ""]
    out += [f"    {line}" for line in arms_lines(run, saved, sources)]
    out.append("")
    out += [f"- {clean(scrub_text(line), lines=False)}" for line in verdicts]
    if gate:
        out += ["", f"**{clean(scrub_text(gate), lines=False)}**"]
    return "\n".join(out) + "\n"
