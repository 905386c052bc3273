"""An A/B run once checked: its rounds with the progress bar and each arm's journal, then each arm's result file
saved, each arm compared with the baseline, the comparison printed and saved (`ab_<stamp>.json`), and the exit code
(the gate's with `--fail-on-regression`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from ._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, _console, _print_styled, _say, _write_outputs
from ._plan import signal_exit

__all__ = ["evaluate_with_progress", "finish"]


def evaluate_with_progress(arms: list[Any], plans: dict[str, Any], recorders: dict[str, Any], console: Any, *,
                           baseline: str, seed: int, until: bool, max_trials: int | None, max_cost: float | None,
                           threshold: float, snapshots: dict[str, dict[str, Any]], enabled: bool,
                           include_live_canary: bool) -> tuple[Any, int | None]:
    """Run the arms' rounds with a progress bar (each trial labelled by its arm, each round of an --until-decided
    run a line saying where the test stands), every trial journalled by its arm's recorder as it ends: the run, and
    the exit code of the signal that stopped it (None when it ran to its end)."""
    from ..render._arms import round_line
    from ..render._progress import RunProgress
    from ..run import runner
    from ..run.arms import ArmsInterrupted, evaluate_arms
    config = arms[0].config  # the run's keys (trials, concurrency, executor) are the same in every arm
    labelled = {f"{arm}: {name}": max_trials or count for arm, plan in plans.items() for name, count in plan.trials}
    progress = RunProgress(console, sum(labelled.values()), enabled=enabled, trials=labelled)

    def on_trial(arm: str, case: Any, result: Any) -> None:
        recorders[arm].trial(case, result)
        progress.advance(result.passed, f"{arm}: {case.name}")

    def on_round(note: Any) -> None:
        if until:
            console.print(round_line(note, baseline), markup=False, highlight=False, emoji=False)

    stopped = None
    with progress:
        try:
            run = evaluate_arms(
                {arm.name: plans[arm.name].cases for arm in arms}, trials=config.trials,
                include_live_canary=include_live_canary, baseline=baseline, until_decided=until, max_trials=max_trials,
                max_cost_usd=max_cost, threshold=threshold, seed=seed,
                concurrency=config.concurrency or runner.DEFAULT_CONCURRENCY,
                run_ids={name: r.run_id for name, r in recorders.items()}, config_snapshots=snapshots,
                on_trial=on_trial, on_exchanges={name: r.exchanges for name, r in recorders.items()},
                on_round=on_round, executor=config.executor)
        except ArmsInterrupted as interrupted:
            run = interrupted.run
            stopped = signal_exit(interrupted.signal)
        except KeyboardInterrupt as again:  # a second Ctrl-C while teardowns ran: give up on them
            progress.stop()
            kept = "; ".join(f"{name}: {r.abandon()}" for name, r in recorders.items())
            _say(f"interrupted again: stopped waiting for teardowns; {kept}")
            sys.stderr.flush()
            os._exit(signal_exit(getattr(again, "signal", None)))
        except BaseException:
            for recorder in recorders.values():
                recorder.drop()
            raise
    return run, stopped


def finish(run: Any, stopped: int | None, arms: list[Any], recorders: dict[str, Any], store: Any, *,
           threshold: float, gate: bool, as_json: bool, markdown_path: str | None, summary: bool) -> NoReturn:
    """Save every arm's report, compare each arm with the baseline, say and save it all, and end the command."""
    from ..report.compare import compare

    saved, save_failed = _save(run, recorders, store)
    baseline = run.baseline
    comparisons = {name: compare(run.reports[baseline], report, threshold=threshold)
                   for name, report in run.reports.items() if name != baseline}
    problems = {name: _gate_problems(run, name, comparison) for name, comparison in comparisons.items()}
    failed = [f"{name}: {p}" for name, found in problems.items() for p in found]
    gate_line = None
    if gate:
        gate_line = (f"--fail-on-regression: {'; '.join(failed)}" if failed else
                     f"--fail-on-regression: no arm is worse than {baseline}")
    sources = {arm.name: run.reports[arm.name].config_snapshot.get("arm", {}).get("source", "") for arm in arms}
    verdicts = _verdict_lines(run)
    summary_path = Path(store.directory) / f"ab_{recorders[baseline].stem.removeprefix('results_')}.json"
    data = _summary(run, saved, sources, {arm.name: arm.live for arm in arms}, comparisons,
                    problems if gate else None)
    problem = _write_json(summary_path, data)
    if as_json:
        from .._scrub import scrub_text

        click.echo(scrub_text(json.dumps(data, indent=2)))
    else:
        _print(run, saved, sources, comparisons, verdicts, gate_line, summary_path if problem is None else None)
    if problem is not None:
        _say(f"warning: the A/B summary was not saved: {problem}")

    def markdown() -> str:
        from ..render._arms import arms_markdown
        from ..render.markdown import comparison_markdown

        return "\n".join([arms_markdown(run, saved, sources, verdicts, gate_line),
                          *(comparison_markdown(c, title=f"{baseline} → {name}") for name, c in comparisons.items())])

    _write_outputs(markdown_path, None, None, markdown=markdown, junit=None, html=None, summary=summary)
    if stopped is not None:
        _say(f"interrupted: saved the finished trials of every arm ({', '.join(f'{k}: {v}' for k, v in saved.items())})")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(stopped)
    if save_failed:
        code = EXIT_USAGE
    elif gate:
        code = EXIT_FAILED if failed else EXIT_OK
    else:
        code = EXIT_FAILED if any(r.failed_case_count for r in run.reports.values()) else EXIT_OK
    sys.exit(code)


