"""trialrun cases as pytest tests: agent evals beside the unit suite, in the same gate, with no key by default.

Using trialrun with pytest
--------------------------

The plugin is installed with trialrun (entry point ``pytest11``, named ``trialrun``); nothing to enable. Where
plugin autoloading is off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD``), enable it with ``-p trialrun``; do not also list
``trialrun.pytest_plugin`` in ``pytest_plugins`` (pytest would register the one module under two names). In any test module
(``test_*.py``), trialrun collects:

- functions decorated with ``@tr.case(...)`` (the function is the invoke; the decorator takes Case's other fields),
- module-level ``tr.Case`` objects, and lists or tuples of Cases named ``cases`` or ``CASES``::

    import trialrun as tr
    from trialrun import expect

    @tr.case(tags=["files"], expect_outcome=[expect.contains("milk")],
             expect_trajectory=[expect.called("read_file", args={"path": "notes.txt"})])
    def reads_notes(ctx):
        model = ctx.scripted([tr.tool_call("read_file", path="notes.txt"), tr.reply("Buy milk.")])
        return my_agent(http_client=ctx.http_client(model)).run("What do my notes say?")

    CASES = [tr.Case(name="refuses rm -rf", tags=["prompt-injection"], invoke=..., expect_trajectory=[...])]

Each case is one test item named after the case (``tests/test_agent.py::refuses rm -rf``). Its tags are
markers, so ``-m prompt-injection``, ``-m "files and not slow"`` and ``-k notes`` select as you expect (tags
with ``:`` or ``(`` cannot be markers; ``-k`` still matches them). Every item also carries the ``trialrun``
marker (``-m "not trialrun"`` runs only the ordinary tests) and live canaries the ``live_canary`` marker.

An item passes when every trial of its case passes (pass^k). A failing item shows each failing trial: the failed
verdicts with their reasons, the error (with your frames of its traceback), and a compact trajectory (turns,
tool calls with arguments, what the tools returned, policy denials, commands, the final output).

Options:

- ``--trialrun-trials K``: run every case K times (default 1; a case's own ``trials`` wins). With K > 1 the
  terminal summary adds a table of pass@1 and pass^k per case and for the session.
- ``--trialrun-concurrency N``: trials in flight at once (default 16).
- ``--trialrun-include-live-canary``: run ``mode="live_canary"`` cases; otherwise they are SKIPPED with the reason.
- ``--trialrun-suite PATH``: also collect a suite file (``tests.json`` / YAML) with trialrun.toml from the current
  directory, as ``trialrun run --suite PATH`` does. Repeatable.
- ``--trialrun-save``: write the session's results to the results store like ``trialrun run`` (trialrun.toml's
  ``results_dir``, else the suite's folder, else ``state/eval/`` under the rootdir): ``results_<timestamp>.json``
  and ``latest.json``, ready for ``trialrun report`` and ``trialrun compare``. Works under pytest-xdist (one file
  with every case). Each trial's raw HTTP exchanges with the model are kept beside it, scrubbed and capped, as
  ``trialrun run`` keeps them (``results_<timestamp>.exchanges.ndjson``, shown under each turn by ``trialrun view``;
  trialrun.toml's ``exchanges`` and ``exchanges_max_bytes`` apply).
- ``--trialrun-no-exchanges``: with ``--trialrun-save``, keep no raw exchanges (as ``exchanges = false``).

Fixtures for ordinary tests: ``trialrun_ctx`` (a ``TrialContext``: ``workdir``, ``scripted()``,
``http_client()``, ``trajectory()``; cleaned up after the test) and ``scripted_model`` (a factory:
``scripted_model([tr.tool_call(...), tr.reply(...)])`` returns a ``ScriptedModel``).

No network: deterministic cases run with trialrun's no-network guard on (a connection to a real host fails the
trial, loopback is allowed), and so do tests that use these fixtures. Live canaries may reach their provider.

How cases run: the first item of a module to run evaluates all the module's selected cases at once,
concurrently (after ``-k``/``-m``/``--lf`` deselection; items carrying a ``skip``/``skipif`` mark are left to run
on their own), and each item then reports its own result. So that module's first item's duration covers the whole
module. With ``-x``/``--maxfail``, ``--stepwise`` or under pytest-xdist, each item evaluates only its own case
(xdist already spreads items over workers). ``-p no:trialrun`` turns the plugin off.

May import anything below the CLI (it turns cases into pytest items and results into pytest outcomes).
"""

