"""Trials on a Ray cluster: each trial is one Ray task that runs the runner's own `run_one_trial` on a worker.

Only the runner imports this, and only for a run with a Ray executor. Cases travel as cloudpickle bytes put in
the object store once per case (not once per trial); workers keep the unpickled case for the run. The driver keeps
at most `concurrency` tasks in flight, so `concurrency` is cluster-wide, and results come back as trials finish,
into the same on_trial callback, journal and report as a local run. When the run keeps raw exchanges (its
`on_exchanges` is an `ExchangeLog`), a worker makes its trial's sidecar line itself (`TrialLine`: scrubbed and
capped by the same code as a local trial's, so raw exchanges and credentials never leave the worker) and returns it
with the trial's result; the driver appends it to the log. A run that keeps none asks for none and pays nothing.
A worker also returns the credentials its transports registered (`_scrub.add_secret`: a LiveModel's key, a
request's auth header): the driver registers them, so what it writes is scrubbed of them as a local run's is.
"""

from __future__ import annotations

import asyncio
import functools
import os
import signal
import sys
import threading
import time
import types
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._scrub import add_secret, registered_secrets
from ..case import Case, CaseError, Problem
from ..models import _limiter
from ..models.ratelimit import _SHIPPING, RateLimit
from ..report.exchanges import ExchangeLog, TrialLine
from ..report.results import TrialError, TrialResult
from .executor import RayExecutor, require_ray

#: Case parts that hold user code, in the order a pickling problem is looked for.
_PARTS = ("invoke", "setup", "teardown", "graders", "metadata")
#: Ray's own resource options; any other key of resources_per_trial is a custom resource.
_RAY_OPTIONS = ("num_cpus", "num_gpus", "memory")

_CASES: dict[tuple[str, int], Case] = {}  # on a worker: the cases of the current run, unpickled once
#: The Ray namespace of the run's shared rate limiter actor (named after the run's token).
_NAMESPACE = "trialrun"
#: A worker leases the request slots of this many seconds of a request limit at once (one actor call for several
#: requests); with a token limit each request asks for itself, with its token estimate.
_LEASE_S = 0.25
_MAX_LEASE = 32
_PERMITS: dict[tuple[str, str], Any] = {}  # on a worker: (run token, endpoint identity) -> _RemotePermits
_ACTORS: dict[str, Any] = {}  # on a worker: run token -> the limiter actor's handle


def _user_modules(cases: Sequence[Case]) -> set[str]:
    """Modules of the case's own code that a worker may not be able to import (a test file, a script's helper
    module, a suite's `agent = "my_agent:run"` or `tools = ["my_tools:lookup"]` in the project folder): they are
    pickled by value. Installed packages and trialrun itself go by reference. The code is looked for in the case's
    functions and what their closures hold (a suite case's invoke is trialrun's closure over the user's agent and
    tools), so a function of the project folder is never left for a worker that cannot import it."""
    names: set[str] = set()
    roots = [part for case in cases
             for part in (case.invoke, case.setup, case.teardown, *(getattr(g, "fn", g) for g in case.graders))]
    # One walk for all the cases: what they share (a suite's scripts, its config) is looked at once.
    for fn in _code_in(roots, budget=_CODE_SEARCH_BUDGET + _CODE_SEARCH_PER_CASE * len(cases)):
        name = fn.__name__ if isinstance(fn, types.ModuleType) else getattr(fn, "__module__", None)
        module = getattr(sys.modules.get(name or ""), "__file__", None)
        if not name or not module or name == "__main__" or name.split(".")[0] == "trialrun":
            continue
        if "site-packages" in module or "dist-packages" in module or module.startswith(sys.base_prefix):
            continue
        names.add(name)
    return names


#: How many objects `_code_in` looks at at most (a closure can hold a big script: its steps are data): this many,
#: and as many more per case.
_CODE_SEARCH_BUDGET = 5000
_CODE_SEARCH_PER_CASE = 100


