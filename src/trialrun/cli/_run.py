"""`trialrun run`: the checks before anything runs (the tests chosen, their cases, the folders and files the run
will write), the run with its progress bar and journal, the result file saved, the report printed and written; and
the garbage collector around it (paused while the modules load, what was loaded frozen during the run)."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .._util.display import clean
from ._arms import ArmsArgs, RunParts, arm_options, wants_arms
from ._common import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, _check_output_file, _check_results_dir,
                      _check_suite_exists, _config_note, _console, _emit_report, _fail_cleanly, _load_config, _log_config, _print_styled,
                      _report_files, _say)


if TYPE_CHECKING:  # (generic in click 8.2+ only; the project takes 8.1)
    _Choice = click.Choice[str]
else:
    _Choice = click.Choice


class _WireApis(_Choice):
    """The wire APIs trialrun has (the codec registry's names), read when first needed: `trialrun --help` does not
    import the codecs."""

    def __init__(self) -> None:
        super().__init__(())

    @property
    def choices(self) -> tuple[str, ...]:
        from ..wire import CODECS

        return tuple(CODECS)

    @choices.setter
    def choices(self, value: object) -> None:
        pass


@click.command()
@click.argument("test_ids", nargs=-1, metavar="[TEST_ID ...|all]")
@click.option("--trials", "-k", type=click.IntRange(min=1), help="Run each test K times (pass@1 and pass^k).")
@click.option("--tag", "tags", multiple=True, help="Only tests with this tag (repeatable: any of them).")
@click.option("--name", "names", multiple=True, help="Only the test with this exact id (repeatable).")
@click.option("--include-live-canary", is_flag=True, help="Also run tests marked mode: live_canary.")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (default: state/eval/tests.json).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file (default: ./trialrun.toml).")
@click.option("--model", help="Model spec, e.g. scripted:model.yaml, replay:cassettes/, openai:gpt-4.1-mini.")
@click.option("--agent", help="Agent under test: module:function taking (prompt, ctx), a ready-made agent (pi, codex, claude-code, opencode) or \"command: PROGRAM ARGS {prompt}\".")
@click.option("--api", type=_WireApis(), help="Wire API of the reference agent.")
@click.option("--judge", help="Judge output_quality with this model spec instead of the heuristic.")
@click.option("--rubric", type=click.Choice(["balanced", "skill"]), help="How sub-scores make the score (default: balanced).")
@click.option("--strict", is_flag=True, help="Make every suite warning an error (exit 2 before anything runs).")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files go (default: the suite's folder).")
@click.option("--concurrency", "-j", type=click.IntRange(min=1), help="Trials in flight at once.")
@click.option("--executor", metavar="local|ray[://ADDRESS]",
              help="Where trials run: local (default), ray (local Ray or $RAY_ADDRESS), ray://HOST:PORT. Needs trialrun[ray].")
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE", help="Record a label in config_snapshot (repeatable).")
@click.option("--no-exchanges", is_flag=True,
              help="Keep no raw HTTP exchanges beside the result file (trialrun.toml: exchanges = false).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (no table, no progress bar).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
@click.option("--no-summary", is_flag=True, help="Do not append to $GITHUB_STEP_SUMMARY.")
@arm_options
@_fail_cleanly
def run(test_ids: tuple[str, ...], trials: int | None, tags: tuple[str, ...], names: tuple[str, ...],
        include_live_canary: bool, suite: str | None, config_path: str | None, model: str | None, agent: str | None,
        api: str | None, judge: str | None, rubric: str | None, strict: bool, results_dir: str | None,
        concurrency: int | None, executor: str | None, labels: tuple[str, ...], no_exchanges: bool, as_json: bool,
        junit_path: str | None, markdown_path: str | None, no_summary: bool, **ab: Any) -> None:
    """Run the suite, or the tests named (TEST_ID ...; `all` or nothing runs every test). With arms (`--arms A,B`
    or [arms] tables in trialrun.toml), an A/B run of the same tests under each arm (`_arms`)."""
    _pause_gc()
    _import_httpx_without_its_cli()
    from .._scrub import scrub_text
    from ..suite._build import config_snapshot

    label_map = _labels(labels)
    recorder = None
    with _nothing_run_yet(lambda: recorder):  # Ctrl-C before the first trial starts: nothing was run, nothing is kept
        config = _load_config(config_path, suite=Path(suite).resolve() if suite else None, model=model, agent=agent,
                              api=api, judge=judge, results_dir=Path(results_dir).resolve() if results_dir else None,
                              trials=trials, concurrency=concurrency, rubric=rubric, executor=executor,
                              exchanges=False if no_exchanges else None)
        if not as_json:
            _say(_config_note(config))
        _log_config(config)
    if wants_arms(config, ab):  # an A/B run handles its own interrupts, from its start to its save
        if junit_path:
            raise click.UsageError("--junit writes one run; with arms, `trialrun report RUN --junit FILE` writes an arm's")
        from ._arms import run_arms

        run_arms(config, ab, ArmsArgs(test_ids, names, tags, include_live_canary, strict, label_map, as_json,
                                      markdown_path, not no_summary, trials is not None, _PARTS))
    with _nothing_run_yet(lambda: recorder):
        plan = _preflight(config, test_ids, names, tags, include_live_canary=include_live_canary, strict=strict)
        console = _console(stderr=as_json, plain_ok=True)
        store = _ready_to_save(config, junit_path, markdown_path)
        snapshot = config_snapshot(config, plan.suite_file, label_map)
        if config.model_spec.live and not as_json:
            _print_styled(console, f"live model {clean(scrub_text(str(config.model_spec)))}: tests call the provider",
                          "yellow")
        recorder = _start_recorder(store, config, plan, snapshot)
    report, stopped = _evaluate_with_progress(config, plan, snapshot, recorder, console, enabled=not as_json)
    with _interrupt_held() as held:  # Ctrl-C while the run is saved and printed: saved first, then 130
        exit_code, where = _save_and_report(report, stopped, recorder, store, as_json=as_json, junit_path=junit_path,
                                            markdown_path=markdown_path, summary=not no_summary)
    if stopped is None and held:
        stopped = exit_code = EXIT_INTERRUPTED
    if stopped is not None:
        _end_interrupted(report, exit_code, where)
    _leave_frozen_at_exit()
    sys.exit(exit_code)


@dataclass(frozen=True)
class _Plan:
    """What the run will do, checked before anything runs: the suite, the tests chosen and their cases, whether live
    canaries run, and (case name, trials) of each case whose trials run (a live canary's only when they do)."""

    suite_file: Any
    chosen: list[str]
    cases: list[Any]
    include_live_canary: bool
    trials: list[tuple[str, int]]

    @property
    def count(self) -> int:
        return sum(n for _, n in self.trials)


def _preflight(config: Any, test_ids: tuple[str, ...], names: tuple[str, ...], tags: tuple[str, ...], *,
               include_live_canary: bool, strict: bool) -> _Plan:
    """Read the suite, choose the tests, build their cases, check the API keys they need and say the suite's
    warnings (errors with --strict): a usage or suite error here means nothing was run."""
    from ..suite._build import build_cases, check_api_keys, ignored_by_custom_agent, suite_warnings
    from ..suite._tests_file import SuiteError, read_suite

    _check_suite_exists(config)
    suite_file = read_suite(config.suite_path())
    chosen = _chosen(suite_file, config, test_ids, names, tags)
    include = include_live_canary or config.model_spec.live
    cases = build_cases(suite_file, config, only=chosen, include_live_canary=include)
    check_api_keys(config)
    plan = _Plan(suite_file, chosen, cases, include,
                 [(c.name, c.trials or config.trials) for c in cases if c.mode == "deterministic" or include])
    if not plan.count:  # every selected test is a live canary the gate would skip: nothing to grade, nothing to save
        raise click.UsageError(
            f"the selected test(s) {', '.join(map(repr, chosen))} are live canaries, skipped without "
            f"--include-live-canary; add it to run them (nothing was run or saved)")
    warnings = suite_warnings(suite_file, config, only=chosen)
    if strict and warnings:
        raise SuiteError([f"{w} (an error with --strict)" for w in warnings])
    for warning in [*warnings, *ignored_by_custom_agent(config)]:
        _say(f"warning: {warning}")
    return plan


def _chosen(suite_file: Any, config: Any, test_ids: tuple[str, ...], names: tuple[str, ...],
            tags: tuple[str, ...]) -> list[str]:
    """The ids of the suite's tests that the TEST_IDs, --name and --tag select, in the suite's order; a usage error
    for an id the suite does not have, or a selection of none."""
    wanted = [t for t in test_ids if t != "all"] + list(names)
    known = [t.id for t in suite_file.tests]
    known_ids = set(known)
    unknown = [t for t in wanted if t not in known_ids]
    if unknown:
        shown = ", ".join(known[:20]) + (f", ... ({len(known) - 20:,} more)" if len(known) > 20 else "")
        raise click.UsageError(f"no test {', '.join(map(repr, unknown[:20]))} in {config.suite_path()} (tests: {shown})")
    known_tags = sorted({tag for test in suite_file.tests for tag in test.tags})
    unknown_tags = [tag for tag in tags if tag not in known_tags]
    if unknown_tags:
        import difflib

        close = [c for tag in unknown_tags for c in difflib.get_close_matches(tag, known_tags, n=1, cutoff=0.6)]
        raise click.UsageError(f"no test in {config.suite_path()} has the tag {', '.join(map(repr, unknown_tags))}"
                               + (f"; did you mean {', '.join(map(repr, close))}?" if close else "")
                               + f" (tags: {', '.join(known_tags) or 'none'})")
    wanted_ids = set(wanted)
    chosen = [t.id for t in suite_file.tests if (not wanted or t.id in wanted_ids) and (not tags or set(tags) & set(t.tags))]
    if not chosen:
        raise click.UsageError(f"no test matches the selection ({_selection(test_ids, names, tags)})")
    return chosen


def _ready_to_save(config: Any, junit_path: str | None, markdown_path: str | None) -> Any:
    """The results store, its folder made and writable, and the report files writable (the temp files a killed run
    left beside them removed), before anything runs."""
    from ..report.store import ResultsStore

    store = ResultsStore(config.results_path())
    _check_results_dir(store.directory)
    _check_output_file(junit_path, "--junit")
    _check_output_file(markdown_path, "--markdown")
    _remove_stale_temps_of(junit_path, markdown_path)
    return store


def _start_recorder(store: Any, config: Any, plan: _Plan, snapshot: Any) -> Any:
    """The run's journal, begun in the results folder (each trial is kept as it ends)."""
    from ..run._records import RunRecorder

    recorder = RunRecorder.start(store, plan.cases, trials=config.trials, include_live_canary=plan.include_live_canary,
                                 config_snapshot=snapshot, exchanges=config.exchanges,
                                 exchanges_max_bytes=config.exchanges_max_bytes)
    for note in recorder.notes:
        _say(f"note: {note}")
    return recorder


def _evaluate_with_progress(config: Any, plan: _Plan, snapshot: Any, recorder: Any, console: Any, *,
                            enabled: bool) -> tuple[Any, int | None]:
    """Run the cases with a progress bar, each trial recorded as it ends: the report, and the exit code of the signal
    that stopped the run (None when it ran to the end). A second interrupt while teardowns run ends the process."""
    from ..render._progress import RunProgress
    from ..run import runner

    progress = RunProgress(console, plan.count, enabled=enabled, trials=dict(plan.trials))
    stopped = None

    def on_trial(case: Any, result: Any) -> None:
        recorder.trial(case, result)
        progress.advance(result.passed, case.name)

    _freeze_what_was_imported()
    with progress:
        try:
            report = runner.evaluate(
                plan.cases, trials=config.trials, run_id=recorder.run_id, include_live_canary=plan.include_live_canary,
                concurrency=config.concurrency or runner.DEFAULT_CONCURRENCY,
                config_snapshot=snapshot, on_trial=on_trial, executor=config.executor,
                on_exchanges=recorder.exchanges,  # (on Ray too: each worker sends its trial's line back)
            )
        except runner.EvaluationInterrupted as interrupted:
            report = interrupted.report
            stopped = _signal_exit(interrupted.signal)
        except KeyboardInterrupt as again:  # a second Ctrl-C (or SIGTERM) while teardowns still ran: give up on them
            progress.stop()
            _say(f"interrupted again: stopped waiting for teardowns; {recorder.abandon()}")
            sys.stderr.flush()
            os._exit(_signal_exit(getattr(again, "signal", None)))
        except BaseException:
            recorder.drop()
            raise
    return report, stopped


def _save_and_report(report: Any, stopped: int | None, recorder: Any, store: Any, *, as_json: bool,
                     junit_path: str | None, markdown_path: str | None, summary: bool) -> tuple[int, Any]:
    """Save the run (or say where it went instead), print it and write the report files: the exit code (the
    signal's when one stopped the run; else 1 when a test failed, 2 when the run could not be saved where asked)
    and where the run was saved (None when nowhere). A run interrupted before any trial finished is not saved as a
    result file (nor made latest): its journal is kept (`RunRecorder.keep`)."""
    from ..report.store import has_finished

    if stopped is not None and not has_finished(report):
        kept = recorder.keep(report)
        if as_json:
            _emit_report(report, as_json=True, saved=None)
        return stopped, kept
    saved, fallback = recorder.save(report)
    for warning in recorder.warnings:
        _say(f"warning: {warning}")
    exit_code = stopped if stopped is not None else EXIT_FAILED if report.failed_case_count else EXIT_OK
    _emit_report(report, as_json=as_json, saved=None if saved is None else str(saved))
    if saved is None:
        _say(f"error: the run was not saved to {store.directory}: {recorder.save_problem}; "
             + (f"it was saved to {fallback} instead (`trialrun report {fallback}` shows it)" if fallback
                else "nor anywhere else"))
        exit_code = exit_code if stopped is not None else EXIT_USAGE
    _report_files(report, junit_path=junit_path, markdown_path=markdown_path, html_path=None, summary=summary)
    return exit_code, saved or fallback


@contextlib.contextmanager
def _nothing_run_yet(recorder: Callable[[], Any]) -> Iterator[None]:
    """Ctrl-C in the block (before the first trial starts) is an exit 130 with one line: nothing was run, and nothing
    is kept (the journal `recorder()` began, if any, is dropped)."""
    try:
        yield
    except KeyboardInterrupt:
        begun = recorder()
        if begun is not None:
            begun.drop()
        _say("interrupted before the run started: nothing was run or saved")
        sys.exit(EXIT_INTERRUPTED)


@contextlib.contextmanager
def _interrupt_held() -> Iterator[list[int]]:
    """Ctrl-C (SIGINT) held while the block runs (saving the run must not be cut short): the list says whether one
    came; a second one (a save that hangs) interrupts it after all. In the main thread, and only when SIGINT has a
    handler (a run in the background of a script ignores it)."""
    import signal
    import threading

    came: list[int] = []
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield came
        return

    def held(signum: int, frame: Any) -> None:
        came.append(signum)
        if len(came) > 1:
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, held)
    try:
        yield came
    finally:
        signal.signal(signal.SIGINT, previous)


def _end_interrupted(report: Any, exit_code: int, where: Any) -> NoReturn:
    """Say what of an interrupted run was saved, and end the process now."""
    from ..report.store import has_finished

    partial = [c for c in report.cases if c.partial]
    whole = len(report.cases) - len(partial)
    what = f"the {whole} finished test(s)" + (f" and {len(partial)} partly run test(s)" if partial else "")
    said = f"saved {what} to {where}" if where else "the finished tests were not saved"
    if not has_finished(report):
        said = ("before any test finished: no result file was saved and latest.json was left as it was"
                + (f"; the run's journal is kept as {where} (`trialrun recover` saves it)" if where else ""))
    _say(f"interrupted: {said}")
    # A synchronous agent still running in a worker thread cannot be stopped; do not wait for it at exit.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)


def _import_httpx_without_its_cli() -> None:
    """Import httpx, but not the command line client its `__init__` imports to offer `httpx.main` (`httpx._main`:
    click, rich and pygments when they are installed: rich and pygments are 0.03-0.05 s of every run; trialrun never
    calls it).

    Safe because nothing else changes: it is done only when httpx is not imported yet, the stand-in module exists
    only while httpx's own `__init__` runs (its `from ._main import main`), and afterwards `httpx.main` still runs
    httpx's client (imported when called) and `import httpx._main` imports the real module, as if httpx had never
    bound it."""
    if "httpx" in sys.modules or "httpx._main" in sys.modules:
        return
    import types

    def main(*args: Any, **kwargs: Any) -> Any:
        from httpx._main import main as real_main

        return real_main(*args, **kwargs)

    stand_in = types.ModuleType("httpx._main", "stands in while httpx is imported (trialrun.cli)")
    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules["httpx._main"] = stand_in
    try:
        import httpx  # noqa: F401
    finally:
        if sys.modules.get("httpx._main") is stand_in:
            del sys.modules["httpx._main"]
        package = sys.modules.get("httpx")
        if package is not None and package.__dict__.get("_main") is stand_in:
            del package.__dict__["_main"]


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    labels = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--label")
        labels[key.strip()] = value
    return labels


_GC_PAUSED = "trialrun.gc_paused"


def _pause_gc() -> None:
    """No garbage collection while the modules are imported and the cases built: that makes long-lived objects
    only, which a collection would walk for nothing (passes over a growing heap, about 0.02 s); collection is back
    when the run starts (`_freeze_what_was_imported`), or when the command ends before."""
    import gc

    if gc.isenabled():  # a caller who disabled collection keeps it so
        gc.disable()
        context = click.get_current_context()
        context.meta[_GC_PAUSED] = True
        context.call_on_close(gc.enable)


def _freeze_what_was_imported() -> None:
    """Leave what is alive before the run (modules, classes, schemas: most of the process's objects) out of the
    garbage collector's passes until the command is done: a run makes many small objects, and each full pass
    would walk all of those again (with the pause above, 0.03-0.04 s of collection in a 1,000-trial run instead of
    0.08-0.09 s). Nothing is kept alive by this: the objects are still freed when their last reference goes; only
    cycles among them wait for `gc.unfreeze` (at the end of the command; see `_leave_frozen_at_exit` for when the
    process ends right after it)."""
    import gc

    context = click.get_current_context()
    if _whole_process():
        from ._gc import finalizers

        context.meta[_FINALIZERS] = finalizers()
    gc.freeze()
    context.call_on_close(functools.partial(_unfreeze, context))
    if context.meta.pop(_GC_PAUSED, False):
        gc.enable()


_FINALIZERS, _LEAVE_FROZEN = "trialrun.finalizers", "trialrun.leave_frozen"


def _whole_process() -> bool:
    """Whether this command is the process (`trialrun ...`, `python -m trialrun ...`), not a call of `main` from a
    caller's code (tests, a notebook) whose interpreter goes on."""
    from . import main

    return getattr(sys.modules.get("__main__"), "main", None) is main


def _leave_frozen_at_exit() -> None:
    """The run is saved and every file trialrun wrote is closed, and the process ends now: leave the objects frozen
    before the run out of the interpreter's last collection (0.1-0.3 s of walking every module's objects), when
    nothing alive has a finalizer left to run (`_collector`: a user's open file, in a cycle, would lose its
    buffered writes). Otherwise, and when `main` was called in-process, they are unfrozen as usual."""
    from ._gc import nothing_to_finalize

    context = click.get_current_context()
    if _FINALIZERS in context.meta and _whole_process() and nothing_to_finalize(context.meta[_FINALIZERS]):
        context.meta[_LEAVE_FROZEN] = True


def _unfreeze(context: click.Context) -> None:
    import gc

    if not context.meta.get(_LEAVE_FROZEN):
        gc.unfreeze()


def _remove_stale_temps_of(*paths: str | None) -> None:
    """The temp files a killed run left next to the report files it was writing (`.junit.xml.<hex>.tmp`)."""
    from .._util.files import remove_stale_temps

    for value in paths:
        if value:
            target = Path(os.path.realpath(value))
            remove_stale_temps(target.parent, only_for=target.name)


def _signal_exit(signum: int | None) -> int:
    """The exit code of a run a signal stopped: 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + signum if signum else EXIT_INTERRUPTED


def _selection(test_ids: tuple[str, ...], names: tuple[str, ...], tags: tuple[str, ...]) -> str:
    """Every filter `run` was given, for a message about what it selected."""
    ids = [t for t in test_ids if t != "all"]
    parts = [f"{label}: {', '.join(values)}" for label, values in (("ids", ids), ("names", names), ("tags", tags)) if values]
    return "; ".join(parts) or "all tests"


#: What an A/B run (`_arms`) uses of this module.
_PARTS = RunParts(chosen=_chosen, plan=_Plan, ready_to_save=_ready_to_save, freeze=_freeze_what_was_imported,
                  leave_frozen=_leave_frozen_at_exit, signal_exit=_signal_exit)
