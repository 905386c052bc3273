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

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ExceptionChainRepr, ReprEntryNative, ReprFileLocation, ReprTraceback

from .._util.display import clean

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from ._exchanges import SessionExchanges
    from ..case import Case, TrialContext
    from ..suite.config import Config
    from ..models import ScriptedModel
    from ..report.results import CaseResult, RunReport

__all__ = ["CaseItem", "SuiteCollector"]

_CASE_LIST_NAMES = ("cases", "CASES")
#: The report attribute carrying an item's CaseResult (as JSON data): pytest and xdist serialise a report's extra
#: attributes, so the controller sees every worker's results (for --trialrun-save and the summary).
_REPORT_ATTR = "trialrun_case"
_LIVE_CANARY_REASON = "live canary: runs only with --trialrun-include-live-canary"
_SUMMARY_ROWS = 30


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


_STATE = pytest.StashKey["_State"]()
_CALL_FAILED = pytest.StashKey[bool]()


def _is_worker(config: pytest.Config) -> bool:
    """An xdist worker: it runs items; the controller aggregates, saves and prints the summary."""
    return hasattr(config, "workerinput")


class _State:
    """Per-session plugin state: options, results evaluated ahead of their items, and the results reported."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.trials: int = config.getoption("trialrun_trials")
        self.concurrency: int | None = config.getoption("trialrun_concurrency")
        self.include_live: bool = config.getoption("trialrun_include_live_canary")
        self.save: bool = config.getoption("trialrun_save")
        self.no_exchanges: bool = config.getoption("trialrun_no_exchanges")
        invocation = config.invocation_params.dir
        self.suites: list[Path] = [(invocation / p).resolve() for p in config.getoption("trialrun_suite")]
        # Evaluating a whole module at once must not run cases the user would not see: -x/--maxfail and --stepwise
        # stop early, and an xdist worker does not know which items it will be sent.
        self.batched = not (_is_worker(config) or config.getoption("maxfail", 0) or config.getoption("stepwise", False))
        self.started_at = datetime.now(timezone.utc)
        self.tags: set[str] = set()
        self.collected = False
        self.positions: dict[str, int] = {}
        self.modules: dict[str, list[CaseItem]] = {}  # selected case items by their module (or suite file)
        self._ready: dict[str, CaseResult] = {}
        self._evaluated: set[str] = set()
        self.reported: dict[str, tuple[int, dict[str, Any]]] = {}
        self.local_results: dict[str, CaseResult] = {}  # results of this process's items (no JSON round trip)
        self._report: RunReport | None = None
        self.saved: Path | None = None
        self.save_error: str | None = None
        self.save_warning: str | None = None
        self._config_cache: Config | None = None
        self._exchanges: SessionExchanges | None = None
        self._exchanges_chosen = False
        self.exchanges_saved: Path | None = None

    # -- hooks (this object is registered as a plugin for the session) ------------------------------------------
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """After deselection: what each module will run, and the test order (for the saved report, also when
        xdist workers report in any order)."""
        if not self.collected:
            return
        for position, item in enumerate(session.items):
            if isinstance(item, CaseItem):
                self.positions[item.nodeid] = position
                self.modules.setdefault(item.parent.nodeid if item.parent else "", []).append(item)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, _REPORT_ATTR, None)
        if data is not None:
            self.reported[report.nodeid] = (data["position"], data["case"])

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """pytest-xdist (controller): tell each worker where its part of the session's exchanges goes."""
        exchanges = self.exchanges()
        if exchanges is not None:
            node.workerinput["trialrun_exchanges"] = exchanges.worker_input()

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        exchanges = self._exchanges
        if _is_worker(self.config):
            # A worker's part stays open, and so locked, until the worker exits: what cleans up after killed runs in
            # that folder leaves it alone until the controller, once every worker is done, merges it.
            return
        if not self.save or not self.reported:
            if exchanges is not None:
                exchanges.discard()
            return
        from ..report.store import LatestNotUpdated, ResultsStore

        try:
            report = self.session_report(interrupted=exitstatus == pytest.ExitCode.INTERRUPTED)
            report.config_snapshot = _snapshot(self)
            store = ResultsStore(_results_dir(self))
            try:
                self.saved = store.save(report)
            except LatestNotUpdated as exc:  # saved; only latest.json could not follow it (a warning, as in the CLI)
                self.saved, self.save_warning = exc.saved, str(exc)
        except (OSError, ValueError) as exc:  # a bad trialrun.toml, an unwritable folder: loud, and the run fails
            self.save_error = str(exc)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if exchanges is not None:
                exchanges.discard()
            return
        if exchanges is not None:
            from ._exchanges import item_key

            positions = {nodeid: position for nodeid, (position, _) in self.reported.items()}
            names = {item_key(positions[case.metadata["pytest_nodeid"]]): case.name
                     for case in report.cases if case.metadata.get("pytest_nodeid") in positions}
            self.exchanges_saved = exchanges.finish(self.saved, names, report.run_id)
        store.remove_stale_temps()  # what killed sessions (or runs) left here, after this session's parts are merged

    def exchanges(self) -> SessionExchanges | None:
        """Where this process keeps its trials' raw exchanges: only when the session saves its results, unless
        --trialrun-no-exchanges or `exchanges = false`; a worker writes where its controller said."""
        if self._exchanges_chosen:
            return self._exchanges
        self._exchanges_chosen = True
        if not self.save or self.no_exchanges:
            return None
        from ._exchanges import SessionExchanges

        if _is_worker(self.config):
            data = self.config.workerinput.get("trialrun_exchanges")  # type: ignore[attr-defined]
            if data is not None:
                self._exchanges = SessionExchanges.for_worker(data, str(self.config.workerinput["workerid"]))  # type: ignore[attr-defined]
            return self._exchanges
        try:
            config = self.trialrun_config()
            directory = _results_dir(self)
        except (OSError, ValueError):  # a bad trialrun.toml: saving will say so, and fail the run
            return None
        if config.exchanges:
            self._exchanges = SessionExchanges.new(directory, config.exchanges_max_bytes)
        return self._exchanges

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
        if _is_worker(config):
            return
        if any(len(case.get("trials") or ()) > 1 for _, case in self.reported.values()):
            _summary_table(terminalreporter, self.session_report(interrupted=False))
        if self.save:
            if self.saved is not None:
                terminalreporter.write_line(clean(f"trialrun: results saved to {self.saved}"))
                if self.save_warning is not None:
                    terminalreporter.write_line(_shown(f"trialrun: {self.save_warning}"), yellow=True)
                if self.exchanges_saved is not None:
                    terminalreporter.write_line(clean(f"trialrun: raw exchanges saved to {self.exchanges_saved}"))
                if self._exchanges is not None and self._exchanges.problem:
                    terminalreporter.write_line(_shown(f"trialrun: raw exchanges not kept: {self._exchanges.problem}"),
                                                yellow=True)
            elif self.save_error is not None:
                terminalreporter.write_line(_shown(f"trialrun: could not save the results: {self.save_error}"), red=True)
            elif not self.reported:
                terminalreporter.write_line("trialrun: no trialrun case ran; nothing saved")

    def session_report(self, interrupted: bool) -> RunReport:
        """The session's RunReport, built once (saving and the summary table share it)."""
        if self._report is None:
            self._report = _session_report(self, interrupted)
        return self._report

    # The configuration (trialrun.toml) is read only when a suite or --trialrun-save needs it.
    def trialrun_config(self) -> Config:
        if self._config_cache is None:
            from ..suite.config import load_config

            config = load_config(self.config.invocation_params.dir)
            if self.suites:
                config = config.with_overrides(suite=self.suites[0])
            self._config_cache = config
        return self._config_cache

    def result_for(self, item: CaseItem) -> CaseResult:
        """The item's CaseResult: evaluated ahead with its module's other selected cases, or now."""
        ready = self._ready.pop(item.nodeid, None)
        if ready is not None:
            return ready
        batch = [item]
        if self.batched:
            batch += [
                other for other in self.modules.get(item.parent.nodeid if item.parent else "", ())
                if other is not item and other.nodeid not in self._evaluated and not _has_skip_mark(other)
            ]
        from ..run.runner import DEFAULT_CONCURRENCY, evaluate

        report = evaluate(
            [member.case for member in batch], trials=self.trials, include_live_canary=True,
            concurrency=self.concurrency or DEFAULT_CONCURRENCY, on_exchanges=self._on_exchanges(batch),
        )
        by_name = {result.name: result for result in report.cases}
        for member in batch:
            self._evaluated.add(member.nodeid)
            if member is not item:
                self._ready[member.nodeid] = by_name[member.case.name]
        return by_name[item.case.name]

    def _on_exchanges(self, batch: list[CaseItem]) -> Callable[[Any, int, list[Any], frozenset[bytes]], None] | None:
        """The runner's `on_exchanges` for a batch: each trial's exchanges to this process's part, keyed by item."""
        exchanges = self.exchanges()
        if exchanges is None:
            return None
        from ._exchanges import item_key

        keys = {member.case.name: item_key(self.positions.get(member.nodeid, 0)) for member in batch}

        def keep(case: Any, trial: int, recorded: list[Any], credentials: frozenset[bytes]) -> None:
            exchanges.write(keys[case.name], trial, recorded, credentials)

        return keep


