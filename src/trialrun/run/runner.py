"""Running cases: selection, the live-canary gate, trials (concurrent), timeouts, setup/teardown, grading.

The seed's semantics, exactly: each selected case runs `trials` times; per trial setup, invoke, grade, and
teardown even when something raised or the trial timed out. A case fails, it does not throw: every case is
graded and all are reported together. Live canaries are skipped unless asked for, and listed as skipped.
"""

from __future__ import annotations

import asyncio
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..case import Case, CaseError, Problem, _suggest, validate_cases
from ..report.results import CaseResult, RunReport, TrialResult
from ._trial import OnExchanges, OnTrial, _close, _FinishedThenCancelled, _Runner, run_one_trial

__all__ = ["evaluate", "aevaluate", "select_cases", "run_one_trial", "EvaluationInterrupted", "DEFAULT_CONCURRENCY"]

#: Trials in flight at once. Agents mostly wait on models, so this is about I/O, not cores.
DEFAULT_CONCURRENCY = 16



class EvaluationInterrupted(asyncio.CancelledError, KeyboardInterrupt):
    """The run was interrupted (Ctrl-C, SIGTERM, SIGHUP, or its task cancelled). `report` holds every trial that
    finished: whole cases, and cases only partly run (`CaseResult.unfinished_trials`). `signal` is the signal
    that stopped it (`signal.SIGTERM`...), None when the task was cancelled otherwise.

    It is both a CancelledError (so asyncio treats the task as cancelled) and a KeyboardInterrupt (so code that
    called `evaluate` and catches Ctrl-C catches it).
    """

    def __init__(self, report: RunReport, signal: int | None = None) -> None:
        super().__init__(f"evaluation interrupted; {len(report.cases)} case(s) finished")
        self.report = report
        self.signal = signal


def select_cases(
    cases: Sequence[Case],
    *,
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    include_live_canary: bool = False,
) -> tuple[list[Case], list[tuple[Case, str]]]:
    """Cases to run and cases to skip (with the reason). Cases filtered out by name or tag are in neither.

    A name that matches no case, or tags that no case carries, are a CaseError: a typo in a CI filter must not
    select nothing and pass.
    """
    wanted_names = None if names is None else ({names} if isinstance(names, str) else set(names))
    wanted_tags = None if tags is None else ({tags} if isinstance(tags, str) else set(tags))
    problems: list[Problem] = []
    known = [case.name for case in cases]
    for name in sorted(wanted_names or ()):
        if name not in known:
            problems.append(Problem(f"no case is named {name!r}{_suggest(name, known)}", field="names"))
    carried = {tag for case in cases for tag in case.tags}
    if wanted_tags and not wanted_tags & carried:
        shown = ", ".join(sorted(carried)) or "none"
        problems.append(Problem(f"no case carries tag {' or '.join(map(repr, sorted(wanted_tags)))} (tags: {shown})", field="tags"))
    if problems:
        raise CaseError(problems)
    run: list[Case] = []
    skipped: list[tuple[Case, str]] = []
    for case in cases:
        if wanted_names is not None and case.name not in wanted_names:
            continue
        if wanted_tags is not None and not wanted_tags.intersection(case.tags):
            continue
        if case.mode == "live_canary" and not include_live_canary:
            skipped.append((case, "live canary: runs only with include_live_canary=True (--include-live-canary)"))
        else:
            run.append(case)
    return run, skipped


def _nothing_to_grade(cases: list[Case], skipped: list[tuple[Case, str]]) -> Problem:
    """Why a run would grade nothing: no cases at all, or only cases the selection skips."""
    if not cases:
        return Problem("nothing to grade: no cases were given")
    names = ", ".join(repr(case.name) for case, _ in skipped)
    return Problem(f"nothing to grade: every selected case is skipped ({names}: live canaries run only with "
                   "include_live_canary=True, --include-live-canary)")