# The hooks and fixtures are here, where pytest looks for them (the entry point names this module); the session's
# state and the nodes it makes are in `_session`, what it shows and aggregates in `_report`, a saved session's raw
# exchanges in `_exchanges`.

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._util.display import clean
from ._report import shown
from ._session import REPORT_ATTR, STATE, CaseItem, SuiteCollector, session_state

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from ..case import Case, TrialContext
    from ..models import ScriptedModel

__all__ = ["CaseItem", "SuiteCollector"]

_CASE_LIST_NAMES = ("cases", "CASES")


# -- options and configuration ------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("trialrun", "trialrun: evaluate tool-calling agents (cases as tests)")
    group.addoption("--trialrun-trials", type=_positive_int, default=1, metavar="K",
                    help="run every trialrun case K times; the item passes when all K pass (default 1)")
    group.addoption("--trialrun-concurrency", type=_positive_int, default=None, metavar="N",
                    help="trials in flight at once (default 16)")
    group.addoption("--trialrun-include-live-canary", action="store_true", default=False,
                    help="run live-canary cases (they may reach a real model); skipped otherwise")
    group.addoption("--trialrun-suite", action="append", default=[], metavar="PATH",
                    help="also collect the cases of a suite file (tests.json/YAML), with trialrun.toml from the "
                         "current directory; repeatable")
    group.addoption("--trialrun-save", action="store_true", default=False,
                    help="save the session's trialrun results to the results store (results_<ts>.json + latest.json)")
    group.addoption("--trialrun-no-exchanges", action="store_true", default=False,
                    help="with --trialrun-save, keep no raw HTTP exchanges beside the result file "
                         "(trialrun.toml: exchanges = false)")


_CALL_FAILED = pytest.StashKey[bool]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "trialrun: a trialrun evaluation case (added by the trialrun plugin)")
    config.addinivalue_line("markers", "live_canary: a trialrun case that runs against a live model")
    state = session_state(config)
    for suite in state.suites:
        if not suite.is_file():
            raise pytest.UsageError(f"--trialrun-suite {suite}: no such file")
        # A suite is collected like a file named on the command line (it need not match python_files).
        if not any(_same_path(arg, suite, config) for arg in config.args):
            config.args.append(str(suite))


def _same_path(arg: str, path: Path, config: pytest.Config) -> bool:
    candidate = arg.split("::", 1)[0]
    return (config.invocation_params.dir / candidate).resolve() == path


# -- collection ---------------------------------------------------------------------------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> list[CaseItem] | None:
    case_module = sys.modules.get("trialrun.case")
    if case_module is None or not isinstance(collector, pytest.Module):
        return None  # no Case can exist before trialrun.case is imported: stay out of sessions without cases
    case_type = case_module.Case
    if isinstance(obj, case_type):
        found = [obj]
    elif name in _CASE_LIST_NAMES and isinstance(obj, (list, tuple)) and any(isinstance(c, case_type) for c in obj):
        problems = [
            case_module.Problem(f"{name}[{index}] is {type(entry).__name__} {entry!r:.60}, not a trialrun Case",
                                source=str(collector.path), field=name)
            for index, entry in enumerate(obj) if not isinstance(entry, case_type)
        ]
        if problems:
            raise case_module.CaseError(problems)
        found = list(obj)
    else:
        return None
    return _items(collector, found)


_SEEN = pytest.StashKey["dict[str, Case]"]()


