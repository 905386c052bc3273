"""A/B runs: the same tests under two or more configurations ("arms") in one run, their trials interleaved, one
`RunReport` per arm, and (with `until_decided`) a stop as soon as a sequential test has decided each arm against
the baseline.

Interleaved in rounds: round i runs trial i of every test in every arm, and the next round starts only when it is
done, so trial i of every arm runs before trial i+1 of any arm, and a provider's drift in the middle of a run hits
every arm alike. Within a round each test's arms start in an order shuffled by the run's seed (recorded, so the
order can be replayed); `concurrency` trials are in flight at once within a round. Round i of an arm pairs with
round i of the baseline: those pairs are what the sequential test (`report._sequential`) looks at.

Deterministic arms need no sequential test: with `until_decided`, one round decides, as every change between them
is real. Whether they are is decided after the first round, test by test, from the models every arm's trials of it
really talked to (`report._models_used.trials_determinism`, the rule compare uses), never guessed from the
configuration: one test that flipped a coin without a model keeps the run going.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from ..case import Case, CaseError, Problem
from ..report._models_used import trials_determinism
from ..report._sequential import SequentialTest, SequentialVerdict
from ..report._stats import ALPHA
from ..report.results import CaseResult, RunReport, TrialResult
from ._trial import OnExchanges, _FinishedThenCancelled, _Runner
from .runner import (
    DEFAULT_CONCURRENCY,
    EvaluationInterrupted,
    _cancel_all,
    _run_beside_loop,
    _run_with_interrupt,
    _selection,
    _trial_runner,
)

__all__ = ["evaluate_arms", "aevaluate_arms", "ArmsRun", "ArmsInterrupted", "RoundNote", "DEFAULT_MAX_TRIALS"]

#: Trials per test per arm an `until_decided` run stops at when not told otherwise.
DEFAULT_MAX_TRIALS = 30

Stop = Literal["trials", "decided", "deterministic", "max_trials", "max_cost", "cost_unknown"]


@dataclass
class RoundNote:
    """What one finished round changed: passed/run trials per arm so far, the cost so far, each arm's verdict."""

    round: int
    order: list[str]
    passed: dict[str, int]
    run: dict[str, int]
    cost_usd: float | None
    verdicts: dict[str, SequentialVerdict]


@dataclass
class ArmsRun:
    """An A/B run: each arm's report, the baseline, the seed and the order of every round, why it stopped, and
    (with `until_decided`, live arms) each arm's sequential verdict against the baseline."""

    reports: dict[str, RunReport]
    baseline: str
    seed: int
    rounds: int
    round_orders: list[list[str]]
    deterministic: bool
    until_decided: bool
    stopped: Stop
    max_trials: int | None = None
    max_cost_usd: float | None = None
    alpha: float = ALPHA
    sequential: dict[str, SequentialVerdict] = field(default_factory=dict)

    @property
    def cost_usd(self) -> float | None:
        costs = [r.cost_usd for r in self.reports.values() if r.cost_usd is not None]
        return sum(costs) if costs else None

    @property
    def trials(self) -> int:
        """Trials run, in every arm."""
        return sum(len(c.trials) for r in self.reports.values() for c in r.cases)


class ArmsInterrupted(EvaluationInterrupted):
    """An A/B run interrupted (Ctrl-C, SIGTERM, SIGHUP): `reports` holds each arm's finished trials (`report` is the
    baseline's), `run` the rest of what was known."""

    def __init__(self, run: ArmsRun, signal: int | None = None) -> None:
        super().__init__(run.reports[run.baseline], signal)
        self.run = run
        self.reports = run.reports


OnArmTrial = Callable[[str, Case, TrialResult], None]


@dataclass
class _Plan:
    """The arms checked: each one's cases (all, selected, skipped), the test order, the trials each test runs."""

    arms: dict[str, tuple[list[Case], list[Case], list[tuple[Case, str]]]]
    baseline: str
    tests: list[str]
    planned: dict[str, dict[str, int]]


