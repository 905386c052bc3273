"""`trialrun run`: the checks before anything runs (the tests chosen, their cases, the folders and files the run
will write), the run with its progress bar and journal, the result file saved, the report printed and written."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .._util.display import clean
from ._arms import ArmsArgs, arm_options, wants_arms
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    _check_suite_exists,
    _config_note,
    _console,
    _emit_report,
    _fail_cleanly,
    _load_config,
    _log_config,
    _print_styled,
    _report_files,
    _say,
)
from ._plan import Plan, chosen, ready_to_save, signal_exit

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
                                      markdown_path, not no_summary, trials is not None))
    with _nothing_run_yet(lambda: recorder):
        plan = _preflight(config, test_ids, names, tags, include_live_canary=include_live_canary, strict=strict)
        console = _console(stderr=as_json, plain_ok=True)
        store = ready_to_save(config, junit_path, markdown_path)
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
    sys.exit(exit_code)


def _preflight(config: Any, test_ids: tuple[str, ...], names: tuple[str, ...], tags: tuple[str, ...], *,
               include_live_canary: bool, strict: bool) -> Plan:
    """Read the suite, choose the tests, build their cases, check the API keys they need and say the suite's
    warnings (errors with --strict): a usage or suite error here means nothing was run."""
    from ..suite._build import build_cases, check_api_keys, ignored_by_custom_agent, suite_warnings
    from ..suite._tests_file import SuiteError, read_suite

    _check_suite_exists(config)
    suite_file = read_suite(config.suite_path())
    selected = chosen(suite_file, config, test_ids, names, tags)
    include = include_live_canary or config.model_spec.live
    cases = build_cases(suite_file, config, only=selected, include_live_canary=include)
    check_api_keys(config)
    plan = Plan(suite_file, selected, cases, include,
                 [(c.name, c.trials or config.trials) for c in cases if c.mode == "deterministic" or include])
    if not plan.count:  # every selected test is a live canary the gate would skip: nothing to grade, nothing to save
        raise click.UsageError(
            f"the selected test(s) {', '.join(map(repr, selected))} are live canaries, skipped without "
            f"--include-live-canary; add it to run them (nothing was run or saved)")
    warnings = suite_warnings(suite_file, config, only=selected)
    if strict and warnings:
        raise SuiteError([f"{w} (an error with --strict)" for w in warnings])
    for warning in [*warnings, *ignored_by_custom_agent(config)]:
        _say(f"warning: {warning}")
    return plan


def _start_recorder(store: Any, config: Any, plan: Plan, snapshot: Any) -> Any:
    """The run's journal, begun in the results folder (each trial is kept as it ends)."""
    from ..run._records import RunRecorder

    recorder = RunRecorder.start(store, plan.cases, trials=config.trials, include_live_canary=plan.include_live_canary,
                                 config_snapshot=snapshot, exchanges=config.exchanges,
                                 exchanges_max_bytes=config.exchanges_max_bytes)
    for note in recorder.notes:
        _say(f"note: {note}")
    return recorder


def _evaluate_with_progress(config: Any, plan: Plan, snapshot: Any, recorder: Any, console: Any, *,
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
            stopped = signal_exit(interrupted.signal)
        except KeyboardInterrupt as again:  # a second Ctrl-C (or SIGTERM) while teardowns still ran: give up on them
            progress.stop()
            _say(f"interrupted again: stopped waiting for teardowns; {recorder.abandon()}")
            sys.stderr.flush()
            os._exit(signal_exit(getattr(again, "signal", None)))
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


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    labels = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--label")
        labels[key.strip()] = value
    return labels