def _global_names(code: types.CodeType) -> set[str]:
    """The global names a function's code (and the code of functions nested in it) may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _code_in(roots: list[Any], budget: int = _CODE_SEARCH_BUDGET) -> Iterator[Any]:
    """The functions, classes and modules reachable from `roots` through partials, closures, `__wrapped__`, the
    globals a user's function reads, containers and trialrun's own objects (a Tool's function), within
    `budget` objects."""
    seen: set[int] = set()
    todo = list(roots)
    while todo and len(seen) < budget:
        value = todo.pop()
        if value is None or id(value) in seen or isinstance(value, (str, bytes, int, float, bool)):
            continue
        seen.add(id(value))
        if isinstance(value, functools.partial):
            todo += [value.func, *value.args, *value.keywords.values()]
        elif isinstance(value, types.MethodType):
            todo += [value.__func__, value.__self__]
        elif isinstance(value, types.FunctionType):
            yield value
            for cell in value.__closure__ or ():
                try:
                    todo.append(cell.cell_contents)
                except ValueError:  # an empty cell
                    continue
            todo.append(getattr(value, "__wrapped__", None))
            if value.__module__.split(".")[0] != "trialrun":  # what it uses of its module (`from my_tools import`)
                names = _global_names(value.__code__)
                todo += [value.__globals__[n] for n in names if n in value.__globals__]
        elif isinstance(value, types.ModuleType):
            yield value
        elif isinstance(value, type):
            yield value
        elif isinstance(value, (list, tuple, set, frozenset)):
            todo += list(value)
        elif isinstance(value, dict):
            todo += list(value.values())
        elif type(value).__module__.split(".")[0] == "trialrun":  # a Tool, a ToolPolicy: what they hold
            todo += list(getattr(value, "__dict__", {}).values())
        else:  # an object of the user's (a callable agent class): its class's module
            todo.append(type(value))


def ship(cases: Sequence[Case]) -> list[bytes]:
    """Each case as the bytes a worker unpickles; a CaseError naming every case (and the part of it) that cannot
    be pickled, raised before anything runs."""
    from ray import cloudpickle

    payloads: list[bytes] = []
    problems: list[Problem] = []
    modules = [sys.modules[name] for name in _user_modules(cases)]
    for module in modules:
        cloudpickle.register_pickle_by_value(module)
    try:
        for case in cases:
            try:
                payloads.append(cloudpickle.dumps(case))
            except Exception as exc:  # noqa: BLE001 - any pickling failure is the case's problem, reported
                problems.append(_unpicklable(case, exc, cloudpickle))
    finally:
        for module in modules:
            cloudpickle.unregister_pickle_by_value(module)
    if problems:
        raise CaseError(problems)
    return payloads


def _unpicklable(case: Case, exc: Exception, cloudpickle: Any) -> Problem:
    """Which part of the case could not be pickled, and why (the first part that fails on its own)."""
    for part in _PARTS:
        value = getattr(case, part, None)
        try:
            cloudpickle.dumps(value)
        except Exception as part_exc:  # noqa: BLE001
            what = getattr(value, "__qualname__", None) or type(value).__name__
            return Problem(f"cannot be sent to Ray workers: its {part} ({what}) could not be pickled: "
                           f"{type(part_exc).__name__}: {part_exc}", case=case.name, field=part)
    return Problem(f"cannot be sent to Ray workers: it could not be pickled: {type(exc).__name__}: {exc}",
                   case=case.name, field="invoke")


def _case(token: str, index: int, payload: bytes) -> Case:
    from ray import cloudpickle

    case = _CASES.get((token, index))
    if case is None:
        if any(key[0] != token for key in _CASES):
            _CASES.clear()  # a new run: forget the last one's cases
        case = _CASES[token, index] = cloudpickle.loads(payload)
    return case


def _limiter_name(token: str) -> str:
    return f"trialrun-limiter-{token}"


class _LimiterActor:
    """A Ray run's rate limiters, one `Limiter` per endpoint and key, shared by every worker of the run (the same
    schedule a single process keeps: `models._limiter`). Created by the driver when a shipped case holds a
    `RateLimit` (else by the first worker that needs it), killed by the driver when the run ends."""

    def __init__(self) -> None:
        self._limiters: dict[str, _limiter.Limiter] = {}

    def _get(self, who: str, limit: RateLimit) -> _limiter.Limiter:
        limiter = self._limiters.get(who)
        if limiter is None:
            limiter = self._limiters[who] = _limiter.Limiter(limit)
        elif limiter.limit != limit:
            limiter.tighten(limit)
        return limiter

    def reserve(self, who: str, limit: RateLimit, tokens: int, count: int) -> tuple[list[float], float]:
        """`count` slots (seconds from now until each), and how long the limit is still paused."""
        limiter = self._get(who, limit)
        return limiter.reserve(tokens, count), limiter.paused_for()

    def settle(self, who: str, limit: RateLimit, tokens: int) -> None:
        self._get(who, limit).settle(tokens)

    def pause(self, who: str, limit: RateLimit, seconds: float) -> None:
        self._get(who, limit).pause(seconds)


def _actor_options(token: str, *, by_driver: bool = False) -> dict[str, Any]:
    """The driver's actor is owned by the driver (Ray ends it with the driver's job, even when the driver is
    killed); one a worker makes is detached, so that it outlives that worker. The driver kills either at the end
    of the run."""
    options = {"name": _limiter_name(token), "namespace": _NAMESPACE, "get_if_exists": True, "num_cpus": 0,
               "max_restarts": 0}
    return options if by_driver else {**options, "lifetime": "detached"}


class _RemotePermits:
    """A worker's view of the run's limiter actor, as LiveModel's `Permits`: request slots leased a few at a time.

    A lease is as many slots as this worker took in the last `_LEASE_S` (1 for a worker that calls now and then: a
    slot it would not use is one nobody else gets), at most `_LEASE_S` of the limit. A slot is a time the actor set
    aside (counted from the reply's arrival, so never earlier than the actor meant); one not used within `grace`
    of its time is dropped, never used late next to another worker's (a late slot can add at most grace / spacing
    + 1 requests to a window). With a token limit each request asks the actor itself, with its estimate. A 429 here
    drops this worker's lease and pauses the actor for everyone.
    """

    where = "ray"

    def __init__(self, actor: Any, who: str, limit: RateLimit) -> None:
        self._actor, self._who, self.limit = actor, who, limit
        self._slots: deque[float] = deque()
        self._taken: deque[float] = deque()  # when this worker took slots lately (the next lease's size)
        self._lock = threading.Lock()
        self._paused_until = 0.0
        rpm = limit.requests_per_minute
        self._lease = 1 if limit.tokens_per_minute or rpm is None else max(1, min(_MAX_LEASE, int(rpm / 60 * _LEASE_S)))
        self.grace = 0.0 if rpm is None else max(0.005, min(0.05, 15.0 / rpm))

    def _leased(self) -> tuple[float | None, int]:
        """A leased slot (seconds until it), or None and how many to lease next."""
        now = time.monotonic()
        with self._lock:
            self._taken.append(now)
            while self._taken and self._taken[0] < now - _LEASE_S:
                self._taken.popleft()
            while self._slots:
                at = self._slots.popleft()
                if at >= now - self.grace:
                    return max(0.0, at - now), 0
            return None, min(self._lease, len(self._taken))

    def _keep(self, reply: tuple[list[float], float]) -> float:
        delays, paused = reply
        now = time.monotonic()
        with self._lock:
            self._slots.extend(now + delay for delay in delays[1:])
            if paused > 0:
                self._paused_until = max(self._paused_until, now + paused)
        return delays[0]

    def take(self, tokens: int) -> float:
        leased, count = self._leased()
        if leased is not None:
            return leased
        import ray

        return self._keep(ray.get(self._actor.reserve.remote(self._who, self.limit, tokens, count)))

    async def atake(self, tokens: int) -> float:
        leased, count = self._leased()
        if leased is not None:
            return leased
        return self._keep(await self._actor.reserve.remote(self._who, self.limit, tokens, count))

    def settle(self, tokens: int) -> None:
        if tokens:
            self._actor.settle.remote(self._who, self.limit, tokens)

    def pause(self, seconds: float) -> None:
        with self._lock:
            self._slots.clear()
            self._paused_until = max(self._paused_until, time.monotonic() + seconds)
        self._actor.pause.remote(self._who, self.limit, seconds)

    def paused_for(self) -> float:
        with self._lock:
            return max(0.0, self._paused_until - time.monotonic())


def _remote_limiters(token: str) -> Any:
    """What LiveModel's `limiter_for` asks on a worker of this run: the run's actor, not the process's limiter."""

    def permits(who: str, limit: RateLimit) -> _RemotePermits:
        found = _PERMITS.get((token, who))
        if found is None:
            if any(key[0] != token for key in _PERMITS):
                _PERMITS.clear()  # a new run
                _ACTORS.clear()
            actor = _ACTORS.get(token)
            if actor is None:
                import ray

                actor = _ACTORS[token] = ray.remote(_LimiterActor).options(**_actor_options(token)).remote()
            found = _PERMITS[token, who] = _RemotePermits(actor, who, limit)
        return found

    return permits