def _plan(arms: Mapping[str, Iterable[Case | Mapping[str, Any]]], trials: int, baseline: str | None,
          names: Iterable[str] | None, tags: Iterable[str] | None, include_live_canary: bool,
          max_trials: int | None) -> _Plan:
    """Every arm's cases checked and selected alike; a CaseError (before anything runs) for fewer than two arms, an
    unknown baseline, or arms that would not run the same tests."""
    if len(arms) < 2:
        raise CaseError([Problem(f"an A/B run needs two or more arms, got {len(arms)}", field="arms")])
    chosen = baseline if baseline is not None else next(iter(arms))
    if chosen not in arms:
        raise CaseError([Problem(f"the baseline {chosen!r} is not an arm (arms: {', '.join(arms)})", field="baseline")])
    names = None if names is None else list(names)
    tags = None if tags is None else list(tags)
    checked = {arm: _selection(cases, trials, names, tags, include_live_canary) for arm, cases in arms.items()}
    tests = [case.name for case in checked[chosen][1]]
    problems = []
    for arm, (_, selected, _) in checked.items():
        theirs = [case.name for case in selected]
        if set(theirs) != set(tests):
            only_here = sorted(set(theirs) - set(tests))
            missing = sorted(set(tests) - set(theirs))
            problems.append(Problem(f"arm {arm!r} would run other tests than the baseline {chosen!r}"
                                    + (f" (also: {', '.join(only_here)})" if only_here else "")
                                    + (f" (not: {', '.join(missing)})" if missing else ""), field="arms"))
    if problems:
        raise CaseError(problems)
    planned = {arm: {case.name: max_trials if max_trials is not None else (case.trials or trials) for case in selected}
               for arm, (_, selected, _) in checked.items()}
    return _Plan(checked, chosen, tests, planned)


async def aevaluate_arms(
    arms: Mapping[str, Iterable[Case | Mapping[str, Any]]],
    trials: int = 1,
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    include_live_canary: bool = False,
    *,
    baseline: str | None = None,
    until_decided: bool = False,
    max_trials: int | None = None,
    max_cost_usd: float | None = None,
    threshold: float = 0.10,
    seed: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    run_ids: Mapping[str, str | None] | None = None,
    config_snapshots: Mapping[str, dict[str, Any]] | None = None,
    on_trial: OnArmTrial | None = None,
    on_exchanges: Mapping[str, OnExchanges | None] | None = None,
    on_round: Callable[[RoundNote], None] | None = None,
    executor: str | Any | None = None,
) -> ArmsRun:
    """Async `evaluate_arms`: runs on the current event loop. See `evaluate_arms`."""
    if max_trials is not None and not until_decided:
        raise ValueError("max_trials caps an until_decided run; a fixed run's trials are `trials`")
    if until_decided and max_trials is None:
        max_trials = DEFAULT_MAX_TRIALS
    if max_trials is not None and (isinstance(max_trials, bool) or max_trials < 1):
        raise ValueError(f"max_trials must be a positive integer, got {max_trials!r}")
    if max_cost_usd is not None and not max_cost_usd > 0:
        raise ValueError(f"max_cost_usd must be above 0, got {max_cost_usd!r}")
    plan = _plan(arms, trials, baseline, names, tags, include_live_canary, max_trials if until_decided else None)
    seed = random.SystemRandom().randrange(2**32) if seed is None else seed
    ids = dict(run_ids or {})
    state = _State(plan, seed, until_decided, max_trials, max_cost_usd, threshold, config_snapshots or {})
    runners = {arm: _Runner(concurrency, ids.get(arm), None, (on_exchanges or {}).get(arm)) for arm in plan.arms}
    remotes = {arm: _trial_runner(executor, plan.arms[arm][1], ids.get(arm), concurrency, (on_exchanges or {}).get(arm))
               for arm in plan.arms}
    started_at = datetime.now(timezone.utc)
    clock = time.perf_counter()
    interrupted = False
    try:
        interrupted = await state.run(runners, remotes, max(1, concurrency), on_trial, on_round)
    finally:
        for arm in plan.arms:
            await runners[arm].finish()
            if remotes[arm] is not None:
                remotes[arm].close()
    done = state.result(started_at, time.perf_counter() - clock, interrupted, ids, config_snapshots or {})
    if interrupted:
        raise ArmsInterrupted(done)
    return done


