"""One trial, on whichever executor runs it: setup, invoke, grade and teardown in that order, with its timeout, the
network guard and the price table; the one code path the local runner and a Ray worker (`_ray`) both call.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from .._util.workers import DAEMON_THREADS
from ..case import Case, TrialContext, remove_workdir
from ..expect._base import Grader, Verdict, agrade, grade, is_builtin
from ..report.results import TrialError, TrialResult, jsonable, judge_trial
from ..trajectory import Run, Trajectory

OnTrial = Callable[[Case, TrialResult], None]
#: Called with each finished trial's recorded exchanges (`ctx.exchanges()`, numbered as its turns' `exchange`) and
#: the credential values its requests carried (`ctx.credentials()`, to scrub wherever they were echoed).
OnExchanges = Callable[[Case, int, list[Any], frozenset[bytes]], None]


class _PhaseFailure(Exception):
    def __init__(self, phase: str, exc: BaseException) -> None:
        self.phase = phase
        self.exc = exc


def _error(phase: str, exc: BaseException, *, limit: int = 20_000, head: int = 4_000) -> TrialError:
    """The trial's error with its WHOLE traceback: an error raised deep inside an SDK is explained by the user's
    frames far above it, so the renderers pick the frames to show (`render.text`). Only a huge traceback is cut
    (at a line end when one is near), keeping its first `head` characters and its end (the raised exception)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    if len(text) > limit:
        start, end = head, len(text) - (limit - head)
        start = text.rfind("\n", start - 200, start) + 1 or start
        end = text.find("\n", end, end + 200) + 1 or end
        text = f"{text[:start]}... ({end - start} characters of the traceback omitted) ...\n{text[end:]}"
    return TrialError(type=type(exc).__name__, message=str(exc) or type(exc).__name__, phase=phase, traceback=text)


#: What a trial's own code may raise and the trial absorbs as its failure: any error, and SystemExit (an agent that
#: calls sys.exit must not end the whole run). KeyboardInterrupt and cancellation end the run, with teardowns.
_TRIAL_ERRORS = (Exception, SystemExit)


def _load_optional(module: str) -> Any:
    """Optional collaborators (the network guard, the price table) resolved once per run, not per trial."""
    import importlib

    try:
        return importlib.import_module(f"trialrun.{module}")
    except ImportError:  # pragma: no cover - both ship with the package
        return None