async def aevaluate(
    cases: Iterable[Case | Mapping[str, Any]],
    trials: int = 1,
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    include_live_canary: bool = False,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    run_id: str | None = None,
    config_snapshot: dict[str, Any] | None = None,
    on_trial: OnTrial | None = None,
    executor: str | Any | None = None,
    on_exchanges: OnExchanges | None = None,
) -> RunReport:
    """Async `evaluate`: runs on the current event loop. See `evaluate`.

    Cancelled, it raises `EvaluationInterrupted` with the finished trials. (On Python 3.10 a Task around it turns
    that into a bare CancelledError whose `__context__` is the EvaluationInterrupted: asyncio 3.10 does so for
    every cancelled task. `evaluate` and the CLI are not affected.)
    """
    case_list, selected, skipped = _selection(cases, trials, names, tags, include_live_canary)
    remote = _trial_runner(executor, selected, run_id, concurrency, on_exchanges)  # a case Ray workers cannot take is refused here
    started_at = datetime.now(timezone.utc)
    clock = time.perf_counter()
    runner = _Runner(concurrency, run_id, on_trial, on_exchanges)
    run_trial = remote.run_trial if remote is not None else runner.run_trial
    with runner.guarded(selected if remote is None else []):  # (on Ray each worker's trials hold it there)
        try:
            results, interrupted = await _run_trials(selected, trials, runner.concurrency, run_trial, on_trial)
        finally:
            await runner.finish()
            if remote is not None:
                remote.close()
    case_results, unfinished = _case_results(case_list, selected, skipped, results, trials)
    report = RunReport.build(
        case_results,
        trial_count=trials,
        started_at=started_at,
        duration_s=time.perf_counter() - clock,
        status="interrupted" if interrupted else "completed",
        unfinished=unfinished,
        run_id=run_id,
        config_snapshot=config_snapshot,
    )
    if interrupted:
        raise EvaluationInterrupted(report)
    return report


def _selection(cases: Iterable[Case | Mapping[str, Any]], trials: int, names: Iterable[str] | None,
               tags: Iterable[str] | None, include_live_canary: bool,
               ) -> tuple[list[Case], list[Case], list[tuple[Case, str]]]:
    """The run's cases checked (every problem as one CaseError, before anything runs), and those it runs and skips:
    (all cases, selected, skipped with the reason)."""
    case_list = validate_cases(cases)
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise ValueError(f"trials must be a positive integer, got {trials!r}")
    selected, skipped = select_cases(case_list, names=names, tags=tags, include_live_canary=include_live_canary)
    if not selected:  # a run that grades nothing must not be able to pass
        raise CaseError([_nothing_to_grade(case_list, skipped)])
    return case_list, selected, skipped


async def _run_trials(selected: list[Case], trials: int, concurrency: int,
                      run_trial: Callable[[Case, int], Awaitable[TrialResult]], on_trial: OnTrial | None,
                      ) -> tuple[dict[tuple[int, int], TrialResult], bool]:
    """Every trial of the selected cases, `concurrency` at a time: the results by (case index, trial), and whether
    the run was cancelled (the trials that finished are kept). A callback that raises stops the other trials (their
    teardowns run) and is raised."""
    work = [(index, trial) for index, case in enumerate(selected) for trial in range(1, (case.trials or trials) + 1)]
    results: dict[tuple[int, int], TrialResult] = {}
    queue: Iterator[tuple[int, int]] = iter(work)

    async def worker() -> None:
        for index, trial in queue:
            case = selected[index]
            try:
                result = await run_trial(case, trial)
            except _FinishedThenCancelled as stopped:
                results[index, trial] = stopped.result
                if on_trial is not None:
                    on_trial(case, stopped.result)
                raise
            results[index, trial] = result
            if on_trial is not None:
                on_trial(case, result)

    workers = [asyncio.ensure_future(worker()) for _ in range(min(concurrency, len(work)) or 0)]
    try:
        if workers:
            await asyncio.gather(*workers)
    except asyncio.CancelledError:
        await _cancel_all(workers)
        return results, True
    except BaseException:
        await _cancel_all(workers)  # an on_trial callback raised: stop the other trials, with their teardowns
        raise
    return results, False


