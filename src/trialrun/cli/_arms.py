"""`trialrun run` as an A/B run: the same tests under two or more configurations (`--arms`, or the `[arms]` tables
of trialrun.toml), trials interleaved in rounds, one result file per arm, each arm compared with the baseline
(`report.compare`), the comparison printed and saved (`ab_<stamp>.json`), and with `--until-decided` a stop as
soon as a sequential test has decided. With `--fail-on-regression` the exit code is the gate's."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

from ._common import THRESHOLD, _check_output_file, _console, _say
from ._plan import Plan, chosen, ready_to_save

__all__ = ["arm_options", "wants_arms", "run_arms", "ArmsArgs"]

_OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--arms", "arms", metavar="A,B[,...]",
                 help="A/B run: the same tests under each arm (names of [arms] tables of trialrun.toml, or arm files "
                      "overlaying it), trials interleaved; the first arm is the baseline. Default: every [arms] table."),
    click.option("--no-arms", is_flag=True, help="Run the base configuration alone, even when trialrun.toml has [arms]."),
    click.option("--baseline", metavar="ARM", help="The arm the others are compared with (default: the first)."),
    click.option("--until-decided", is_flag=True,
                 help="Run in rounds until a sequential test decides each arm against the baseline (worse or not "
                      "worse), or a cap stops it."),
    click.option("--max-trials", type=click.IntRange(min=1),
                 help="With --until-decided: at most this many trials per test per arm (default 30)."),
    click.option("--max-cost-usd", type=click.FloatRange(min=0, min_open=True),
                 help="Start no round that would take the run's cost past this (in US dollars)."),
    click.option("--seed", type=click.IntRange(min=0), help="Seed of each round's arm order (default: random, recorded)."),
    click.option("--threshold", type=THRESHOLD,
                 help="A drop of this much or more is a regression, and what 'not worse' rules out (default 0.10)."),
    click.option("--fail-on-regression", is_flag=True,
                 help="With arms: exit 1 when an arm is worse than the baseline (the gate), else 0."),
]


def arm_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The A/B options of `trialrun run`."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def wants_arms(config: Any, options: dict[str, Any]) -> bool:
    """Whether `run` is an A/B run: arms named, or [arms] tables in the configuration (unless --no-arms). The A/B
    options without arms are a usage error."""
    if options.get("no_arms"):
        if options.get("arms"):
            raise click.UsageError("--arms and --no-arms contradict each other")
        wanted = False
    else:
        wanted = bool(options.get("arms") or config.arms)
    if not wanted:
        given = [f"--{name.replace('_', '-')}" for name in ("baseline", "until_decided", "max_trials", "max_cost_usd",
                                                             "seed", "fail_on_regression", "threshold")
                 if options.get(name) not in (None, False)]
        if given:
            raise click.UsageError(f"{', '.join(given)} need(s) an A/B run: name its arms with --arms A,B (or add "
                                   "[arms] tables to trialrun.toml)")
    return wanted


@dataclass
class ArmsArgs:
    """What `run` was asked, besides the arms."""

    test_ids: tuple[str, ...]
    names: tuple[str, ...]
    tags: tuple[str, ...]
    include_live_canary: bool
    strict: bool
    labels: dict[str, str]
    as_json: bool
    markdown_path: str | None
    summary: bool
    trials_given: bool


def run_arms(config: Any, options: dict[str, Any], a: ArmsArgs) -> NoReturn:
    """The A/B run, from the checks before anything runs to the exit code."""
    from ..report.compare import REGRESSION_THRESHOLD
    from ..run.arms import DEFAULT_MAX_TRIALS
    from ..suite._arms import arms_for

    arms = arms_for(config, options.get("arms"))
    names = [arm.name for arm in arms]
    baseline = options.get("baseline") or names[0]
    if baseline not in names:
        raise click.BadParameter(f"{baseline!r} is not an arm of this run (arms: {', '.join(names)})",
                                 param_hint="--baseline")
    until = bool(options.get("until_decided"))
    if options.get("max_trials") is not None and not until:
        raise click.UsageError("--max-trials caps an --until-decided run; a fixed run's trials are -k")
    if until and a.trials_given:
        raise click.UsageError("--until-decided runs until decided or --max-trials; -k/--trials sets a fixed count")
    _check_output_file(a.markdown_path, "--markdown")
    threshold = options.get("threshold") or REGRESSION_THRESHOLD
    max_trials = (options.get("max_trials") or DEFAULT_MAX_TRIALS) if until else None
    plans, suite_file = _preflight(config, arms, a)
    _check_prices(arms, options.get("max_cost_usd"))
    store = ready_to_save(config, None, a.markdown_path)
    seed = options["seed"] if options.get("seed") is not None else random.SystemRandom().randrange(2**32)
    snapshots = _snapshots(arms, suite_file, a.labels, baseline=baseline, seed=seed, until=until)
    console = _console(stderr=a.as_json, plain_ok=True)
    if not a.as_json:
        _say_live(console, arms)
    recorders = _recorders(store, arms, plans, snapshots, max_trials)
    from ._arms_run import evaluate_with_progress, finish

    run, stopped = evaluate_with_progress(
        arms, plans, recorders, console, baseline=baseline, seed=seed, until=until, max_trials=max_trials,
        max_cost=options.get("max_cost_usd"), threshold=threshold, snapshots=snapshots, enabled=not a.as_json,
        include_live_canary=next(iter(plans.values())).include_live_canary)
    finish(run, stopped, arms, recorders, store, threshold=threshold, gate=bool(options.get("fail_on_regression")),
           as_json=a.as_json, markdown_path=a.markdown_path, summary=a.summary)
    raise AssertionError("unreachable")  # pragma: no cover  # finish ends the process


def _preflight(config: Any, arms: list[Any], a: ArmsArgs) -> tuple[dict[str, Any], Any]:
    """Each arm's cases built and checked before anything runs (the suite read once, its warnings said once, each
    arm's own warnings named by the arm)."""
    from ..suite._build import build_cases, check_api_keys, ignored_by_custom_agent, suite_warnings
    from ..suite._tests_file import SuiteError, read_suite
    suite_file = read_suite(config.suite_path())
    selected = chosen(suite_file, config, a.test_ids, a.names, a.tags)
    # One selection for every arm: when one arm's model is live, every arm runs the live canaries too (paired tests)
    include = a.include_live_canary or any(arm.config.model_spec.live for arm in arms)
    plans = {}
    for arm in arms:
        cases = build_cases(suite_file, arm.config, only=selected, include_live_canary=include)
        check_api_keys(arm.config)
        plans[arm.name] = Plan(suite_file, selected, cases, include,
                                [(c.name, c.trials or arm.config.trials) for c in cases
                                 if c.mode == "deterministic" or include])
    if not plans[arms[0].name].count:
        raise click.UsageError(f"the selected test(s) {', '.join(map(repr, selected))} are live canaries, skipped "
                               "without --include-live-canary; add it to run them (nothing was run)")
    warnings = suite_warnings(suite_file, config, only=selected)
    if a.strict and warnings:
        raise SuiteError([f"{w} (an error with --strict)" for w in warnings])
    for warning in warnings:
        _say(f"warning: {warning}")
    for arm in arms:
        for warning in ignored_by_custom_agent(arm.config):
            _say(f"warning: arm {arm.name}: {warning}")
    return plans, suite_file