class _TrialWorker:
    """An async Ray actor that runs up to `trials_per_worker` trials at once on its own event loop, as a local run
    does (`run_one_trial` each): for trials that mostly wait, where one trial per worker process wastes the CPU.
    Ray's cancel of one of its calls cancels that trial's coroutine, so its teardown runs."""

    async def run(self, token: str, index: int, payload: bytes, trial: int, run_id: str | None,
                  keep: int | None = None) -> Any:
        from ._trial import run_one_trial

        _limiter.REMOTE.set(_remote_limiters(token))  # this call's own context: its trial's LiveModels share the run's
        line = TrialLine(keep) if keep is not None else None
        result = await run_one_trial(_case(token, index, payload), trial, run_id, line)
        return _returned(result, line)


def _returned(result: TrialResult, line: TrialLine | None) -> tuple[Any, ...]:
    """What a worker sends back: the result, its sidecar line and problem when asked for, and last the credentials
    registered on this worker (the driver never saw the transports that learnt them, but writes the results)."""
    return (result, registered_secrets()) if line is None else (result, *line.made, registered_secrets())


def _trial_on_worker(token: str, index: int, payload: bytes, trial: int, run_id: str | None,
                     keep: int | None = None) -> Any:
    """A Ray task: one trial, with exactly the local semantics (run_one_trial). Ray's cancel arrives as a SIGINT
    in the worker (`interrupt_main`), which cancels the trial, so its teardown runs before the task ends.
    `keep` (the driver's cap on a trial's bodies) asks for the trial's sidecar line too: (result, line, problem,
    credentials); without it, (result, credentials)."""
    from ._trial import _close, run_one_trial

    case = _case(token, index, payload)
    loop = asyncio.new_event_loop()
    line = TrialLine(keep) if keep is not None else None
    shared = _limiter.REMOTE.set(_remote_limiters(token))  # copied into the trial's task (and its threads)
    try:
        task = loop.create_task(run_one_trial(case, trial, run_id, line))
    finally:
        _limiter.REMOTE.reset(shared)
    # The loop's own handler (not signal.signal): it sets the wakeup fd, so the interrupt wakes a loop that is
    # waiting on a worker thread, where a plain handler would only run once that thread is done.
    main = threading.current_thread() is threading.main_thread()
    if main:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    try:
        result = loop.run_until_complete(task)
        return _returned(result, line)
    finally:
        if main:
            loop.remove_signal_handler(signal.SIGINT)
        _close(loop)