def _state(config: pytest.Config) -> _State:
    state = config.stash.get(_STATE, None)
    if state is None:
        state = config.stash[_STATE] = _State(config)
        config.pluginmanager.register(state, "trialrun-session")
    return state


def _has_skip_mark(item: pytest.Item) -> bool:
    """Items that may not run (skip, skipif, xfail(run=False)) are left to run on their own, if they do."""
    return (any(item.iter_markers("skip")) or any(item.iter_markers("skipif"))
            or any(mark.kwargs.get("run", True) is False for mark in item.iter_markers("xfail")))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "trialrun: a trialrun evaluation case (added by the trialrun plugin)")
    config.addinivalue_line("markers", "live_canary: a trialrun case that runs against a live model")
    state = _state(config)
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
            report.longrepr = _shown(f"trialrun: broken case(s) in {where}\n{excinfo.value}")
    return report


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> SuiteCollector | None:
    state = parent.config.stash.get(_STATE, None)
    if state is not None and state.suites and file_path.resolve() in state.suites:
        return SuiteCollector.from_parent(parent, path=file_path)
    return None


class SuiteCollector(pytest.File):
    """A suite file (--trialrun-suite): one item per test, built with trialrun.toml as `trialrun run` does."""

    def collect(self) -> Iterator[CaseItem]:
        from ..suite._build import build_cases, suite_warnings
        from ..suite._tests_file import read_suite

        suite, config = read_suite(self.path), _state(self.config).trialrun_config()
        for warning in suite_warnings(suite, config):  # what `trialrun run` prints as warnings
            self.warn(pytest.PytestWarning(_shown(f"trialrun: {warning}")))
        cases = build_cases(suite, config)
        for case in cases:
            yield CaseItem.from_parent(self, name=clean(case.name, lines=False), case=case)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ValueError):  # SuiteError, ConfigError, CaseError: the message says it all
            return _shown(f"trialrun: cannot use the suite {self.path}\n{excinfo.value}")
        return super().repr_failure(excinfo)


