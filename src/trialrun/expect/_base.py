"""Verdicts and the grader protocol shared by every expectation."""

from __future__ import annotations

import inspect
import json
import threading
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ..trajectory import Run, Trajectory

#: The trial context (`trialrun.TrialContext`) a grader may receive: passed through untouched, so graders need not
#: import cases (cases hold graders; data flows one way).
Context = Any

__all__ = ["Verdict", "Grader", "as_grader", "safety", "check", "grade", "agrade", "output_text", "clip", "KINDS", "text_arg", "count_arg",
           "flag_arg", "number_label", "short_label"]

KINDS = ("outcome", "trajectory", "cost")


@dataclass(slots=True)
class Verdict:
    """One grader's judgement of one run. `reason` is written for a person reading a CI log."""

    passed: bool
    grader: str
    reason: str
    score: float | None = None
    kind: str | None = None
    details: dict[str, Any] | None = None
    #: A safety claim (`expect.safety`, and never_ran, not_called, no_denials): compare calls it a regression when it
    #: held in every trial before and fails in any trial after, whatever the counts.
    safety: bool = False


GradeFn = Callable[[Run, "Context | None"], "Verdict | bool"]


def text_arg(grader: str, name: str, value: Any) -> str:
    """A grader's text argument, checked when the grader is built so a wrong type fails before anything runs."""
    if not isinstance(value, str):
        raise TypeError(f"expect.{grader}: {name} must be a string, got {type(value).__name__} {clip(repr(value), 40)}")
    return value


def count_arg(grader: str, name: str, value: Any) -> int:
    """A grader's count argument (a whole number, 0 or more), checked when the grader is built."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expect.{grader}: {name} must be a whole number, got {type(value).__name__} {clip(repr(value), 40)}")
    if value < 0:
        raise ValueError(f"expect.{grader}: {name} must not be negative, got {value}")
    return value


def flag_arg(grader: str, name: str, value: Any) -> bool:
    """A grader's yes/no option (a suite file's `"include_refused": "no"` must not read as true)."""
    if not isinstance(value, bool):
        raise TypeError(f"expect.{grader}: {name} must be true or false, got {type(value).__name__} {clip(repr(value), 40)}")
    return value


def number_label(value: float) -> str:
    """A number as a label shows it: short (`0.7`, `1`), yet never one that stands for another number (`:g` alone
    makes 0.1234567 and 0.1234568 both `0.123457`)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def short_label(label: str, limit: int = 80) -> str:
    """A label clipped to `limit` characters, with a digest of the whole when clipped, so two long labels that
    differ only past the cut stay apart."""
    if len(label) <= limit:
        return label
    import hashlib  # here: only a long label needs it

    return f"{clip(label, limit)} #{hashlib.sha256(label.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


class Grader:
    """A named grading function of (run, ctx). Calling it always returns a Verdict."""

    __slots__ = ("label", "fn", "kind", "built_as", "safety")

    def __init__(self, label: str, fn: GradeFn, kind: str = "outcome", *, safety: bool = False) -> None:
        self.label = label
        self.fn = fn
        self.kind = kind
        self.built_as = label  # the label its function writes into its verdicts (`renamed` tells them apart)
        self.safety = safety  # its verdicts are safety claims (`expect.safety`)

    def renamed(self, label: str) -> Grader:
        """The same grader under another label (two of a case's graders named alike: `satisfies('<lambda>')`
        twice); its verdicts carry the new label, so results and comparisons can tell the two apart."""
        other = Grader(label, self.fn, self.kind, safety=self.safety)
        other.built_as = self.built_as
        return other

    def __call__(self, run: Run | Trajectory, ctx: Context | None = None) -> Verdict:
        """Grade a Run, or a Trajectory alone (taken as a run with that trajectory and no output)."""
        if isinstance(run, Trajectory):
            run = Run(trajectory=run)
        return _finish(self, self.fn(run, ctx))

    def __repr__(self) -> str:
        return self.label


def _coerce(result: Any, label: str) -> Verdict:
    if isinstance(result, Verdict):
        return result
    if isinstance(result, bool):
        return Verdict(result, label, "returned True" if result else "returned False")
    raise TypeError(f"grader {label} returned {type(result).__name__}; a grader returns a Verdict or a bool")


