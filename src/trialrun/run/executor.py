"""Where trials run: locally (the default, on this process's event loop) or on a Ray cluster.

This module never imports Ray: `RayExecutor` is plain configuration, and the Ray-backed runner (`_ray`) is
loaded only when a run asks for it, so local runs pay nothing for the option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RayExecutor", "ExecutorError", "resolve_executor", "EXECUTOR_FORMS"]

#: The spellings `executor=` (and `--executor`, and trialrun.toml's `executor`) accept.
EXECUTOR_FORMS = "local, ray (a local Ray, or the cluster in RAY_ADDRESS), ray://HOST:PORT, or ray:auto"


class ExecutorError(ValueError):
    """An executor that cannot be used (an unknown spelling, Ray not installed); the message says what to do."""


@dataclass(frozen=True)
class RayExecutor:
    """Run each trial as a Ray task: setup, invoke, grading and teardown on a Ray worker, results streamed back.

    `address` is None (connect to the cluster in RAY_ADDRESS, or start a local Ray), "auto", or "ray://HOST:PORT".
    `resources_per_trial` is Ray's resources for one trial's task (default one CPU: a trial may run a build).
    `runtime_env` is passed to `ray.init` (e.g. `{"working_dir": "."}` for a remote cluster), or with each trial's
    task when Ray was already connected in this process.
    Rate limits of live models (`LiveModel(rate_limit=...)`) are shared by all workers through one actor per run.
    `teardown_wait_s` bounds how long an interrupted run waits for the cancelled trials' teardowns.
    `trials_per_worker` > 1 runs trials on a pool of async Ray actors instead, each running that many trials at
    once (and `resources_per_trial` is then each actor's): for trials that mostly wait on a model or a tool.
    `init_kwargs` go to `ray.init` as they are. Needs `pip install 'trialrun[ray]'`.

    >>> RayExecutor(address="ray://head:10001", resources_per_trial={"num_cpus": 0.5}).address
    'ray://head:10001'
    """

    address: str | None = None
    resources_per_trial: Mapping[str, float] = field(default_factory=lambda: {"num_cpus": 1})
    runtime_env: Mapping[str, Any] | None = None
    teardown_wait_s: float = 30.0
    trials_per_worker: int = 1
    init_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.trials_per_worker, bool) or not isinstance(self.trials_per_worker, int) or self.trials_per_worker < 1:
            raise ExecutorError(f"RayExecutor: trials_per_worker must be a positive integer, got {self.trials_per_worker!r}")
        if self.teardown_wait_s < 0:
            raise ExecutorError(f"RayExecutor: teardown_wait_s must be >= 0, got {self.teardown_wait_s!r}")

    def describe(self) -> str:
        return "ray" if self.address is None else f"ray:{self.address}" if "://" not in self.address else self.address


def resolve_executor(executor: str | RayExecutor | None) -> RayExecutor | None:
    """None for a local run; a RayExecutor for "ray", "ray:auto", "ray://ADDRESS" or a RayExecutor."""
    if executor is None or isinstance(executor, RayExecutor):
        return executor
    if not isinstance(executor, str):
        raise ExecutorError(f"executor must be a string or a RayExecutor, got {type(executor).__name__} ({EXECUTOR_FORMS})")
    text = executor.strip()
    if text in ("", "local"):
        return None
    if text == "ray":
        return RayExecutor()
    if text.startswith("ray://") and len(text) > len("ray://"):
        return RayExecutor(address=text)
    if text.startswith("ray:") and text[4:] and not text.startswith("ray:/"):
        return RayExecutor(address=text[4:])
    raise ExecutorError(f"executor {executor!r} is not known; expected {EXECUTOR_FORMS}")


def require_ray() -> Any:
    """Import Ray, or say which extra installs it."""
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError(
            "executor 'ray' needs Ray, which is not installed: pip install 'trialrun[ray]'"
        ) from exc
    return ray