# -- the item -----------------------------------------------------------------------------------------------------
class _CaseFailed(Exception):
    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.name)
        self.result = result


class _FailureRepr(ExceptionChainRepr):
    """The failure report of a case: trialrun's text, not a Python traceback through the runner.

    It is a real pytest exception repr (one native-style traceback entry holding the text, and the one-line crash
    location) because pytest-xdist carries only those whole from a worker to the controller; anything else arrives
    as one string, and JUnit's failure message and `-ra` then show the whole report instead of its one line.
    """

    def __init__(self, text: str, crash: ReprFileLocation) -> None:
        lines = [line + "\n" for line in text.splitlines()]
        super().__init__([(ReprTraceback([ReprEntryNative(lines)], None, "native"), crash, None)])
        self.text = text

    def toterminal(self, tw: Any) -> None:
        """The text with its failure lines marked (under xdist the controller prints the same text, plain)."""
        for line in self.text.splitlines():
            stripped = line.lstrip()
            tw.line(line, red=stripped.startswith(("x ", "error (")), bold=stripped.startswith("trial "))
        for name, content, sep in self.sections:
            tw.sep(sep, name)
            tw.line(content)


class CaseItem(pytest.Item):
    """One trialrun case as a pytest test; running it evaluates the case's trials."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.result: CaseResult | None = None
        self.skip_reason: str | None = None
        state = _state(self.config)
        state.collected = True
        self.add_marker("trialrun")
        for tag in case.tags:
            if _markable(tag):
                if tag not in state.tags:
                    state.tags.add(tag)
                    self.config.addinivalue_line("markers", f"{tag}: trialrun case tag")
                self.add_marker(tag)
            else:
                self.extra_keyword_matches.add(tag)
        if case.mode == "live_canary":
            self.add_marker("live_canary")
            from ..run.runner import select_cases

            _, skipped = select_cases([case], include_live_canary=state.include_live)
            if skipped:  # the runner's gate decides; the reason names the pytest option
                self.skip_reason = _LIVE_CANARY_REASON
                self.add_marker(pytest.mark.skip(reason=_LIVE_CANARY_REASON))

    def runtest(self) -> None:
        self.result = _state(self.config).result_for(self)
        if not self.result.passed:
            raise _CaseFailed(self.result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, _CaseFailed):
            from ..render.text import case_failure_text

            width = max(80, min(self.config.get_terminal_writer().fullwidth, 140))
            result = excinfo.value.result
            path, lineno, _ = self.location
            crash = ReprFileLocation(path, (lineno or 0) + 1, _shown(_crash_message(result), lines=False))
            if self.config.getoption("tbstyle", "auto") == "line":
                return _FailureRepr("", crash)  # pytest prints the crash line itself
            return _FailureRepr(clean(case_failure_text(result, width=width)), crash)
        case_module = sys.modules.get("trialrun.case")
        if case_module is not None and isinstance(excinfo.value, case_module.CaseError):
            return _shown(f"trialrun: {excinfo.value}")
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Any, int, str]:
        """Where the case is: its invoke's line in this module, its test's line in a suite file, else the top.

        (pytest needs a line number here: its skip reports assert one.)"""
        code = getattr(self.case.invoke, "__code__", None)
        lineno = 0
        if code is not None and Path(code.co_filename).resolve() == self.path.resolve():
            lineno = code.co_firstlineno - 1
        elif isinstance(self.case.metadata.get("line"), int) and isinstance(self.parent, SuiteCollector):
            lineno = max(self.case.metadata["line"] - 1, 0)
        return self.path, lineno, self.name


def _markable(tag: str) -> bool:
    """A tag can be a marker when pytest's `markers` ini syntax can register it (no ':' or '(')."""
    return bool(tag.strip()) and ":" not in tag and "(" not in tag and not tag.startswith("_") and tag == tag.strip()


def _shown(text: str, *, lines: bool = True) -> str:
    """Text for the terminal, JUnit XML and `-ra`: scrubbed (`_scrub`: it may quote an output, an exception, a
    path), then `clean` (control characters written as escapes)."""
    from .._scrub import scrub_text

    return clean(scrub_text(text), lines=lines)


def _crash_message(result: CaseResult) -> str:
    """`0/1 trials passed; <why>`, where why is the one line every trialrun report names first (`first_reason`:
    a failed verdict, else an error, else a teardown error)."""
    from ..render.text import first_reason

    counts = f"{result.passed_trials}/{result.trial_count} trials passed"
    reason = first_reason(result)
    return f"{counts}; {reason}" if reason else counts


# -- reports: carry each case's result to the controller, aggregate, save, summarise -------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if isinstance(item, CaseItem):
        position = _state(item.config).positions.get(item.nodeid, 0)
        if call.when == "call" and item.result is not None:
            setattr(report, _REPORT_ATTR, {"position": position, "case": item.result.model_dump(mode="json")})
            _state(item.config).local_results[item.nodeid] = item.result
        elif call.when == "setup" and report.skipped and item.skip_reason is not None:
            from ..report.results import jsonable

            case = item.case
            # The metadata too (a decorated case's module): a report names a skipped case as it does its siblings.
            skipped = {"name": case.name, "title": case.title, "description": case.description, "tags": list(case.tags),
                       "mode": case.mode, "skipped": True, "skip_reason": item.skip_reason,
                       "metadata": jsonable(dict(case.metadata))}
            setattr(report, _REPORT_ATTR, {"position": position, "case": skipped})
    elif call.when == "call" and "_trialrun_no_network" in getattr(item, "fixturenames", ()):
        item.stash[_CALL_FAILED] = report.failed
    return report


def _session_report(state: _State, interrupted: bool) -> RunReport:
    """One RunReport of every case the session ran (names made unique with their module when two modules share
    one), in test order."""
    from ..report.results import CaseResult, RunReport

    entries = sorted(state.reported.items(), key=lambda entry: (entry[1][0], entry[0]))
    counts: dict[str, int] = {}
    for _, (_, data) in entries:
        counts[data["name"]] = counts.get(data["name"], 0) + 1
    cases = []
    for nodeid, (_, data) in entries:
        local = state.local_results.get(nodeid)
        result = local.model_copy() if local is not None else CaseResult.model_validate(data)
        if counts[result.name] > 1:
            result.name = nodeid
        result.metadata = {**result.metadata, "pytest_nodeid": nodeid}
        cases.append(result)
    finished = datetime.now(timezone.utc)
    return RunReport.build(
        cases, trial_count=state.trials, started_at=state.started_at,
        duration_s=(finished - state.started_at).total_seconds(),
        status="interrupted" if interrupted else "completed",
    )


def _snapshot(state: _State) -> dict[str, Any]:
    import platform

    from .._version import __version__

    snapshot: dict[str, Any] = {}
    if len(state.suites) == 1:
        from ..suite._build import config_snapshot
        from ..suite._tests_file import read_suite

        snapshot.update(config_snapshot(state.trialrun_config(), read_suite(state.suites[0])))
    snapshot.update({
        "runner": "pytest",
        "pytest_version": pytest.__version__,
        "trialrun_version": __version__,
        "python_version": platform.python_version(),
        "trials": state.trials,
        "include_live_canary": state.include_live,
    })
    return snapshot


def _results_dir(state: _State) -> Path:
    """Where `trialrun run` would save: trialrun.toml's results_dir, else the suite's folder (the configured suite,
    or the one given with --trialrun-suite); with neither a config file nor a suite, state/eval/ under the rootdir."""
    config = state.trialrun_config()
    if config.results_dir is not None or state.suites or config.source is not None:
        return config.results_path()
    return state.config.rootpath / "state" / "eval"


def _summary_table(tr: Any, report: RunReport) -> None:
    """pass@1 and pass^k per case and for the session, when some case ran more than one trial."""
    graded = report.graded_cases
    if not graded or max(case.trial_count for case in graded) <= 1:
        return
    rows = graded
    hidden = 0
    if len(rows) > _SUMMARY_ROWS:  # a big suite: every case that was not perfect, and a count of the rest
        rows = [case for case in graded if not case.passed]
        hidden = len(graded) - len(rows)
    session = f"session ({len(graded)} case{'s' if len(graded) != 1 else ''})"
    names = {id(case): _shown(case.name, lines=False) for case in rows}  # an id may hold a token's value
    name_width = min(max([len(name) for name in names.values()] + [len(session), 10]), 60)
    counts = {case.trial_count for case in graded}
    k = f"k={counts.pop()}" if len(counts) == 1 else "k per case"
    tr.write_sep("=", f"trialrun: pass@1 and pass^k ({k})")
    tr.write_line(f"{'case':<{name_width}}  {'passed':>7}  {'pass@1':>6}  {'pass^k':>6}")
    for case in rows:
        name = names[id(case)]
        name = name if len(name) <= name_width else name[: name_width - 3] + "..."
        line = f"{name:<{name_width}}  {f'{case.passed_trials}/{case.trial_count}':>7}  {case.pass_at_1:>6.2f}  {case.pass_pow_k:>6.2f}"
        tr.write_line(line, red=not case.passed, green=bool(case.passed))
    if hidden:
        tr.write_line(f"... and {hidden} more case(s) that passed every trial")
    trials = sum(case.trial_count for case in graded)
    passed = sum(case.passed_trials for case in graded)
    tr.write_line(f"{session:<{name_width}}  {f'{passed}/{trials}':>7}  {report.pass_at_1:>6.2f}  {report.pass_pow_k:>6.2f}", bold=True)
    if report.skipped_case_count:
        tr.write_line(f"{report.skipped_case_count} case(s) skipped (live canaries)")


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