class _Runner:
    def __init__(self, concurrency: int, run_id: str | None, on_trial: OnTrial | None,
                 on_exchanges: OnExchanges | None = None) -> None:
        self.concurrency = max(1, concurrency)
        self.run_id = run_id
        self.on_trial = on_trial
        self.on_exchanges = on_exchanges
        #: Workdirs are removed by threads of their own, never on the event loop (a big tree's rmtree would stall
        #: every other trial) nor in the trial's time; the run waits for them before it returns.
        self.removals: list[asyncio.Future[Any]] = []
        self.guard = _load_optional("models.guard")
        self.limits = _load_optional("models._limiter")  # what a trial waited on rate limits (a timeout says)
        self.pricing = _load_optional("agent.pricing")

    def guarded(self, cases: Sequence[Case]) -> contextlib.AbstractContextManager[None]:
        """The no-network guard's patches held for a whole run with a deterministic case (its trials enter and leave
        the guard often; the patches are put in place once): when the run ends, the patched functions are the
        originals again."""
        if self.guard is None or not any(case.mode == "deterministic" for case in cases):
            return contextlib.nullcontext()
        return self.guard.patched()  # type: ignore[no-any-return]

    def _network_guard(self, case: Case) -> contextlib.AbstractContextManager[list[str]]:
        """Deterministic cases run with the network blocked (loopback allowed); live canaries may reach providers."""
        if case.mode != "deterministic" or self.guard is None:
            return contextlib.nullcontext([])
        return self.guard.no_network(f"deterministic case {case.name!r}")  # type: ignore[no-any-return]

    def _observed_cost(self, run: Run) -> float | None:
        """Cost from the trajectory's usage and the price table, when the run did not report it."""
        if self.pricing is None or not run.trajectory.turns:
            return None
        cost: float | None = self.pricing.cost_of_trajectory(run.trajectory)
        return cost

    async def _in_thread(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` on a daemon thread of its own, in this task's contextvars (the no-network guard's state): a
        synchronous agent stuck past its timeout or a Ctrl-C runs on there, abandoned, and never holds the
        interpreter open."""
        return await DAEMON_THREADS.start(fn, *args)

    async def _call(self, fn: Callable[[TrialContext], Any], ctx: TrialContext) -> Any:
        if inspect.iscoroutinefunction(fn):
            return await fn(ctx)
        result = await self._in_thread(fn, ctx)
        if inspect.isawaitable(result):  # a sync function that returned a coroutine (a lambda around an async call)
            result = await result
        return result

    async def _setup_and_invoke(self, case: Case, ctx: TrialContext) -> Any:
        setup, invoke = case.setup, case.invoke
        invoke_async = inspect.iscoroutinefunction(invoke)
        if invoke_async and setup is None:  # an async agent without setup (the usual async case): awaited right here
            ctx._before_invoke()  # (no setup: the workdir, if any, is empty; nothing to read)
            try:
                return await invoke(ctx)  # type: ignore[misc]  # (a coroutine function: not None)
            except _TRIAL_ERRORS as exc:  # noqa: BLE001
                raise _PhaseFailure("invoke", exc) from exc
        if not invoke_async and not inspect.iscoroutinefunction(setup):
            value = await self._in_thread(_sync_setup_invoke, setup, invoke, ctx)
            if inspect.isawaitable(value):
                try:
                    value = await value
                except _TRIAL_ERRORS as exc:  # noqa: BLE001
                    raise _PhaseFailure("invoke", exc) from exc
            return value
        if setup is not None:
            try:
                await self._call(setup, ctx)
            except _TRIAL_ERRORS as exc:  # noqa: BLE001
                raise _PhaseFailure("setup", exc) from exc
        if ctx._snapshot_due():  # the workspace snapshot: files are read off the event loop
            await self._in_thread(ctx._before_invoke)
        assert invoke is not None  # a Case always has one
        try:
            return await self._call(invoke, ctx)
        except _TRIAL_ERRORS as exc:  # noqa: BLE001
            raise _PhaseFailure("invoke", exc) from exc

    async def _files_left(self, ctx: TrialContext) -> Any:
        """The workspace diff of a trial that had a workdir (read off the event loop); one that cannot be made is a
        diff that examined nothing and says why, so a file grader fails rather than passes on it."""
        if ctx._workdir is None:
            return None
        try:
            return await self._in_thread(ctx.files_left)
        except Exception as exc:  # noqa: BLE001 - a workdir the agent made unreadable: said, never a crash
            from .._util.workspace_diff import WorkspaceDiff

            ctx._files = WorkspaceDiff(not_examined={".": f"the workdir could not be compared: {exc}"})
            return ctx._files

    async def _grade(self, graders: Sequence[Grader], run: Run, ctx: TrialContext) -> tuple[list[Verdict], TrialError | None]:
        """Every grader's verdict, and the first grader exception as the trial's error (a broken grader fails it)."""
        # A user's synchronous graders may be slow (a judge, a file check): they run off the event loop, all of a
        # trial's in one worker-thread hop; trialrun's own graders and async ones run on the loop.
        for grader in graders:
            if not _on_loop(grader):
                break
        else:  # the usual case: every grader in order, here (each adds at most one exception)
            errors: list[Exception] = []
            graded = []
            for grader in graders:  # (a plain loop: a comprehension with await is one more coroutine before 3.12)
                graded.append(await agrade(grader, run, ctx, raised=errors))
            return graded, _error("grade", errors[0]) if errors else None
        off_loop = [i for i, g in enumerate(graders) if not _on_loop(g)]
        raised: list[list[Exception]] = [[] for _ in graders]
        verdicts: list[Verdict | None] = [None] * len(graders)
        done = await self._in_thread(_grade_all, [(graders[i], raised[i]) for i in off_loop], run, ctx)
        for i, verdict in zip(off_loop, done):
            verdicts[i] = verdict
        for i, grader in enumerate(graders):
            if verdicts[i] is None:
                verdicts[i] = await agrade(grader, run, ctx, raised=raised[i])
        first = next((errors[0] for errors in raised if errors), None)
        return verdicts, _error("grade", first) if first is not None else None  # type: ignore[return-value]

    async def _teardown(self, case: Case, ctx: TrialContext) -> tuple[TrialError | None, asyncio.CancelledError | None]:
        """Run teardown to completion even if the run is being cancelled; returns its error and the cancellation
        that arrived meanwhile (for the caller to go on with). Only for a trial with something to tear down (a
        teardown, or clients to close): the caller just removes the workdir of any other."""
        task = asyncio.ensure_future(self._teardown_body(case, ctx))
        cancelled: asyncio.CancelledError | None = None
        while True:
            try:
                error = await asyncio.shield(task)
                break
            except asyncio.CancelledError as exc:
                cancelled = exc
                if task.done():
                    error = None if task.cancelled() else task.result()
                    break
        return error, cancelled

    async def _teardown_body(self, case: Case, ctx: TrialContext) -> TrialError | None:
        problem = None
        if case.teardown is not None:
            with self._network_guard(case) as blocked:  # teardown is part of the deterministic trial too
                try:
                    await self._call(case.teardown, ctx)
                except _TRIAL_ERRORS as exc:  # noqa: BLE001
                    problem = _error("teardown", exc)
            if problem is None and blocked:
                problem = TrialError(type="NetworkBlockedError", message=blocked[0], phase="teardown")
        await self._remove_workdir(ctx)
        await ctx.aclose()
        return problem

    async def _remove_workdir(self, ctx: TrialContext) -> None:
        """Queue the workdir's removal (off the event loop). What the shell tools' commands left running there
        (`server &`) is killed first, on a worker thread, so the trial's note says what it was (TrialResult.killed)."""
        workdir = ctx._release_workdir()
        if workdir is None:
            return
        from ..agent import _commands

        loop = asyncio.get_running_loop()
        try:
            if _commands.left_under(workdir):
                ctx._note_killed(await loop.run_in_executor(DAEMON_THREADS, _commands.stop_listing, workdir))
        finally:
            self.removals.append(loop.run_in_executor(DAEMON_THREADS, remove_workdir, workdir))

    async def finish(self) -> None:
        """Wait for the workdirs still being removed (even while the run is being cancelled)."""
        pending = [f for f in self.removals if not f.done()]
        if pending:
            waiting = asyncio.ensure_future(asyncio.gather(*pending, return_exceptions=True))
            while not waiting.done():
                try:
                    await asyncio.shield(waiting)
                except asyncio.CancelledError:
                    continue

    async def run_trial(self, case: Case, trial: int) -> TrialResult:
        ctx = TrialContext(case, trial, run_id=self.run_id)
        ctx._wants_workspace = _reads_workspace(case)
        started = time.perf_counter()
        error: TrialError | None = None
        run: Run | None = None
        verdicts: list[Verdict] = []
        graded = False
        waits = self.limits.WaitLog() if self.limits is not None else None
        waiting = self.limits.WAITS.set(waits) if self.limits is not None else None
        try:
            with self._network_guard(case) as blocked:
                try:
                    if case.timeout_s is None:
                        value = await self._setup_and_invoke(case, ctx)
                    else:
                        value = await asyncio.wait_for(self._setup_and_invoke(case, ctx), case.timeout_s)
                    run = _as_run(value, ctx)
                except _PhaseFailure as failure:
                    error = _error(failure.phase, failure.exc)
                except asyncio.TimeoutError:
                    message = f"trial timed out after {case.timeout_s:g}s"
                    if waits is not None and waits.limits:  # the limiter's waits count: say so
                        message += f", {waits.describe()}; raise timeout_s or the limit"
                    error = TrialError(type="TimeoutError", message=message, phase="invoke")
            if error is None and blocked:
                error = TrialError(type="NetworkBlockedError", message=blocked[0], phase="network")
            if error is None and (problems := ctx.problems()):
                error = TrialError(type="ModelError", message="; ".join(problems), phase="model")
            # what the agent left, before any grader runs (a verify command may write files); not after a failed setup
            files = await self._files_left(ctx) if error is None or error.phase != "setup" else None
            if error is None and (problems := ctx._mcp_problems()):  # a script with no answer, a hostile server
                error = TrialError(type="McpError", message="; ".join(problems), phase="mcp")
            if run is not None:
                run.files = files
                ctx._attach_mcp(run.trajectory)  # what the MCP servers received, joined to the model's calls
                if run.cost_usd is None:
                    run.cost_usd = self._observed_cost(run)
                verdicts, grade_error = await self._grade(case.graders, run, ctx)
                error = error or grade_error or _run_error(run, case.graders)
            elif ctx._transports or ctx._mcp is not None:  # invoke raised or timed out: keep what the agent did
                run = Run(output=None, trajectory=ctx.trajectory() if ctx._transports else Trajectory(),  # ungraded
                          files=files)
                ctx._attach_mcp(run.trajectory)
                run.cost_usd = self._observed_cost(run)
            graded = True
        finally:
            if waiting is not None:
                self.limits.WAITS.reset(waiting)
            if case.teardown is None and not ctx._clients:  # nothing to tear down: no coroutine for it either
                await self._remove_workdir(ctx)
                teardown_error, cancelled = None, None
            else:
                teardown_error, cancelled = await self._teardown(case, ctx)
            if cancelled is not None and not graded:
                raise cancelled
        if self.on_exchanges is not None:  # nobody keeps them: no linking either (the hot path of a plain run)
            self._keep_exchanges(case, trial, ctx, run)
        result = _trial_result(trial, run, verdicts, error, teardown_error, time.perf_counter() - started,
                               ctx._killed, ctx.model_kinds(), ctx.files)
        if cancelled is not None:  # stopped while its teardown ran: the trial itself finished, and is kept
            raise _FinishedThenCancelled(result) from cancelled
        return result

    def _keep_exchanges(self, case: Case, trial: int, ctx: TrialContext, run: Run | None) -> None:
        """Link the turns of an agent that built its own trajectory (the reference agent) to the exchanges they came
        from (here, where a trial on Ray runs too, so both report the same), and hand the exchanges to
        `on_exchanges`. Only when someone keeps the exchanges: a turn's `exchange` points into them."""
        exchanges = ctx.exchanges()
        if run is not None:
            _link_turns(run.trajectory, exchanges)
        if self.on_exchanges is not None:
            self.on_exchanges(case, trial, exchanges, ctx.credentials())


def _link_turns(trajectory: Trajectory, exchanges: list[Any]) -> None:
    """Number the turns of a trajectory the agent reported itself (`Turn.exchange` is None) by decoding the
    exchanges and pairing turns in order, conversation by conversation; left alone when the counts differ (the
    agent's turns are not the wire's, and a wrong link is worse than none)."""
    if not trajectory.all_turns or any(turn.exchange is not None for turn in trajectory.all_turns):
        return
    from ..wire import decode_trajectory

    if not trajectory.other_conversations:  # the common case, cheaply: one loop, a turn per answered model call
        answered = [n for n, e in enumerate(exchanges, start=1) if 200 <= e.status < 300
                    and _model_url(e.url.partition("?")[0])]  # (a query may hold a key: not cached)
        if len(answered) == len(trajectory.turns):
            for turn, number in zip(trajectory.turns, answered):
                turn.exchange = number
            return
    observed = decode_trajectory(exchanges)
    mine, seen = trajectory.conversations, observed.conversations
    if len(mine) != len(seen) or any(len(a.turns) != len(b.turns) for a, b in zip(mine, seen)):
        return
    for a, b in zip(mine, seen):
        for turn, decoded in zip(a.turns, b.turns):
            turn.exchange = decoded.exchange


@functools.lru_cache(maxsize=256)
def _model_url(url: str) -> bool:
    """Whether a request URL is a model call (some wire codec owns its path); the same few URLs, every trial."""
    from urllib.parse import urlsplit

    from ..wire import codec_for

    return codec_for(urlsplit(url).path) is not None


class _FinishedThenCancelled(asyncio.CancelledError):
    """The run was cancelled while a finished trial's teardown ran: the cancellation, with that trial's result."""

    def __init__(self, result: TrialResult) -> None:
        super().__init__()
        self.result = result


async def run_one_trial(case: Case, trial: int, run_id: str | None = None,
                        on_exchanges: OnExchanges | None = None) -> TrialResult:
    """One trial on its own, by the same `run_trial` a local run uses: how a Ray worker runs its trial (a cancelled
    trial's teardown never waits behind its stuck invoke: each runs on a thread of its own)."""
    return await _Runner(1, run_id, None, on_exchanges).run_trial(case, trial)


def _reads_workspace(case: Case) -> bool:
    """Whether a grader of the case reads the workspace snapshot (`ctx.workspace`), so the trial takes one."""
    for grader in case.graders:
        if getattr(grader.fn, "reads_workspace", False):
            return True
    return False


def _on_loop(grader: Grader) -> bool:
    """Whether a grader runs on the event loop: trialrun's own (quick) and async ones; a user's sync one does not."""
    return is_builtin(grader) or inspect.iscoroutinefunction(getattr(grader.fn, "__wrapped__", grader.fn))


def _grade_all(graders: list[tuple[Grader, list[Exception]]], run: Run, ctx: TrialContext) -> list[Verdict]:
    return [grade(grader, run, ctx, raised=raised) for grader, raised in graders]


def _sync_setup_invoke(setup: Callable[[TrialContext], Any] | None, invoke: Callable[[TrialContext], Any], ctx: TrialContext) -> Any:
    """Setup then invoke in ONE worker-thread hop (the common, all-sync case stays cheap)."""
    if setup is not None:
        try:
            setup(ctx)
        except _TRIAL_ERRORS as exc:  # noqa: BLE001
            raise _PhaseFailure("setup", exc) from exc
    ctx._before_invoke()  # the workspace snapshot, when a grader reads it
    try:
        return invoke(ctx)
    except _TRIAL_ERRORS as exc:  # noqa: BLE001
        raise _PhaseFailure("invoke", exc) from exc


def _run_error(run: Run, graders: Sequence[Grader]) -> TrialError | None:
    """An agent run that ended in error (a provider's 4xx/5xx, an unreadable response) fails the trial with that
    error, unless the case grades the run's ending itself (`expect.ended("error")` tests error handling)."""
    if run.status != "error" or grades_status(graders):
        return None
    if run.exit_code is not None:  # a process agent: it exited non-zero, timed out, or ended without doing the task
        return TrialError(type="AgentError", message=run.error or "the agent's run ended in error", phase="invoke")
    return TrialError(type="ModelError", message=run.error or "the agent's run ended in error", phase="model")


def grades_status(graders: Sequence[Grader]) -> bool:
    """Whether a grader grades how the run ended (`expect.ended`): then an agent's error is its verdict's to judge."""
    return any(getattr(g.fn, "grades_status", False) for g in graders)


def _as_run(value: Any, ctx: TrialContext) -> Run:
    """A returned Run is used as it is (its own trajectory wins); any other value is the output, with the
    trajectory observed through the trial's transports."""
    if isinstance(value, Run):
        trajectory = value.trajectory
        for turn in trajectory.turns:  # built by the caller: arguments may hold anything; the report must save
            for call in turn.tool_calls:
                call.arguments = jsonable(call.arguments)
        if ctx._transports and not trajectory.turns and not trajectory.commands and not trajectory.denials:
            value.trajectory = ctx.trajectory()
            if value.usage is None:
                value.usage = value.trajectory.usage
        return value
    if ctx._transports:
        return Run(output=value, trajectory=ctx.trajectory())
    return Run(output=value)


#: Every field is given, so every field was set (built from what the trial itself checked: no validation).
_FIELDS_SET = set(TrialResult.model_fields)


def _trial_result(
    trial: int, run: Run | None, verdicts: list[Verdict], error: TrialError | None,
    teardown_error: TrialError | None, duration: float, killed: list[str] | None = None,
    models: list[str] | None = None, files: Any = None,
) -> TrialResult:
    for verdict in verdicts:
        if verdict.details:  # a user's grader may put anything there; the report must still save
            verdict.details = jsonable(verdict.details)
    passed, by_kind, score = judge_trial(verdicts, error, teardown_error)  # the one rule
    return TrialResult.model_construct(_FIELDS_SET, **{
        "trial": trial,
        "passed": passed,
        "outcome_passed": by_kind.get("outcome"),
        "trajectory_passed": by_kind.get("trajectory"),
        "cost_passed": by_kind.get("cost"),
        "score_passed": by_kind.get("score"),
        "verdicts": verdicts,
        "error": error,
        "teardown_error": teardown_error,
        "duration_s": duration,
        "cost_usd": run.cost_usd if run else None,
        "usage": run.usage if run else None,
        "score": score,
        "status": run.status if run else None,
        "output": jsonable(run.output) if run else None,
        "trajectory": run.trajectory if run else Trajectory(),
        # what the trial's process agents left running (or everything on a timeout), killed; else what the run says
        "killed": killed if killed is not None else run.killed if run else None,
        "models": models,  # the kinds of model it talked to (ctx.model_kinds()); a regrade keeps the original's
        "files": files if files is not None else run.files if run else None,  # what the agent left in its workdir
    })


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """Close a loop trialrun made: cancel what is left (a task of an agent that outlived the run) and shut down
    async generators, as asyncio.run does, then close. The default executor is not joined: a thread stuck in a
    user's tool must not hang an interrupted run (the CLI exits without waiting for it)."""
    try:
        left = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    except BaseException:  # noqa: BLE001 - a second Ctrl-C while closing: close anyway
        pass
    finally:
        loop.close()