def _items(collector: pytest.Collector, cases: list[Case]) -> list[CaseItem]:
    """Items for cases not yet collected in this module; two different cases with one name are an error."""
    seen = collector.stash.setdefault(_SEEN, {})
    items = []
    for case in cases:
        earlier = seen.get(case.name)
        if earlier is case:
            continue  # the same case under two names (a decorated function also listed in CASES)
        if earlier is not None:
            from ..case import CaseError, Problem

            raise CaseError([Problem(f"two cases are named {case.name!r}; names must be unique in a module",
                                     case=case.name, field="name", source=str(collector.path))])
        seen[case.name] = case
        items.append(CaseItem.from_parent(collector, name=clean(case.name, lines=False), case=case))
    return items


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A module whose cases are broken (CaseError) is a collection error that says which case and field, without
    a traceback through trialrun."""
    report = yield
    if report.failed and isinstance(collector, pytest.Module):
        call = report.__dict__.get("call")
        case_module = sys.modules.get("trialrun.case")
        excinfo = getattr(call, "excinfo", None)
        if case_module is not None and excinfo is not None and isinstance(excinfo.value, case_module.CaseError):
            line = next((entry.lineno + 1 for entry in reversed(excinfo.traceback) if entry.path == collector.path), None)
            where = f"{collector.path}" + (f":{line}" if line else "")
            report.longrepr = shown(f"trialrun: broken case(s) in {where}\n{excinfo.value}")
    return report


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteCollector | None:
    state = parent.config.stash.get(STATE, None)
    if state is not None and state.suites and file_path.resolve() in state.suites:
        return SuiteCollector.from_parent(parent, path=file_path)
    return None


# -- reports: carry each case's result to the controller (the session aggregates, saves, summarises) --------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if isinstance(item, CaseItem):
        position = session_state(item.config).positions.get(item.nodeid, 0)
        if call.when == "call" and item.result is not None:
            setattr(report, REPORT_ATTR, {"position": position, "case": item.result.model_dump(mode="json")})
            session_state(item.config).local_results[item.nodeid] = item.result
        elif call.when == "setup" and report.skipped and item.skip_reason is not None:
            from ..report.results import jsonable

            case = item.case
            # The metadata too (a decorated case's module): a report names a skipped case as it does its siblings.
            skipped = {"name": case.name, "title": case.title, "description": case.description, "tags": list(case.tags),
                       "mode": case.mode, "skipped": True, "skip_reason": item.skip_reason,
                       "metadata": jsonable(dict(case.metadata))}
            setattr(report, REPORT_ATTR, {"position": position, "case": skipped})
    elif call.when == "call" and "_trialrun_no_network" in getattr(item, "fixturenames", ()):
        item.stash[_CALL_FAILED] = report.failed
    return report


# -- fixtures -----------------------------------------------------------------------------------------------------
@pytest.fixture
def _trialrun_no_network(request: pytest.FixtureRequest) -> Iterator[list[str]]:
    """The no-network guard around a test that uses trialrun's fixtures. SDKs often swallow the blocked
    connection's exception, so an attempt the test did not fail on fails it at teardown."""
    from ..models import guard

    with guard.no_network(label=f"test {request.node.nodeid!r}") as attempts:
        yield attempts
    if attempts and not request.node.stash.get(_CALL_FAILED, False):
        pytest.fail(attempts[0], pytrace=False)


@pytest.fixture
def trialrun_ctx(request: pytest.FixtureRequest, _trialrun_no_network: list[str]) -> Iterator[TrialContext]:
    """A TrialContext for an ordinary test: `workdir`, `scripted()`, `http_client()`, `trajectory()`.

    Its clients are closed and its workdir removed after the test; the network is blocked during it."""
    from ..case import Case, TrialContext

    stand_in = Case(
        name=request.node.name, invoke=_not_invoked, expect_outcome=[_not_graded],
        metadata={"pytest_nodeid": request.node.nodeid},
    )
    ctx = TrialContext(stand_in, trial=1)
    try:
        yield ctx
    finally:
        _close(ctx)


def _not_invoked(ctx: TrialContext) -> None:
    """The stand-in case behind `trialrun_ctx` is never run: the test is the invoke."""


def _not_graded(run: Any) -> bool:
    return True


def _close(ctx: TrialContext) -> None:
    ctx.close()


@pytest.fixture
def scripted_model(_trialrun_no_network: list[str]) -> Callable[..., ScriptedModel]:
    """A factory of scripted models: `scripted_model([tr.tool_call("read_file", path="a.txt"), tr.reply("done")])`.

    Keyword arguments go to ScriptedModel; the network is blocked during the test."""
    from ..models import ScriptedModel

    def make(steps: Any, **kwargs: Any) -> ScriptedModel:
        return ScriptedModel(steps, **kwargs)

    return make