def _case_results(case_list: list[Case], selected: list[Case], skipped: list[tuple[Case, str]],
                  results: dict[tuple[int, int], TrialResult], trials: int) -> tuple[list[CaseResult], list[str]]:
    """Each case's result in the order the cases were given (skipped ones as skipped), and the names of the cases
    no trial of which finished."""
    case_results: list[CaseResult] = []
    unfinished: list[str] = []
    skipped_names = {case.name: reason for case, reason in skipped}
    for case in case_list:
        if case.name in skipped_names:
            case_results.append(
                CaseResult(name=case.name, title=case.title, description=case.description, tags=list(case.tags), mode=case.mode,
                           skipped=True, skip_reason=skipped_names[case.name], metadata=case.metadata)
            )
    for index, case in enumerate(selected):
        count = case.trials or trials
        finished = [r for r in (results.get((index, t)) for t in range(1, count + 1)) if r is not None]
        if not finished:
            unfinished.append(case.name)
            continue
        # A case an interruption stopped part way keeps the trials that finished, scored on those, and says so.
        case_results.append(
            CaseResult.from_trials(case.name, finished, tags=list(case.tags), mode=case.mode,
                                   description=case.description, metadata=case.metadata, title=case.title,
                                   unfinished_trials=count - len(finished))
        )
    order = {case.name: position for position, case in enumerate(case_list)}
    case_results.sort(key=lambda c: order[c.name])
    return case_results, unfinished


def _trial_runner(executor: Any, cases: list[Case], run_id: str | None, concurrency: int,
                  on_exchanges: OnExchanges | None = None) -> Any:
    """Where trials run: None for this process (the default, which never imports Ray), else a Ray cluster's
    (`run_trial(case, trial)`, and `close()` at the end of the run)."""
    from .executor import resolve_executor

    chosen = resolve_executor(executor)
    if chosen is None:
        return None
    from ._ray import RayTrials

    return RayTrials(chosen, cases, run_id, max(1, concurrency), on_exchanges)


