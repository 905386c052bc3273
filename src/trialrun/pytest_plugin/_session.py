"""The plugin's per-session state and the pytest nodes it makes: `SessionState` (options, which items each module
runs, the results evaluated ahead and those reported, saving the results and their exchanges, the summary) and
`CaseItem` and `SuiteCollector`. They share a module because they need each other: an item asks the session for its
result, the session batches a module's items and checks what it was given, and no two modules may import each other.
"""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ReprFileLocation

from .._util.display import clean
from ._report import FailureRepr, build_session_report, crash_message, shown, summary_table

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..case import Case
    from ..report.results import CaseResult, RunReport
    from ..suite.config import Config
    from ._exchanges import SessionExchanges

__all__ = ["STATE", "REPORT_ATTR", "SessionState", "session_state", "CaseItem", "SuiteCollector"]

#: The report attribute carrying an item's CaseResult (as JSON data): pytest and xdist serialise a report's extra
#: attributes, so the controller sees every worker's results (for --trialrun-save and the summary).
REPORT_ATTR = "trialrun_case"
_LIVE_CANARY_REASON = "live canary: runs only with --trialrun-include-live-canary"

STATE = pytest.StashKey["SessionState"]()


def _is_worker(config: pytest.Config) -> bool:
    """An xdist worker: it runs items; the controller aggregates, saves and prints the summary."""
    return hasattr(config, "workerinput")


class SessionState:
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
        data = getattr(report, REPORT_ATTR, None)
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
            summary_table(terminalreporter, self.session_report(interrupted=False))
        if self.save:
            if self.saved is not None:
                terminalreporter.write_line(clean(f"trialrun: results saved to {self.saved}"))
                if self.save_warning is not None:
                    terminalreporter.write_line(shown(f"trialrun: {self.save_warning}"), yellow=True)
                if self.exchanges_saved is not None:
                    terminalreporter.write_line(clean(f"trialrun: raw exchanges saved to {self.exchanges_saved}"))
                if self._exchanges is not None and self._exchanges.problem:
                    terminalreporter.write_line(shown(f"trialrun: raw exchanges not kept: {self._exchanges.problem}"),
                                                yellow=True)
            elif self.save_error is not None:
                terminalreporter.write_line(shown(f"trialrun: could not save the results: {self.save_error}"), red=True)
            elif not self.reported:
                terminalreporter.write_line("trialrun: no trialrun case ran; nothing saved")

    def session_report(self, interrupted: bool) -> RunReport:
        """The session's RunReport, built once (saving and the summary table share it)."""
        if self._report is None:
            self._report = build_session_report(self.reported, self.local_results, trials=self.trials,
                                                started_at=self.started_at, interrupted=interrupted)
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


def session_state(config: pytest.Config) -> SessionState:
    state = config.stash.get(STATE, None)
    if state is None:
        state = config.stash[STATE] = SessionState(config)
        config.pluginmanager.register(state, "trialrun-session")
    return state


def _has_skip_mark(item: pytest.Item) -> bool:
    """Items that may not run (skip, skipif, xfail(run=False)) are left to run on their own, if they do."""
    return (any(item.iter_markers("skip")) or any(item.iter_markers("skipif"))
            or any(mark.kwargs.get("run", True) is False for mark in item.iter_markers("xfail")))


def _snapshot(state: SessionState) -> dict[str, Any]:
    """What the saved report records of how it was made: a suite's configuration (`trialrun run`'s snapshot, when
    one suite was collected), and pytest's own settings and versions."""
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


def _results_dir(state: SessionState) -> Path:
    """Where `trialrun run` would save: trialrun.toml's results_dir, else the suite's folder (the configured suite,
    or the one given with --trialrun-suite); with neither a config file nor a suite, state/eval/ under the rootdir."""
    config = state.trialrun_config()
    if config.results_dir is not None or state.suites or config.source is not None:
        return config.results_path()
    return state.config.rootpath / "state" / "eval"


# -- the nodes: a suite file's collector and the item -------------------------------------------------------------
class SuiteCollector(pytest.File):
    """A suite file (--trialrun-suite): one item per test, built with trialrun.toml as `trialrun run` does."""

    def collect(self) -> Iterator[CaseItem]:
        from ..suite._build import build_cases, suite_warnings
        from ..suite._tests_file import read_suite

        suite, config = read_suite(self.path), session_state(self.config).trialrun_config()
        for warning in suite_warnings(suite, config):  # what `trialrun run` prints as warnings
            self.warn(pytest.PytestWarning(shown(f"trialrun: {warning}")))
        cases = build_cases(suite, config)
        for case in cases:
            yield CaseItem.from_parent(self, name=clean(case.name, lines=False), case=case)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ValueError):  # SuiteError, ConfigError, CaseError: the message says it all
            return shown(f"trialrun: cannot use the suite {self.path}\n{excinfo.value}")
        return super().repr_failure(excinfo)


class _CaseFailed(Exception):
    """A case that did not pass (the item's failure; `CaseItem.repr_failure` shows its result, not a traceback)."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.name)
        self.result = result


class CaseItem(pytest.Item):
    """One trialrun case as a pytest test; running it evaluates the case's trials."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.result: CaseResult | None = None
        self.skip_reason: str | None = None
        state = session_state(self.config)
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
        self.result = session_state(self.config).result_for(self)
        if not self.result.passed:
            raise _CaseFailed(self.result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, _CaseFailed):
            from ..render.text import case_failure_text

            width = max(80, min(self.config.get_terminal_writer().fullwidth, 140))
            result = excinfo.value.result
            path, lineno, _ = self.location
            crash = ReprFileLocation(path, (lineno or 0) + 1, shown(crash_message(result), lines=False))
            if self.config.getoption("tbstyle", "auto") == "line":
                return FailureRepr("", crash)  # pytest prints the crash line itself
            return FailureRepr(clean(case_failure_text(result, width=width)), crash)
        case_module = sys.modules.get("trialrun.case")
        if case_module is not None and isinstance(excinfo.value, case_module.CaseError):
            return shown(f"trialrun: {excinfo.value}")
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