def _say_live(console: Any, arms: list[Any]) -> None:
    """One line per arm whose model is live: its tests call the provider (and cost money)."""
    from .._scrub import scrub_text
    from .._util.display import clean
    from ._common import _print_styled

    for arm in arms:
        if arm.live:
            _print_styled(console, f"arm {clean(arm.name, lines=False)}: live model "
                                   f"{clean(scrub_text(str(arm.config.model_spec)))}: tests call the provider", "yellow")


def _check_prices(arms: list[Any], max_cost: float | None) -> None:
    """A cost cap over a live model trialrun cannot price is refused before anything runs."""
    if max_cost is None:
        return
    from ..agent import prices

    for arm in arms:
        if arm.live and prices.get(arm.config.effective_model_name) is None:
            raise click.UsageError(
                f"--max-cost-usd: arm {arm.name!r}'s model {arm.config.effective_model_name!r} has no price, so its "
                f"cost cannot be counted; add [prices.\"{arm.config.effective_model_name}\"] input = ..., output = ... "
                "(USD per million tokens) to trialrun.toml")


def _snapshots(arms: list[Any], suite_file: Any, labels: dict[str, str], *, baseline: str, seed: int,
               until: bool) -> dict[str, dict[str, Any]]:
    """Each arm's config snapshot, naming the arm, the run's arms, the baseline and the seed."""
    from ..suite._build import config_snapshot

    names = [arm.name for arm in arms]
    snapshots = {}
    for arm in arms:
        snapshot = config_snapshot(arm.config, suite_file, labels)
        snapshot["arm"] = {"name": arm.name, "source": _source(arm), "baseline": baseline, "arms": names,
                           "seed": seed, "design": "until-decided" if until else "fixed"}
        snapshots[arm.name] = snapshot
    return snapshots


def _source(arm: Any) -> str:
    """Where an arm was defined, for people: `trialrun.toml [arms.v2]` or the arm file's path."""
    return (f"{_relative(Path(arm.source))} [arms.{arm.name}]" if arm.config.source is not None
            and Path(arm.source) == Path(arm.config.source) else _relative(Path(arm.source)))


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _recorders(store: Any, arms: list[Any], plans: dict[str, Any], snapshots: dict[str, dict[str, Any]],
               max_trials: int | None) -> dict[str, Any]:
    """Each arm's journal, begun in the results folder before anything runs (the baseline's name first)."""
    from ..run._records import RunRecorder

    recorders: dict[str, Any] = {}
    for arm in arms:
        plan = plans[arm.name]
        recorder = RunRecorder.start(store, plan.cases, trials=max_trials or arm.config.trials,
                                     include_live_canary=plan.include_live_canary, config_snapshot=snapshots[arm.name],
                                     exchanges=arm.config.exchanges, exchanges_max_bytes=arm.config.exchanges_max_bytes)
        if not recorders:
            for note in recorder.notes:
                _say(f"note: {note}")
        recorders[arm.name] = recorder
    return recorders