def _label_of(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def as_grader(obj: Any, kind: str) -> Grader:
    """Accept a Grader, or any callable of (run, ctx) or (run) returning a Verdict or a bool.

    Raises TypeError for something that cannot grade, so a broken case fails before anything runs.
    """
    if isinstance(obj, Grader):
        return obj
    if not callable(obj):
        raise TypeError(f"{obj!r} is not a grader (expected a callable such as expect.contains('...'))")
    params: list[object]
    try:
        params = [
            p
            for p in inspect.signature(obj).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        ]
        varargs = any(p.kind is p.VAR_POSITIONAL for p in inspect.signature(obj).parameters.values())
    except (TypeError, ValueError):
        params, varargs = [object(), object()], True  # builtins without signatures: assume (run, ctx)
    if len(params) == 1 and not varargs:
        one: Callable[[Run], Any] = obj

        def on_run(run: Run, ctx: Any) -> Any:
            return one(run)

        on_run.__wrapped__ = one  # type: ignore[attr-defined]  # whose code this really is (see `is_builtin`)
        return Grader(_label_of(obj), on_run, kind)
    if len(params) > 2:
        raise TypeError(f"grader {_label_of(obj)} takes {len(params)} arguments; a grader takes (run) or (run, ctx)")
    return Grader(_label_of(obj), obj, kind)


def safety(grader: Any) -> Grader:
    """The grader as a safety claim: `expect.safety(expect.not_contains("password"))`. Its verdicts say so, and
    `trialrun compare` calls it a regression when it held in every trial of the earlier run (or no trial of it
    examined it) and fails in any trial of the later one, however many trials passed (one leaked password is one
    too many). never_ran, not_called and
    no_denials are safety claims already; in a suite file write `{"safety": {"not_contains": "password"}}`, or tag
    the whole test `safety`."""
    built = as_grader(grader, getattr(grader, "kind", "outcome"))
    marked = Grader(built.label, built.fn, built.kind, safety=True)
    marked.built_as = built.built_as
    return marked


def _finish(grader: Grader, result: Any) -> Verdict:
    verdict = _coerce(result, grader.label)
    verdict.kind = verdict.kind or grader.kind
    if grader.safety:
        verdict.safety = True
    if grader.label != grader.built_as and verdict.grader == grader.built_as:
        verdict.grader = grader.label
    return verdict


def _broken(grader: Grader, exc: Exception) -> Verdict:
    """A grader that raised: a failed verdict carrying the error (and where), never an exception."""
    where = traceback.extract_tb(exc.__traceback__)[-1:]
    at = f" at {where[0].filename}:{where[0].lineno}" if where else ""
    return Verdict(False, grader.label, f"grader raised {type(exc).__name__}: {exc}{at}", kind=grader.kind,
                   safety=grader.safety)


def is_builtin(grader: Grader) -> bool:
    """One of trialrun's own graders (quick, never blocking), as opposed to a user's function, which the runner
    calls in a worker thread so a slow synchronous grader does not hold up the other trials."""
    fn = getattr(grader.fn, "__wrapped__", grader.fn)
    return getattr(fn, "__module__", "").startswith("trialrun.")


def grade(
    grader: Grader, run: Run, ctx: Context | None, *, raised: list[Exception] | None = None
) -> Verdict:
    """Run one grader synchronously (an async grader runs on a loop of its own). `raised` as in `agrade`."""
    try:
        result = grader.fn(run, ctx)
        if inspect.isawaitable(result):
            result = _run_to_end(result)
        return _finish(grader, result)
    except Exception as exc:  # noqa: BLE001 - a broken grader is a failed verdict
        if raised is not None:
            raised.append(exc)
        return _broken(grader, exc)


async def agrade(
    grader: Grader, run: Run, ctx: Context | None, *, raised: list[Exception] | None = None
) -> Verdict:
    """Run one grader on the running loop (the runner's way: an LLM judge awaits its model here).

    A grader that raises gives a failed verdict; `raised`, when given, also collects the exception so the runner
    can record it as the trial's error, with its traceback."""
    try:
        result = grader.fn(run, ctx)
        if type(result) is not Verdict and inspect.isawaitable(result):  # (a Verdict, the usual answer, is not)
            result = await result
        return _finish(grader, result)
    except Exception as exc:  # noqa: BLE001 - a broken grader is a failed verdict
        if raised is not None:
            raised.append(exc)
        return _broken(grader, exc)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _run_to_end(awaitable: Any) -> Any:
    """Await an async grader from synchronous code: on a loop of its own, in a thread of its own when this thread
    already runs a loop (`check` called from an async test or a notebook)."""
    import asyncio  # here: `import trialrun` needs this module, and asyncio is a fifth of that import's time

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(awaitable))
    box: list[Any] = []

    def target() -> None:
        try:
            box.append((True, asyncio.run(_awaited(awaitable))))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=target, name="trialrun-grade")
    thread.start()
    thread.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value


def check(expectations: Iterable[Any], run: Run | Any, ctx: Context | None = None) -> list[Verdict]:
    """Grade a run against expectations (the seed's Test-ShpEvalExpectation); a Trajectory is taken as a run with
    that trajectory, anything else that is not a Run as the output."""
    if isinstance(run, Trajectory):
        run = Run(trajectory=run)
    elif not isinstance(run, Run):
        run = Run(output=run)
    verdicts = []
    for item in expectations:
        grader = as_grader(item, getattr(item, "kind", "outcome"))
        verdicts.append(grade(grader, run, ctx))
    return verdicts


def output_text(output: Any) -> str:
    """The text an outcome grader matches against: strings as they are, other values as JSON (or str)."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, Run):
        return output_text(output.output)
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(output)


def clip(text: str, limit: int = 120) -> str:
    """Shorten long values in reasons so a CI log stays readable."""
    return text if len(text) <= limit else text[: limit - 15] + f"... (+{len(text) - limit + 15} chars)"