class _State:
    """The rounds of one A/B run: what each arm's trials gave, the orders, the sequential tests, and the stop."""

    def __init__(self, plan: _Plan, seed: int, until_decided: bool, max_trials: int | None,
                 max_cost_usd: float | None, threshold: float, snapshots: Mapping[str, dict[str, Any]]) -> None:
        self.plan = plan
        self.snapshots = snapshots
        #: Whether every arm's trials talked only to scripted or replayed models: known after the first round.
        self.deterministic = False
        self.seed = seed
        self.rng = random.Random(seed)
        self.until_decided = until_decided
        self.max_trials = max_trials
        self.max_cost_usd = max_cost_usd
        self.results: dict[str, dict[tuple[int, int], TrialResult]] = {arm: {} for arm in plan.arms}
        self.orders: list[list[str]] = []
        others = [arm for arm in plan.arms if arm != plan.baseline]
        # Each arm against the baseline; several arms share alpha (Bonferroni), so that any false "worse" in the
        # run stays at most alpha.
        self.tests = {arm: SequentialTest(threshold, ALPHA / len(others)) for arm in others}
        self.stopped: Stop = "trials"
        self.rounds = 0
        self.started_of = dict.fromkeys(plan.arms, 0)  # the last round each arm took part in

    def _done(self, arm: str) -> bool:
        """An arm whose verdict against the baseline is reached runs no more rounds (the others go on, with the
        baseline); its verdict stays (the first crossing decides)."""
        return arm in self.tests and self.until_decided and self.tests[arm].decided

    def _last_round(self) -> int:
        return max(n for counts in self.plan.planned.values() for n in counts.values())

    async def run(self, runners: dict[str, _Runner], remotes: dict[str, Any], concurrency: int,
                  on_trial: OnArmTrial | None, on_round: Callable[[RoundNote], None] | None) -> bool:
        """Every round until the plan, the decision or a cap stops it: True when it was interrupted."""
        last = self._last_round()
        for number in range(1, last + 1):
            order = list(self.plan.arms)
            self.rng.shuffle(order)
            order = [arm for arm in order if not self._done(arm)]  # an arm decided against the baseline rests
            self.orders.append(order)
            work = [(arm, index, number) for index, name in enumerate(self.plan.tests) for arm in order
                    if number <= self.plan.planned[arm][name]]
            for arm in order:
                self.started_of[arm] = number
            spent_before = self.cost()
            if await _run_round(work, self.plan, self.results, runners, remotes, concurrency, on_trial):
                return True
            self.rounds = number
            spent = self.cost()
            stop = self._after_round(number, spent, (spent or 0.0) - (spent_before or 0.0))
            if stop is None and number == last:
                stop = "max_trials" if self.until_decided else "trials"
            if on_round is not None:
                on_round(self._note(number, order, spent))
            if stop is not None:
                self.stopped = stop
                break
        return False

    def _after_round(self, number: int, spent: float | None, last_cost: float) -> Stop | None:
        """Feed the round to the sequential tests; why the run stops now (decided, or a cap reached: a round the
        last one's cost says would pass the cost cap is not started), or None to go on."""
        if number == 1:  # every test, over every arm's trials of it (a scripted test beside a coin is not enough)
            self.deterministic = all(
                trials_determinism(*[([r for (i, _), r in results.items() if i == index],
                                      dict(self.snapshots.get(arm) or {})) for arm, results in self.results.items()])
                == "deterministic" for index in range(len(self.plan.tests)))
        if self.until_decided and not self.deterministic:
            for arm, test in self.tests.items():
                if self.started_of[arm] == number:
                    test.add_round(self._pairs(arm, number))
        if self.until_decided:
            if self.deterministic:
                return "deterministic"
            if all(test.decided for test in self.tests.values()):
                return "decided"
        if self.max_cost_usd is not None and number < self._last_round():
            if self._unpriced(number):
                return "cost_unknown"
            spent = spent or 0.0
            if spent >= self.max_cost_usd or spent + last_cost > self.max_cost_usd:
                return "max_cost"
        return None

    def _pairs(self, arm: str, number: int) -> list[tuple[bool, bool]]:
        base, mine = self.results[self.plan.baseline], self.results[arm]
        pairs = []
        for index in range(len(self.plan.tests)):
            before, after = base.get((index, number)), mine.get((index, number))
            if before is not None and after is not None:
                pairs.append((before.passed, after.passed))
        return pairs

    def _unpriced(self, number: int) -> bool:
        """Whether a trial of this round spent tokens trialrun could not price (its cost unknown)."""
        return any(result.cost_usd is None and result.trajectory.turns
                   for results in self.results.values() for (_, trial), result in results.items() if trial == number)

    def cost(self) -> float | None:
        costs = [r.cost_usd for results in self.results.values() for r in results.values() if r.cost_usd is not None]
        return sum(costs) if costs else None

    def _note(self, number: int, order: list[str], spent: float | None) -> RoundNote:
        passed = {arm: sum(1 for r in results.values() if r.passed) for arm, results in self.results.items()}
        run = {arm: len(results) for arm, results in self.results.items()}
        verdicts = {arm: test.result() for arm, test in self.tests.items() if test.rounds}
        return RoundNote(number, order, passed, run, spent, verdicts)

    def result(self, started_at: datetime, duration_s: float, interrupted: bool, run_ids: Mapping[str, str | None],
               snapshots: Mapping[str, dict[str, Any]]) -> ArmsRun:
        reports = {arm: self._report(arm, started_at, duration_s, interrupted, run_ids.get(arm), snapshots.get(arm))
                   for arm in self.plan.arms}
        return ArmsRun(reports=reports, baseline=self.plan.baseline, seed=self.seed, rounds=self.rounds,
                       round_orders=self.orders, deterministic=self.deterministic, until_decided=self.until_decided,
                       stopped=self.stopped, max_trials=self.max_trials, max_cost_usd=self.max_cost_usd,
                       sequential={arm: test.result() for arm, test in self.tests.items() if test.rounds})

    def _report(self, arm: str, started_at: datetime, duration_s: float, interrupted: bool, run_id: str | None,
                snapshot: dict[str, Any] | None) -> RunReport:
        """One arm's report, as `evaluate` builds one: a test stopped by an interruption keeps its finished trials
        (the rest of a fixed run's plan unfinished); a run the decision or a cap stopped planned only the rounds
        the arm took part in."""
        case_list, selected, skipped = self.plan.arms[arm]
        results = self.results[arm]
        early = self.until_decided or (self.stopped != "trials" and not interrupted)
        skipped_names = {case.name: reason for case, reason in skipped}
        cases: list[CaseResult] = [
            CaseResult(name=case.name, title=case.title, description=case.description, tags=list(case.tags),
                       mode=case.mode, skipped=True, skip_reason=skipped_names[case.name], metadata=case.metadata)
            for case in case_list if case.name in skipped_names]
        unfinished = []
        for index, case in enumerate(selected):
            planned = self.plan.planned[arm][case.name]
            count = min(self.started_of[arm], planned) if early else planned
            finished = [r for r in (results.get((index, t)) for t in range(1, count + 1)) if r is not None]
            if not finished:
                unfinished.append(case.name)
                continue
            cases.append(CaseResult.from_trials(case.name, finished, tags=list(case.tags), mode=case.mode,
                                                description=case.description, metadata=case.metadata, title=case.title,
                                                unfinished_trials=count - len(finished)))
        order = {case.name: position for position, case in enumerate(case_list)}
        cases.sort(key=lambda c: order[c.name])
        trial_count = self.started_of[arm] if early else max(self.plan.planned[arm].values())
        return RunReport.build(cases, trial_count=trial_count, started_at=started_at, duration_s=duration_s,
                               status="interrupted" if interrupted else "completed", unfinished=unfinished,
                               run_id=run_id, config_snapshot=snapshot)