async def _cancel_all(tasks: Sequence[asyncio.Future[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def evaluate(
    cases: Iterable[Case | Mapping[str, Any]],
    trials: int = 1,
    names: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    include_live_canary: bool = False,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    run_id: str | None = None,
    config_snapshot: dict[str, Any] | None = None,
    on_trial: OnTrial | None = None,
    executor: str | Any | None = None,
    on_exchanges: OnExchanges | None = None,
) -> RunReport:
    """Run every selected case `trials` times and report pass@1 and pass^k per case and for the run.

    Cases are `Case` objects or the seed's hashtable form (dicts); every problem in them is raised as one
    `CaseError` before anything runs. `names` keeps the cases with these exact names, `tags` the cases with at
    least one of these tags. Live canaries are skipped (and listed as skipped) unless `include_live_canary`.
    A failing case is a result, never an exception. Ctrl-C cancels running trials, runs their teardowns and
    raises `EvaluationInterrupted` carrying the report of the trials that finished; so do SIGTERM and SIGHUP
    while they have their default action (which would kill the process and lose the run).
    `executor="ray"` (or "ray://HOST:PORT", or a `RayExecutor`) runs each trial on a Ray cluster instead, with
    the same semantics and the same report; `concurrency` is then cluster-wide.
    `on_trial(case, result)` is called as each trial finishes; `on_exchanges(case, trial, exchanges, credentials)`
    too, with the trial's recorded HTTP exchanges: the CLI writes them to the run's exchanges sidecar. On Ray the
    exchanges stay on the worker, except for an `ExchangeLog` (what the CLI passes): each worker makes its trial's
    sidecar line there, scrubbed and capped, and the line comes back with the trial's result; any other
    `on_exchanges` is refused with a Ray executor (it would never be called).

    >>> import trialrun as tr
    >>> report = tr.evaluate([tr.Case(name="greets", invoke=lambda ctx: "hello",
    ...                               expect_outcome=[tr.expect.contains("hello")])], trials=3)
    >>> (report.passed_case_count, report.pass_at_1, report.pass_pow_k)
    (1, 1.0, 1.0)
    """
    coro = aevaluate(
        cases, trials, names, tags, include_live_canary,
        concurrency=concurrency, run_id=run_id, config_snapshot=config_snapshot, on_trial=on_trial, executor=executor,
        on_exchanges=on_exchanges,
    )
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_with_interrupt(coro)
    return _run_beside_loop(coro)


def _run_beside_loop(coro: Any) -> RunReport:
    """`evaluate` called from inside a running event loop (a notebook, an async test): the run goes on a fresh loop
    in a thread. Ctrl-C cancels that run (teardowns run), whether it arrives as KeyboardInterrupt or, under
    asyncio.run, as a cancellation of the calling task; a second KeyboardInterrupt stops waiting for it."""
    caller = asyncio.current_task()
    box: dict[str, Any] = {}
    loop = asyncio.new_event_loop()
    task = loop.create_task(_interruption_as_value(coro))

    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = loop.run_until_complete(task)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc
        finally:
            _close(loop)
            done.set()

    thread = threading.Thread(target=target, name="trialrun-evaluate", daemon=True)
    thread.start()
    cancelled = False
    # An Event, not thread.join: on Python 3.10 a Ctrl-C that interrupts join() leaves the thread looking finished.
    while not done.is_set():
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            if cancelled:
                raise
            cancelled = True
            loop.call_soon_threadsafe(task.cancel)
        if not cancelled and caller is not None and _cancel_requested(caller):
            cancelled = True
            loop.call_soon_threadsafe(task.cancel)
    if "error" in box:
        raise box["error"]
    return _value_or_raise(box["value"])


class _Stopped:
    """An interruption carried out of the run's task as its value: Python 3.10's Task replaces the
    EvaluationInterrupted a cancelled task raises by a bare CancelledError, losing the report."""

    def __init__(self, exc: EvaluationInterrupted) -> None:
        self.exc = exc


async def _interruption_as_value(coro: Any) -> Any:
    try:
        return await coro
    except EvaluationInterrupted as exc:
        return _Stopped(exc)


def _value_or_raise(value: Any) -> RunReport:
    if isinstance(value, _Stopped):
        raise value.exc
    return value  # type: ignore[no-any-return]


def _cancel_requested(task: asyncio.Task[Any]) -> bool:
    """Has someone asked `task` to cancel (asyncio.run's Ctrl-C handler does, from Python 3.11) while it runs
    synchronous code? Python 3.10's asyncio.run has no such handler: there Ctrl-C reaches the caller's wait as
    KeyboardInterrupt, and `Task.cancelling` does not exist yet."""
    cancelling = getattr(task, "cancelling", None)
    return bool(cancelling()) if cancelling is not None else False


#: Signals that stop a run as Ctrl-C does: SIGTERM is what CI cancellation, `docker stop`, Kubernetes and `timeout`
#: send, SIGHUP what a closed terminal or SSH session sends. Taken over only while they have their default action.
_STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _run_with_interrupt(coro: Any) -> RunReport:
    """Run on a new loop; Ctrl-C (or SIGTERM, SIGHUP) cancels the run (so teardowns run) instead of killing it
    mid-trial. A second one while teardowns are still running (one that hangs) gives up on them and raises
    KeyboardInterrupt."""
    loop = asyncio.new_event_loop()
    task = loop.create_task(_interruption_as_value(coro))
    previous: dict[int, Any] = {}
    main = threading.current_thread() is threading.main_thread()
    received: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        received.append(signum)
        if len(received) > 1:  # a second one while teardowns still run: give up on them (`signal` says which)
            stop = KeyboardInterrupt(signal.Signals(signum).name)
            stop.signal = signum  # type: ignore[attr-defined]
            raise stop
        loop.call_soon_threadsafe(task.cancel)

    if main:
        previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)
        for signum in _STOP_SIGNALS:
            if signal.getsignal(signum) is signal.SIG_DFL:
                previous[signum] = signal.SIG_DFL
        for signum in previous:
            signal.signal(signum, on_signal)
    try:
        value = loop.run_until_complete(task)
        if isinstance(value, _Stopped) and received:
            value.exc.signal = received[0]
        return _value_or_raise(value)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _close(loop)