def _keeping_sigterm(connect: Callable[[], Any]) -> None:
    """`ray.init` replaces the driver's SIGTERM handler with `sys.exit`, which would kill a run mid-trial; the run's
    own handler (cancel, teardowns, save what finished, as on Ctrl-C) is put back once Ray is connected."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    connect()
    if main and handler is not None:
        signal.signal(signal.SIGTERM, handler)


def _require_client(address: str) -> None:
    """Ray Client (ray://) needs Ray's `client` extra (grpcio); Ray itself would fail deep inside ray.init."""
    try:
        import grpc  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        from .executor import ExecutorError

        raise ExecutorError(f"executor {address!r} (Ray Client) needs grpcio, which is not installed: "
                            "pip install 'trialrun[ray]' (it installs ray[client])") from None


class RayTrials:
    """The driver side of a run on Ray: connects, ships the cases, runs a trial as a task and awaits its result."""

    def __init__(self, executor: RayExecutor, cases: Sequence[Case], run_id: str | None, concurrency: int = 1,
                 on_exchanges: Any = None) -> None:
        if on_exchanges is not None and not isinstance(on_exchanges, ExchangeLog):
            from .executor import ExecutorError

            raise ExecutorError(  # it would never be called: a Ray trial's raw exchanges stay on its worker
                f"on_exchanges={on_exchanges!r} cannot be used with executor 'ray': a trial's raw exchanges (and the "
                "credentials in them) stay on the Ray worker that ran it, so a callable of your own would never be "
                "called. Keep them in trialrun's scrubbed sidecar instead (`trialrun run` does by default), or "
                "run locally")
        ray = require_ray()
        limits: list[RateLimit] = []
        _SHIPPING.append(limits)  # RateLimits pickled with the cases: the run needs the shared limiter actor
        try:
            payloads = ship(cases)  # before connecting: a case that cannot travel is refused at once
        finally:
            _SHIPPING.remove(limits)
        self._ray = ray
        task_env: dict[str, Any] = {}
        if not ray.is_initialized() and (executor.address or "").startswith("ray://"):
            _require_client(executor.address or "")
        if not ray.is_initialized():
            options: dict[str, Any] = {"logging_level": "warning", "log_to_driver": True}
            if executor.runtime_env is not None:
                options["runtime_env"] = dict(executor.runtime_env)
            options.update(executor.init_kwargs)
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            _keeping_sigterm(lambda: ray.init(address=executor.address, **options))
        elif executor.runtime_env is not None:  # Ray was connected before this run: the env goes with each task
            task_env["runtime_env"] = dict(executor.runtime_env)
        from ray import exceptions

        self._lost = (exceptions.WorkerCrashedError, exceptions.NodeDiedError, exceptions.LocalRayletDiedError,
                      exceptions.ActorDiedError, exceptions.ActorUnavailableError, exceptions.ObjectLostError)
        self._task_error = exceptions.RayError
        self._executor = executor
        self._run_id = run_id
        #: Where the workers' sidecar lines go (None: the run keeps no exchanges, and workers make none).
        self._log = on_exchanges if isinstance(on_exchanges, ExchangeLog) else None
        self._token = uuid.uuid4().hex
        self._index = {id(case): i for i, case in enumerate(cases)}
        self._refs = [ray.put(payload) for payload in payloads]
        resources = dict(executor.resources_per_trial)
        options = {key: resources.pop(key) for key in _RAY_OPTIONS if key in resources}
        if resources:
            options["resources"] = resources
        options.update(task_env)
        self._remote = ray.remote(_trial_on_worker).options(max_retries=0, **options)
        self.limiter: Any = None
        if limits:  # ready before the first trial asks (a worker would create it otherwise)
            self.limiter = ray.remote(_LimiterActor).options(**_actor_options(self._token, by_driver=True)).remote()
        self._pool: list[Any] = []
        self._busy: list[int] = []
        per_worker = executor.trials_per_worker
        if per_worker > 1:  # the resources are each actor's; a dead actor restarts (its trials are "worker lost")
            actor = ray.remote(_TrialWorker).options(max_concurrency=per_worker, max_restarts=-1, max_task_retries=0,
                                                     **options)
            self._pool = [actor.remote() for _ in range(max(1, -(-concurrency // per_worker)))]
            self._busy = [0] * len(self._pool)

    def _submit(self, index: int, trial: int) -> tuple[Any, int | None]:
        keep = self._log.max_trial_bytes if self._log is not None else None
        args = (self._token, index, self._refs[index], trial, self._run_id, keep)
        if not self._pool:
            return self._remote.remote(*args), None
        slot = self._busy.index(min(self._busy))  # the least busy actor
        self._busy[slot] += 1
        return self._pool[slot].run.remote(*args), slot

    async def run_trial(self, case: Case, trial: int) -> TrialResult:
        """One trial on a worker. A lost worker (its process died) is retried once for a deterministic case, then
        (or at once, for a live canary whose calls cost money) it is the trial's error, and the run goes on."""
        from ._trial import _error, _trial_result

        index = self._index[id(case)]
        attempts = 2 if case.mode == "deterministic" else 1
        started = time.perf_counter()
        for _ in range(attempts):
            ref, slot = self._submit(index, trial)
            future = asyncio.wrap_future(ref.future())
            try:
                *value, secrets = await asyncio.shield(future)
                for secret in secrets:
                    add_secret(secret, source="a Ray worker's transport")
                if self._log is None:
                    return value[0]  # type: ignore[no-any-return]
                result, line, problem = value
                self._log.add(line, problem)
                return result  # type: ignore[no-any-return]
            except asyncio.CancelledError:
                await self._cancel(ref, future)
                raise
            except self._lost as exc:
                lost = exc
            except self._task_error as exc:  # the task itself failed on the worker (say, the case did not unpickle)
                return _trial_result(trial, None, [], _error("worker", exc), None, time.perf_counter() - started)
            finally:
                if slot is not None:
                    self._busy[slot] -= 1
        first_line = (str(lost).strip().splitlines() or [type(lost).__name__])[0]
        error = TrialError(type="WorkerLost", phase="worker",
                           message=f"worker lost: the Ray worker running this trial died ({first_line}); "
                                   f"tried {attempts} time(s)")
        return _trial_result(trial, None, [], error, None, time.perf_counter() - started)

    def close(self) -> None:
        """The end of the run: the shared limiter actor goes (whoever created it)."""
        try:
            actor = self.limiter or self._ray.get_actor(_limiter_name(self._token), namespace=_NAMESPACE)
        except ValueError:  # no trial needed one
            return
        except Exception:  # noqa: BLE001 - the cluster is gone (its actors with it): the run's results still count
            return
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # noqa: BLE001 - as above
            pass

    async def _cancel(self, ref: Any, future: asyncio.Future[Any]) -> None:
        """Cancel the task (a SIGINT on its worker: the trial's teardown runs) and wait for it, bounded."""
        self._ray.cancel(ref)
        done, _ = await asyncio.wait([future], timeout=self._executor.teardown_wait_s)
        if not done and not self._pool:
            self._ray.cancel(ref, force=True)  # (an actor's call cannot be forced; the actor lives on)
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: a cancelled task's error is expected, not an unhandled one
        future.cancel()