async def _run_round(work: list[tuple[str, int, int]], plan: _Plan, results: dict[str, dict[tuple[int, int], TrialResult]],
                     runners: dict[str, _Runner], remotes: dict[str, Any], concurrency: int,
                     on_trial: OnArmTrial | None) -> bool:
    """One round's trials, `concurrency` at a time, started in `work`'s order: True when it was cancelled (the
    trials that finished are kept). A callback that raises stops the round's other trials and is raised."""
    queue = iter(work)

    async def worker() -> None:
        for arm, index, trial in queue:
            case = plan.arms[arm][1][index]
            remote = remotes[arm]
            run_trial = remote.run_trial if remote is not None else runners[arm].run_trial
            try:
                result = await run_trial(case, trial)
            except _FinishedThenCancelled as stopped:
                results[arm][index, trial] = stopped.result
                if on_trial is not None:
                    on_trial(arm, case, stopped.result)
                raise
            results[arm][index, trial] = result
            if on_trial is not None:
                on_trial(arm, case, result)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(work)))]
    try:
        if workers:
            await asyncio.gather(*workers)
    except asyncio.CancelledError:
        await _cancel_all(workers)
        return True
    except BaseException:
        await _cancel_all(workers)
        raise
    return False


def evaluate_arms(
    arms: Mapping[str, Iterable[Case | Mapping[str, Any]]],
    trials: int = 1,
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    include_live_canary: bool = False,
    **options: Any,
) -> ArmsRun:
    """Run the same cases under two or more configurations ("arms": name -> that arm's cases, each arm the same case
    names), trials interleaved in rounds, and report each arm as `evaluate` would.

    The first arm is the baseline unless `baseline=` names another. `until_decided=True` runs round after round until
    a sequential test has decided each arm against the baseline (worse, or not worse by `threshold`), or
    `max_trials` rounds (default `DEFAULT_MAX_TRIALS`) or `max_cost_usd` stop it undecided; without it every test
    runs `trials` times (a case's own `trials` wins). `seed` orders each round's arms (random, and recorded, when
    not given). Other options as `evaluate`'s: `concurrency`, `executor`, and per arm `run_ids`,
    `config_snapshots`, `on_exchanges`; `on_trial(arm, case, result)` as each trial ends, `on_round(note)` as each
    round does. Ctrl-C raises `ArmsInterrupted` with every arm's finished trials.

    >>> import trialrun as tr
    >>> def arm(answer):
    ...     return [tr.Case(name="greets", invoke=lambda ctx: answer, expect_outcome=[tr.expect.contains("hello")])]
    >>> run = tr.evaluate_arms({"v1": arm("hello"), "v2": arm("bye")}, trials=2, seed=7)
    >>> run.reports["v1"].pass_at_1, run.reports["v2"].pass_at_1, run.rounds
    (1.0, 0.0, 2)
    """
    coro = aevaluate_arms(arms, trials, names, tags, include_live_canary, **options)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_with_interrupt(coro)  # type: ignore[return-value]  # what the coroutine returned: an ArmsRun
    return _run_beside_loop(coro)  # type: ignore[return-value]