#: Above each comparison of an --until-decided run of live arms.
_AFTER_A_STOP = ("note: the lines below are `trialrun compare`'s fixed-design analysis, shown for each test; after a "
                 "stop that looked at the data the run's verdict is the sequential test's (at the end)")


def _save(run: Any, recorders: dict[str, Any], store: Any) -> tuple[dict[str, str | None], bool]:
    """Each arm's result file, in the arms' order (so `latest` is the last arm's, and `trialrun compare` with no
    runs compares the last two arms): where each went, and whether one could not be saved where asked."""
    saved: dict[str, str | None] = {}
    failed = False
    for name, report in run.reports.items():
        recorder = recorders[name]
        path, fallback = recorder.save(report)
        for warning in recorder.warnings:
            _say(f"warning: arm {name}: {warning}")
        if path is None:
            failed = True
            _say(f"error: arm {name}'s run was not saved to {store.directory}: {recorder.save_problem}"
                 + (f"; it was saved to {fallback} instead" if fallback else "; nor anywhere else"))
            saved[name] = None if fallback is None else str(fallback)
        else:
            saved[name] = _relative(path)
    return saved, failed


def _relative(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _gate_problems(run: Any, arm: str, comparison: Any) -> list[str]:
    """Why the gate fails for one arm. A fixed design (or deterministic arms) is judged as `trialrun compare
    --fail-on-regression` judges two runs; an --until-decided run of live arms by its sequential test (the fixed
    design's statistics are not calibrated after a stop that looked at the data), by a safety claim it broke and a
    test deterministic in both arms that dropped (neither is a statistic: before, a scripted test that failed every
    trial beside live ones passed the gate when the pooled sequential test said "not worse"), and by the tests it
    lost."""
    if not run.until_decided or run.deterministic:
        return _compare_gate(comparison)
    problems = []
    verdict = run.sequential.get(arm)
    if verdict is not None and verdict.verdict == "worse":
        problems.append(f"worse than {run.baseline}: pass@1 change {verdict.change:+.2f}, between {verdict.low:+.2f} "
                        f"and {verdict.high:+.2f} (sequential test, alpha {verdict.alpha:g})")
    problems += [f"{d.name}: {breach.text()}" for d in comparison.cases for breach in d.safety_breaches]
    problems += [f"{d.name}: worse (deterministic: {d.reason})" for d in comparison.cases
                 if d.word == "worse" and d.basis == "deterministic"]
    if comparison.removed:
        problems.append(f"{len(comparison.removed)} test(s) missing ({', '.join(comparison.removed)})")
    if comparison.not_finished:
        problems.append(f"{len(comparison.not_finished)} test(s) did not finish")
    return problems


def _compare_gate(comparison: Any) -> list[str]:
    """What `trialrun compare --fail-on-regression` fails on for this comparison: its gate's reasons."""
    gate = comparison.gate
    if gate is None:  # compare() always decides one; a Comparison built by hand may not have
        raise ValueError("this comparison has no gate: it was not made by trialrun.report.compare.compare()")
    return list(gate.reasons) if gate.failed else []


def _verdict_lines(run: Any) -> list[str]:
    from ..render._arms import verdict_line

    if run.until_decided and run.deterministic:
        return ["deterministic arms (scripted or replayed models): every change is real, so one round decided; "
                "the compare lines above are the verdict"]
    return [verdict_line(name, run.baseline, verdict, run) for name, verdict in run.sequential.items()]


def _summary(run: Any, saved: dict[str, str | None], sources: dict[str, str], live: dict[str, bool],
             comparisons: dict[str, Any],
             problems: dict[str, list[str]] | None) -> dict[str, Any]:
    """The A/B run as JSON: the arms and their files, the design (seed, round orders, why it stopped), each arm's
    sequential verdict and its comparison with the baseline, and the gate."""
    from ..report.results import SCHEMA_VERSION

    arms = []
    for name, report in run.reports.items():
        trials = [t for c in report.cases for t in c.trials]
        arms.append({"name": name, "source": sources.get(name), "run_id": report.run_id, "file": saved.get(name),
                     "live": live.get(name),
                     "trials": len(trials), "trials_passed": sum(t.passed for t in trials),
                     "pass_at_1": report.pass_at_1, "pass_pow_k": report.pass_pow_k, "cost_usd": report.cost_usd})
    return {
        "kind": "trialrun.ab", "schema_version": SCHEMA_VERSION, "baseline": run.baseline, "arms": arms,
        "design": "until-decided" if run.until_decided else "fixed", "deterministic": run.deterministic,
        "seed": run.seed, "rounds": run.rounds, "round_orders": run.round_orders, "stopped": run.stopped,
        "max_trials": run.max_trials, "max_cost_usd": run.max_cost_usd, "cost_usd": run.cost_usd,
        "trials": run.trials,
        "sequential": {name: v.model_dump() for name, v in run.sequential.items()},
        "comparisons": {name: c.model_dump(mode="json") for name, c in comparisons.items()},
        "gate": None if problems is None else {"failed": any(problems.values()), "problems": problems},
    }


def _write_json(path: Path, data: dict[str, Any]) -> str | None:
    """Write the A/B summary (scrubbed, atomically); the problem, when it could not be written."""
    from .._scrub import scrub_text
    from .._util.files import write_atomic

    try:
        write_atomic(path, scrub_text(json.dumps(data, indent=2)) + "\n")
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return None


def _print(run: Any, saved: dict[str, str | None], sources: dict[str, str], comparisons: dict[str, Any],
           verdicts: list[str], gate_line: str | None, summary_path: Path | None) -> None:
    """The terminal's A/B report: the arms, each comparison as `trialrun compare` shows it, the verdicts, the gate."""
    from .._util.display import markup
    from ..render._arms import arms_lines
    from ..render.terminal import print_comparison

    console = _console()
    for line in arms_lines(run, saved, sources):
        console.print(line, markup=False, highlight=False)
    for name, comparison in comparisons.items():
        console.print("")
        console.print(f"[bold]{markup(run.baseline)} -> {markup(name)}[/]")
        if run.until_decided and not run.deterministic:
            console.print(f"[dim]{_AFTER_A_STOP}[/]")
        print_comparison(comparison, console)
    console.print("")
    for line in verdicts:
        _print_styled(console, line, "red" if ": worse" in line else "green" if ": not worse" in line else "yellow")
    if gate_line:
        _print_styled(console, gate_line, "bold")
    if summary_path is not None:
        console.print(f"[dim]A/B summary: {markup(_relative(summary_path))}[/]")
