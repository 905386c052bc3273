"""The `trialrun` command: run a suite, report a run, compare two runs, grade by hand.

Exit codes everywhere: 0 every graded test passed; 1 a test failed (or, with --fail-on-regression, a regression);
2 a usage, configuration or file error (a message, no traceback); 130 interrupted (Ctrl-C), 143 stopped by
SIGTERM, 129 by SIGHUP (128 + the signal, as a shell reports it).

One module a command or two; `trialrun.cli:main` is the console script. May import anything: nothing in
trialrun imports the CLI.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .._util.display import clean, markup
from .._version import __version__

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


def _console(stderr: bool = False, *, plain_ok: bool = False) -> Any:
    """rich's console; with `plain_ok`, a `PlainConsole` when the output is not a terminal: the same text, without
    importing rich (a CI log, a pipe)."""
    if plain_ok:
        from ..render._plain import PlainConsole, plain_output

        if plain_output(sys.stderr if stderr else sys.stdout):
            return PlainConsole(stderr=stderr)
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True)  # long paths and reasons stay whole lines


def _plain(console: Any) -> bool:
    from ..render._plain import PlainConsole

    return isinstance(console, PlainConsole)


def _print_styled(console: Any, text: str, style: str) -> None:
    """A line of `text` (already `clean`), in `style` on a terminal."""
    if _plain(console):
        console.print(text)
    else:
        from rich.text import Text

        console.print(Text(text, style=style))


def _user_errors() -> tuple[type[BaseException], ...]:
    from ..models._cassette_io import CassetteFileError
    from ..suite._regrade import RegradeError
    from ..case import CaseError
    from ..suite.config import ConfigError
    from ..run.executor import ExecutorError
    from ..report.store import ResultFileError
    from ..suite._tests_file import SuiteError

    return (ConfigError, SuiteError, CaseError, ResultFileError, CassetteFileError, ExecutorError, RegradeError,
            _PathProblem)


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


class _PathProblem(Exception):
    """A folder or file the command needs cannot be used; the message names it."""


def _fail_cleanly(fn: F) -> F:
    """User-caused errors become a message on stderr and exit code 2, never a traceback. A file that cannot be
    read or written (OSError) is one of them: the message names the path."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.ClickException as exc:  # click prints it: make its text as safe as ours
            from .._scrub import scrub_text

            exc.message = clean(scrub_text(exc.message))  # type: ignore[misc]  # Final in click's stubs, a plain attribute at run time
            raise
        except _user_errors() as exc:
            _say(f"error: {exc}")
            sys.exit(EXIT_USAGE)
        except OSError as exc:
            _say(f"error: {_os_problem(exc)}")
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def _say(message: str, *, err: bool = True) -> None:
    """Print a message that may hold a user's, an agent's or a model's text: control characters escaped, and never a
    key (a message may quote a value)."""
    from .._scrub import scrub_text

    click.echo(clean(scrub_text(message)), err=err)


def _file_in_the_way(path: Path) -> Path | None:
    """The first part of `path` that exists as a file where a folder is needed (afile in afile/sub/x.json)."""
    for parent in reversed(path.parents):
        if parent != Path(".") and parent.exists() and not parent.is_dir():
            return parent
    return None


def _os_problem(exc: OSError) -> str:
    """An OSError for people: "<path>: <what went wrong>", saying which part of the path is a file when that is
    why a folder could not be made or entered."""
    what = exc.strerror or str(exc)
    if exc.filename is None:
        return what
    path = Path(os.fsdecode(exc.filename))
    blocker = _file_in_the_way(path) or (path if isinstance(exc, FileExistsError) and not path.is_dir() else None)
    hint = f" ({blocker} is a file, not a folder)" if blocker is not None else ""
    return f"{path}: {what}{hint}"


def _check_results_dir(path: Path) -> None:
    """Create the results folder, and make sure a run can be saved there, before anything runs: a long run must
    not be lost to a typo in --results-dir."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _PathProblem(f"results dir {_os_problem(exc)}; nothing was run") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise _PathProblem(f"results dir {path}: not writable; nothing was run")


def _check_output_file(value: str | None, option: str) -> None:
    """A report file (--junit, --markdown, --html, -o) that could never be written is a usage error before the run.
    (click's `dir_okay=False` already refuses an existing folder.)"""
    if not value:
        return
    path = Path(value)
    if path.is_symlink():  # written through to its target: that is the path that must be writable
        path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file() and not path.is_dir():  # a device or a pipe (/dev/stdout): written as is
        if not os.access(path, os.W_OK):
            raise click.BadParameter(f"{value}: not writable", param_hint=option)
        return
    blocker = _file_in_the_way(path)
    if blocker is not None:
        problem = f"{blocker} is a file, not a folder"
    else:
        folder = next((p for p in path.parents if p.exists()), Path("."))
        problem = "" if os.access(folder, os.W_OK | os.X_OK) else f"{folder} is not writable"
    if problem:
        raise click.BadParameter(f"{value}: {problem}", param_hint=option)


def _labels(values: tuple[str, ...]) -> dict[str, str]:
    labels = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--label")
        labels[key.strip()] = value
    return labels


def _load_config(config_path: str | None, **overrides: Any) -> Any:
    from ..suite.config import load_config

    config = load_config(Path.cwd(), path=config_path)
    return config.with_overrides(**overrides)


def _log_config(config: Any) -> None:
    import logging

    log = logging.getLogger("trialrun.cli")
    if log.isEnabledFor(logging.INFO):
        log.info("config file: %s", config.source or "none (defaults)")
        log.info("suite: %s; results: %s", config.suite_path(), config.results_path())
        spec = re.sub(r"//[^/@]*@", "//***@", str(config.model_spec))  # no user:password of a URL
        log.info("model transport: %s (%s); api: %s; agent: %s", spec, config.model_spec.kind,
                 config.effective_api, config.agent or "trialrun.Agent (reference)")
        log.info("trials: %s; concurrency: %s; judge: %s", config.trials, config.concurrency or "default",
                 config.judge or "heuristic")


def _config_note(config: Any) -> str:
    """Which configuration a command uses, or that it assumed the defaults because none was found."""
    if config.source is not None:
        return f"config: {config.source}"
    return (f"config: none found (no trialrun.toml or [tool.trialrun] in {config.base_dir} or above); assuming the "
            f"defaults: suite {config.suite}, model {config.model}")


def _write_outputs(markdown_path: str | None, junit_path: str | None, html_path: str | None, *, markdown: Callable[[], str] | None,
                   junit: Callable[[], str] | None, html: Callable[[], str] | None, summary: bool) -> None:
    """Write the requested files; append Markdown to GitHub's job summary when it is set (unless --no-summary)."""
    from .._util.files import write_user_file

    if junit_path and junit:
        write_user_file(Path(junit_path), junit())
    if html_path and html:
        write_user_file(Path(html_path), html())
    if markdown:
        text = None
        if markdown_path:
            text = markdown()
            write_user_file(Path(markdown_path), text)
        if summary and os.environ.get("GITHUB_STEP_SUMMARY"):
            from ..render.markdown import append_step_summary

            append_step_summary(text or markdown())


def _setup_logging(verbose: bool, debug: bool) -> None:
    """-v: what was configured (INFO); --debug: also each model request's path and status (DEBUG). To stderr, and
    never a secret (no headers, no query strings, no environment values)."""
    if not (verbose or debug):
        return
    import logging

    from .._scrub import scrub_text

    root = click.get_current_context().find_root()
    if _LOGGING in root.meta:  # -v before the command and --debug after it: one handler, the more verbose level
        if debug:
            logging.getLogger("trialrun").setLevel(logging.DEBUG)
        return
    root.meta[_LOGGING] = True

    class Scrubbed(logging.Formatter):
        """A record as the terminal shows it: scrubbed (`_scrub`), like every other line trialrun prints."""

        def format(self, record: logging.LogRecord) -> str:
            return clean(scrub_text(super().format(record)))

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(Scrubbed("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("trialrun")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO)

    def restore() -> None:  # the command is done (matters when main() is called in-process, as tests do)
        logger.removeHandler(handler)
        logger.setLevel(level)

    root.call_on_close(restore)


_LOGGING = "trialrun.logging"


def _logging_option(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """-v / --debug given after a command (`trialrun run all -v`): the same as before it."""
    if value:
        _setup_logging(param.name == "verbose", param.name == "debug")


class _Group(click.Group):
    """The `trialrun` group: every command also takes -v/--verbose and --debug after its name."""

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        names = {opt for param in cmd.params for opt in getattr(param, "opts", [])}
        if "--verbose" not in names:
            cmd.params.append(click.Option(["-v", "--verbose"], is_flag=True, expose_value=False, is_eager=True,
                                           callback=_logging_option, help="Log what was configured (to stderr)."))
        if "--debug" not in names:
            cmd.params.append(click.Option(["--debug"], is_flag=True, expose_value=False, is_eager=True,
                                           callback=_logging_option,
                                           help="Also log each model request's path and status (never a secret)."))
        super().add_command(cmd, name)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="trialrun")
@click.option("-v", "--verbose", is_flag=True, help="Log what was configured (to stderr).")
@click.option("--debug", is_flag=True, help="Also log each model request's path and status (never a secret).")
def main(verbose: bool = False, debug: bool = False) -> None:
    """Test the behaviour of tool-calling LLM agents: outcome and trajectory, pass@1 and pass^k.

    \b
    trialrun init                    make a working offline project here
    trialrun run all                 run the suite (state/eval/tests.json by default)
    trialrun report                  show the most recent run
    trialrun compare                 compare the last two runs (before/after a config change)
    trialrun view                    browse every run in a local web app (trialrun[view])
    trialrun grade RUN TEST 0.25     set a test's output_quality by hand
    trialrun regrade [RUN]           grade a run again with the current suite (no agent runs)
    trialrun export RUN --format F   a run's trajectories as OpenTelemetry spans (otel) or ATIF (atif)
    trialrun schema                  the suite's JSON Schema
    trialrun agents                  the ready-made agents: installed here? which version?
    """
    _setup_logging(verbose, debug)


# -- run ----------------------------------------------------------------------------------------------------
@main.command()
@click.argument("test_ids", nargs=-1, metavar="[TEST_ID ...|all]")
@click.option("--trials", "-k", type=click.IntRange(min=1), help="Run each test K times (pass@1 and pass^k).")
@click.option("--tag", "tags", multiple=True, help="Only tests with this tag (repeatable: any of them).")
@click.option("--name", "names", multiple=True, help="Only the test with this exact id (repeatable).")
@click.option("--include-live-canary", is_flag=True, help="Also run tests marked mode: live_canary.")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (default: state/eval/tests.json).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file (default: ./trialrun.toml).")
@click.option("--model", help="Model spec, e.g. scripted:model.yaml, replay:cassettes/, openai:gpt-4.1-mini.")
@click.option("--agent", help="Agent under test: module:function taking (prompt, ctx), a ready-made agent (pi, codex, claude-code, opencode) or \"command: PROGRAM ARGS {prompt}\".")
@click.option("--api", type=click.Choice(["openai-chat", "openai-responses", "anthropic", "gemini"]), help="Wire API of the reference agent.")
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
@_fail_cleanly
def run(test_ids: tuple[str, ...], trials: int | None, tags: tuple[str, ...], names: tuple[str, ...],
        include_live_canary: bool, suite: str | None, config_path: str | None, model: str | None, agent: str | None,
        api: str | None, judge: str | None, rubric: str | None, strict: bool, results_dir: str | None,
        concurrency: int | None, executor: str | None, labels: tuple[str, ...], no_exchanges: bool, as_json: bool,
        junit_path: str | None, markdown_path: str | None, no_summary: bool) -> None:
    """Run the suite, or the tests named (TEST_ID ...; `all` or nothing runs every test)."""
    _pause_gc()
    _import_httpx_without_its_cli()
    from ..run import runner
    from ..suite._build import build_cases, check_api_keys, config_snapshot, ignored_by_custom_agent, suite_warnings
    from .._scrub import scrub_text
    from ..report.store import ResultsStore
    from ..suite._tests_file import SuiteError, read_suite

    label_map = _labels(labels)
    config = _load_config(config_path, suite=Path(suite).resolve() if suite else None, model=model, agent=agent, api=api,
                          judge=judge, results_dir=Path(results_dir).resolve() if results_dir else None, trials=trials,
                          concurrency=concurrency, rubric=rubric, executor=executor,
                          exchanges=False if no_exchanges else None)
    if not as_json:
        _say(_config_note(config))
    _log_config(config)
    suite_file = read_suite(config.suite_path())
    wanted = [t for t in test_ids if t != "all"] + list(names)
    known = [t.id for t in suite_file.tests]
    known_ids = set(known)
    unknown = [t for t in wanted if t not in known_ids]
    if unknown:
        shown = ", ".join(known[:20]) + (f", ... ({len(known) - 20:,} more)" if len(known) > 20 else "")
        raise click.UsageError(f"no test {', '.join(map(repr, unknown[:20]))} in {config.suite_path()} (tests: {shown})")
    wanted_ids = set(wanted)
    chosen = [t.id for t in suite_file.tests if (not wanted or t.id in wanted_ids) and (not tags or set(tags) & set(t.tags))]
    if not chosen:
        raise click.UsageError(f"no test matches the selection ({_selection(test_ids, names, tags)})")
    live = config.model_spec.live
    cases = build_cases(suite_file, config, only=chosen, include_live_canary=include_live_canary or live)
    check_api_keys(config)
    count = sum(c.trials or config.trials for c in cases if c.mode == "deterministic" or include_live_canary or live)
    if not count:  # every selected test is a live canary the gate would skip: nothing to grade, nothing to save
        raise click.UsageError(
            f"the selected test(s) {', '.join(map(repr, chosen))} are live canaries, skipped without "
            f"--include-live-canary; add it to run them (nothing was run or saved)")
    warnings = suite_warnings(suite_file, config, only=chosen)
    if strict and warnings:
        raise SuiteError([f"{w} (an error with --strict)" for w in warnings])
    for warning in [*warnings, *ignored_by_custom_agent(config)]:
        _say(f"warning: {warning}")
    console = _console(stderr=as_json, plain_ok=True)
    store = ResultsStore(config.results_path())
    _check_results_dir(store.directory)
    _check_output_file(junit_path, "--junit")
    _check_output_file(markdown_path, "--markdown")
    _remove_stale_temps_of(junit_path, markdown_path)
    snapshot = config_snapshot(config, suite_file, label_map)
    if live and not as_json:
        _print_styled(console, f"live model {clean(scrub_text(str(config.model_spec)))}: tests call the provider",
                      "yellow")
    from ..run._records import RunRecorder

    recorder = RunRecorder.start(store, cases, trials=config.trials, include_live_canary=include_live_canary or live,
                                 config_snapshot=snapshot, exchanges=config.exchanges,
                                 exchanges_max_bytes=config.exchanges_max_bytes)
    for note in recorder.notes:
        _say(f"note: {note}")

    from ..render._progress import RunProgress

    progress = RunProgress(console, count, enabled=not as_json,
                           trials={c.name: c.trials or config.trials for c in cases
                                   if c.mode == "deterministic" or include_live_canary or live})
    exit_code = EXIT_OK

    def on_trial(case: Any, result: Any) -> None:
        recorder.trial(case, result)
        progress.advance(result.passed, case.name)

    _freeze_what_was_imported()
    with progress:
        try:
            report = runner.evaluate(
                cases, trials=config.trials, run_id=recorder.run_id,
                include_live_canary=include_live_canary or live, concurrency=config.concurrency or runner.DEFAULT_CONCURRENCY,
                config_snapshot=snapshot, on_trial=on_trial, executor=config.executor,
                on_exchanges=recorder.exchanges,  # (on Ray too: each worker sends its trial's line back)
            )
        except runner.EvaluationInterrupted as interrupted:
            report = interrupted.report
            exit_code = _signal_exit(interrupted.signal)
        except KeyboardInterrupt as again:  # a second Ctrl-C (or SIGTERM) while teardowns still ran: give up on them
            progress.stop()
            _say(f"interrupted again: stopped waiting for teardowns; {recorder.abandon()}")
            sys.stderr.flush()
            os._exit(_signal_exit(getattr(again, "signal", None)))
        except BaseException:
            recorder.drop()
            raise
    saved, fallback = recorder.save(report)
    for warning in recorder.warnings:
        _say(f"warning: {warning}")
    interrupted_run = exit_code != EXIT_OK
    if exit_code == EXIT_OK and report.failed_case_count:
        exit_code = EXIT_FAILED
    _emit_report(report, as_json=as_json, saved=None if saved is None else str(saved))
    if saved is None:
        _say(f"error: the run was not saved to {store.directory}: {recorder.save_problem}; "
             + (f"it was saved to {fallback} instead (`trialrun report {fallback}` shows it)" if fallback
                else "nor anywhere else"))
        exit_code = exit_code if interrupted_run else EXIT_USAGE
    _report_files(report, junit_path=junit_path, markdown_path=markdown_path, html_path=None, summary=not no_summary)
    if interrupted_run:
        partial = [c for c in report.cases if c.partial]
        whole = len(report.cases) - len(partial)
        what = f"the {whole} finished test(s)" + (f" and {len(partial)} partly run test(s)" if partial else "")
        where = f"saved {what} to {saved or fallback}" if saved or fallback else "the finished tests were not saved"
        _say(f"interrupted: {where}")
        # A synchronous agent still running in a worker thread cannot be stopped; do not wait for it at exit.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(exit_code)
    _leave_frozen_at_exit()
    sys.exit(exit_code)


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


def _emit_report(report: Any, *, as_json: bool, saved: str | None) -> None:
    if as_json:
        from ..report.store import report_text

        click.echo(report_text(report), nl=False)
        return
    from ..render._console import print_report

    print_report(report, _console(plain_ok=True), saved=saved)


def _report_files(report: Any, *, junit_path: str | None, markdown_path: str | None, html_path: str | None, summary: bool) -> None:
    def junit() -> str:
        from ..render.junit import dotted_path, junit_xml

        # The suite names the testsuite and the classname of cases with no module, as pytest's JUnit XML names a
        # suite test (its path relative to the project, dots for slashes: state.eval.tests.json), so a run saved by
        # the CLI and one saved by the pytest plugin group the same test the same way.
        suite = report.config_snapshot.get("suite")
        suite_path = suite.get("path") if isinstance(suite, dict) else suite
        name = dotted_path(suite_path) if isinstance(suite_path, str) else ""
        return junit_xml(report, suite_name=name) if name else junit_xml(report)

    def markdown() -> str:
        from ..render.markdown import report_markdown

        return report_markdown(report)

    def html() -> str:
        from ..render.html import report_html

        return report_html(report)

    _write_outputs(markdown_path, junit_path, html_path, markdown=markdown, junit=junit, html=html, summary=summary)


def _store(results_dir: str | None, config_path: str | None, suite: str | None = None) -> Any:
    from ..report.store import ResultsStore

    if results_dir:
        return ResultsStore(Path(results_dir))
    config = _load_config(config_path, suite=Path(suite).resolve() if suite else None)
    return ResultsStore(config.results_path())


def _warn_skipped(store: Any, shown: list[Path] | None = None) -> None:
    """Say which result files were passed over, and why, so an older run is never shown in silence; and which
    shown runs are the journals of runs that never finished."""
    for path, reason in store.skipped.items():
        _say(f"warning: skipped {path}: {reason}")
    _note_journals(shown or [])


def _note_journals(shown: list[Path]) -> None:
    from ..report.journal import SUFFIX as JOURNAL_SUFFIX

    for path in shown:
        if path.suffix == JOURNAL_SUFFIX:
            _say(f"note: {path} is the journal of a run that did not finish (killed?): read as an interrupted "
                 f"run of the trials it holds; `trialrun recover` saves it as a result file")


# -- report -------------------------------------------------------------------------------------------------
@main.command()
@click.argument("run_ref", required=False, metavar="[RUN]")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (its folder holds the results by default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--json", "as_json", is_flag=True, help="Print the run as JSON.")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write a Markdown summary here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML report here.")
@click.option("--history", is_flag=True, help="With --html: write every run of the results dir (runs list, trend charts).")
@click.option("--table", "show_table", is_flag=True, help="Print the table even when writing files.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 whatever the run's result (to look, not to gate).")
@_fail_cleanly
def report(run_ref: str | None, results_dir: str | None, suite: str | None, config_path: str | None, as_json: bool,
           junit_path: str | None, markdown_path: str | None, html_path: str | None, history: bool,
           show_table: bool, exit_zero: bool) -> None:
    """Show a run: the most recent by default (latest.json), or RUN: a run id (eval_20260731_140000), a result
    file's name or stem (results_20260731_140000), a path, or `latest`. Writing a file (--html, --junit,
    --markdown) prints one line instead of the table, unless --table.

    Exit code: 0 when every graded test of the run passed, 1 when one failed (0 with --exit-zero), 2 for a usage
    or file error.

    With --history --html F: write the runs of the results dir (newest first, the config changes between them, the
    suite's trend and each test's chart) as one self-contained file."""
    from ..report.store import load_report

    _check_output_file(junit_path, "--junit")
    _check_output_file(markdown_path, "--markdown")
    _check_output_file(html_path, "--html")
    if history:
        _history_report(run_ref, results_dir, config_path, suite, html_path, junit_path or markdown_path or as_json)
        return
    if run_ref and Path(run_ref).is_file():  # a path needs no configuration
        path = Path(run_ref)
        _note_journals([path])
    else:
        store = _store(results_dir, config_path, suite)
        path = store.resolve(run_ref)
        _warn_skipped(store, [path])
    result = load_report(path)
    written = [p for p in (html_path, junit_path, markdown_path) if p]
    if as_json or show_table or not written:
        _emit_report(result, as_json=as_json, saved=None)
        if not as_json:
            _print_styled(_console(plain_ok=True), clean(path), "dim")
    _report_files(result, junit_path=junit_path, markdown_path=markdown_path, html_path=html_path, summary=False)
    if written and not as_json and not show_table:
        from ..render.terminal import summary_line

        _console().print(f"wrote {', '.join(written)}: {summary_line(result)} [dim]({path})[/]")
    sys.exit(EXIT_FAILED if result.failed_case_count and not exit_zero else EXIT_OK)


def _history_report(run_ref: str | None, results_dir: str | None, config_path: str | None, suite: str | None,
                    html_path: str | None, other: Any) -> None:
    from .._util.files import write_atomic
    from ..report._history import load_history
    from ..render.history import history_html

    if run_ref or other or not html_path:
        raise click.UsageError("--history writes the runs list as HTML: give --html FILE (and no RUN, --json, "
                               "--junit or --markdown)")
    store = _store(results_dir, config_path, suite)
    found = load_history(store.directory)
    for path, reason in found.skipped.items():
        _say(f"warning: skipped {path}: {reason}")
    write_atomic(Path(html_path), history_html(found))
    _say(f"wrote {html_path}: {len(found.runs)} run(s) of {store.directory}", err=False)
    sys.exit(EXIT_OK)


# -- view ---------------------------------------------------------------------------------------------------
@main.command()
@click.argument("results_dir", required=False, type=click.Path(file_okay=False))
@click.option("--port", type=click.IntRange(min=1, max=65535), default=8765, show_default=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind. Anything but loopback is reachable from other machines: a warning is printed and "
                   "every page then needs the session token in the printed URL.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser once it is served.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@_fail_cleanly
def view(results_dir: str | None, port: int, open_browser: bool, config_path: str | None,
         host: str = "127.0.0.1") -> None:
    """Browse the runs of RESULTS_DIR (default: the suite's folder) in a local web app on 127.0.0.1: runs list,
    trends, each test's history, two runs compared, trajectory diffs, trials with their verdicts, runs in progress,
    search, and output quality graded by hand. Needs `trialrun[view]`."""
    try:
        from ..view import serve
    except ImportError as exc:  # pragma: no cover - view.py imports nothing optional at its top
        raise click.ClickException(str(exc)) from None
    store = _store(results_dir, config_path)
    if not store.directory.is_dir():
        raise _PathProblem(f"results dir {store.directory}: no such folder (run `trialrun run` first)")
    from ..view import PortBusy

    try:
        serve(store.directory, port=port, host=host, open_browser=open_browser)
    except (ImportError, PortBusy) as exc:
        _say(f"error: {exc.strerror if isinstance(exc, PortBusy) else exc}")
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        pass


# -- compare ------------------------------------------------------------------------------------------------
@main.command()
@click.argument("runs", nargs=-1, metavar="[A B]")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (its folder holds the results by default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--threshold", type=click.FloatRange(min=0, min_open=True), default=0.10, show_default=True,
              help="A drop of this much or more (greater than 0) is a regression.")
@click.option("--fail-on-regression", is_flag=True,
              help="Exit 1 when a test regressed (with several trials per test: beyond chance), or the later run lost "
                   "a test (removed, or not finished).")
@click.option("--any-drop", is_flag=True, help="With --fail-on-regression and several trials per test: count every "
                                               "regression, not only those beyond chance.")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option("--markdown", "markdown_path", type=click.Path(dir_okay=False), help="Write the comparison as Markdown here.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Write a self-contained HTML comparison here.")
@click.option("--no-summary", is_flag=True, help="Do not append to $GITHUB_STEP_SUMMARY.")
@_fail_cleanly
def compare(runs: tuple[str, ...], results_dir: str | None, suite: str | None, config_path: str | None, threshold: float,
            fail_on_regression: bool, any_drop: bool, as_json: bool, markdown_path: str | None, html_path: str | None,
            no_summary: bool) -> None:
    """Compare two runs: the two most recent by default (before -> after); A and B as `report` takes a RUN.
    A drop of --threshold or more, or a test that passed and now fails, is a regression."""
    from ..report import compare as comparing
    from ..report.store import ResultFileError, load_report

    if len(runs) not in (0, 2):
        raise click.UsageError("give two runs (A B) or none for the two most recent")
    _check_output_file(markdown_path, "--markdown")
    _check_output_file(html_path, "--html")
    if runs and all(Path(r).is_file() for r in runs):  # paths need no configuration
        paths = [Path(r) for r in runs]
        _note_journals(paths)
    else:
        store = _store(results_dir, config_path, suite)
        paths = [store.resolve(r) for r in runs] if runs else store.recent(2)
        if len(paths) < 2:
            unusable = "; ".join(f"{p.name} ({reason})" for p, reason in store.skipped.items())
            raise ResultFileError(f"{store.directory}: compare needs two runs; found {len(paths)} usable result file(s)"
                                  + (f"; unusable: {unusable}" if unusable else ""))
        _warn_skipped(store, paths)
    before, after = (load_report(p) for p in paths)
    comparison = comparing.compare(before, after, threshold=threshold)
    if as_json:
        from .._scrub import scrub_text

        click.echo(scrub_text(comparison.model_dump_json(indent=2)))
    else:
        from ..render.terminal import print_comparison

        console = _console()
        console.print(f"[dim]{markup(before.run_id)} -> {markup(after.run_id)}[/]")
        print_comparison(comparison, console)

    def markdown() -> str:
        from ..render.markdown import comparison_markdown

        return comparison_markdown(comparison)

    def html() -> str:
        from ..render.html import comparison_html

        return comparison_html(comparison, before, after)

    _write_outputs(markdown_path, None, html_path, markdown=markdown, junit=None, html=html, summary=not no_summary)
    problems = comparison.gate_problems(any_drop=any_drop) if fail_on_regression else []
    uncounted = len(comparison.regressions) - len(comparison.counted_regressions(any_drop=any_drop))
    if fail_on_regression and uncounted:
        _say(f"--fail-on-regression: {uncounted} regression(s) not beyond chance at these trial counts, not "
                   "counted (--any-drop counts them)")
    if problems:  # a test the later run lost (removed, or stopped by Ctrl-C) is no evidence that nothing regressed
        _say(f"--fail-on-regression: {'; '.join(problems)}")
    sys.exit(EXIT_FAILED if problems else EXIT_OK)


# -- recover ------------------------------------------------------------------------------------------------
@main.command()
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file (its folder holds the results by default).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@_fail_cleanly
def recover(results_dir: str | None, suite: str | None, config_path: str | None) -> None:
    """Save the runs that were killed (SIGKILL, power loss) as result files with "status": "interrupted", from
    their journals (results_<stamp>.jsonl with no results_<stamp>.json)."""
    from ..report.journal import SUFFIX as JOURNAL_SUFFIX
    from ..report.store import LatestNotUpdated, ResultFileError, load_report

    store = _store(results_dir, config_path, suite)
    journals = [path for path in store.files() if path.suffix == JOURNAL_SUFFIX]  # FIFOs too: said, never opened
    if not journals:
        _say(f"nothing to recover in {store.directory}", err=False)
        return
    failed = 0
    for journal in journals:
        try:
            saved = store.recover(journal)
        except LatestNotUpdated as exc:
            saved = exc.saved
            _say(f"warning: {exc}")
        except ResultFileError as exc:  # one journal that cannot be read: say so, recover the others
            failed += 1
            _say(f"error: not recovered: {exc}")
            continue
        report = load_report(saved)
        trials = sum(len(c.trials) for c in report.cases)
        _say(f"recovered {saved}: {trials} finished trial(s) of {len(report.cases)} test(s), "
             f"{len(report.unfinished_cases)} test(s) not started; status {report.status}", err=False)
    if failed:
        sys.exit(EXIT_USAGE)


# -- grade --------------------------------------------------------------------------------------------------
@main.command()
@click.argument("run_ref", metavar="RUN")
@click.argument("test_id")
@click.argument("quality", type=click.Choice(["0", "0.25", "0.5"]))
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@click.option("--comment", default="", help="Why: kept with the grade (who, when and the value it replaced are kept too).")
@_fail_cleanly
def grade(run_ref: str, test_id: str, quality: str, results_dir: str | None, config_path: str | None,
          comment: str = "") -> None:
    """Set TEST_ID's output_quality (0, 0.25 or 0.5) by hand in RUN: a run id, a result file's name or stem, a path,
    or `latest`. The same edit as the viewer's grade form (`trialrun.report._hand_grade`)."""
    from ..report._hand_grade import grade_by_hand, who

    store = _store(results_dir, config_path)
    path = store.resolve(run_ref)
    try:
        done = grade_by_hand(store, path, test_id, float(quality), by=who(), comment=comment, via="cli")
    except (KeyError, ValueError) as exc:  # GradeRefused is a ValueError
        raise click.UsageError(str(exc.args[0] if exc.args else exc)) from None
    before, after, updated = done.before, done.after, done.report
    _say(
        f"{test_id}: output_quality {quality}; score {before.score:.2f} -> {after.score:.2f}; "
        f"{'passed' if after.passed else 'failed'}; run {updated.passed_case_count}/{len(updated.graded_cases)} passed ({path})",
        err=False,
    )


# -- regrade and export -------------------------------------------------------------------------------------
@main.command()
@click.argument("run_ref", required=False, metavar="[RUN]")
@click.option("--suite", type=click.Path(dir_okay=False), help="Suite file to grade with (default: the configured one).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file (rubric, judge, threshold).")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--json", "as_json", is_flag=True, help="Print the regraded run as JSON.")
@_fail_cleanly
def regrade(run_ref: str | None, suite: str | None, config_path: str | None, results_dir: str | None,
            as_json: bool) -> None:
    """Grade RUN (default: the latest) again with the current suite's graders and rubric, from the exchanges it
    kept, without running any agent; save it as a new run marked `regraded_from`. Exit code as `run`'s."""
    from ._regrade import regrade_command

    sys.exit(regrade_command(run_ref, suite, config_path, results_dir, as_json, say=_say))


@main.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(["otel", "atif"]), required=True,
              help="otel: OpenTelemetry GenAI spans (OTLP JSON); atif: Harbor's Agent Trajectory Interchange Format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@_fail_cleanly
def export(run_ref: str, fmt: str, output: str | None, results_dir: str | None, config_path: str | None) -> None:
    """Write RUN's trajectories for other tools: OpenTelemetry GenAI spans as OTLP JSON (--format otel), or one
    ATIF trajectory per trial (--format atif)."""
    from ..report._exchange_log import sidecar_path
    from ..report._export import export_text
    from ..report.store import load_report

    _check_output_file(output, "--output")
    path = Path(run_ref) if Path(run_ref).is_file() else _store(results_dir, config_path).resolve(run_ref)
    path = path.resolve() if path.is_symlink() else path  # latest.json: the run it links (its exchanges beside it)
    text, count = export_text(load_report(path), fmt, sidecar_path(path))
    if output:
        from .._util.files import write_user_file

        write_user_file(Path(output), text)
        _say(f"wrote {output}: {count} trial(s) of {path} as {fmt}")
    else:
        click.echo(text, nl=False)


# -- init ---------------------------------------------------------------------------------------------------
#: What `trialrun init` prints when it is done: the next three commands.
INIT_NEXT = ("trialrun run all", "trialrun run all --trials 3", "trialrun compare")


@main.command()
@_fail_cleanly
def init() -> None:
    """Make a working offline project in the current folder: trialrun.toml, state/eval/tests.json, a scripted
    model (model.yaml) and a workspace. Never overwrites: if any of them exists, nothing is written."""
    from importlib.resources import files

    from .._util.files import write_atomic

    template = files("trialrun").joinpath("_scaffold")
    wanted: list[tuple[Path, str]] = []

    def walk(node: Any, rel: Path) -> None:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name == "__pycache__":
                continue
            if child.is_dir():
                walk(child, rel / child.name)
            else:
                wanted.append((rel / child.name, child.read_text(encoding="utf-8")))

    walk(template, Path())
    there = [str(path) for path, _ in wanted if Path(path).exists()]
    if there:
        raise _PathProblem(f"{Path.cwd()}: already has {', '.join(there)}; trialrun init never overwrites "
                           "(nothing was written)")
    for path, text in wanted:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text)
    click.echo(f"made a trialrun project in {Path.cwd()}: {', '.join(str(p) for p, _ in wanted)}")
    click.echo("next:")
    for command in INIT_NEXT:
        click.echo(f"  {command}")


# -- schema and skill ---------------------------------------------------------------------------------------
@main.command()
@click.option("--results", is_flag=True, help="Print the result file's schema instead of the suite's.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
@_fail_cleanly
def schema(results: bool, output: str | None) -> None:
    """Print the JSON Schema of suite files (tests.json), or of result files with --results."""
    if results:
        from ..report.results import RunReport

        data = RunReport.model_json_schema(mode="serialization")
    else:
        from ..suite._tests_file import suite_json_schema

        data = suite_json_schema()
    text = json.dumps(data, indent=2) + "\n"
    _check_output_file(output, "--output")
    if output:
        from .._util.files import write_user_file

        write_user_file(Path(output), text)
    else:
        click.echo(text, nl=False)


@main.command("agents")
@click.argument("names", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@_fail_cleanly
def agents_command(names: tuple[str, ...], as_json: bool) -> None:
    """List the ready-made agents (`agent = "NAME"`): whether each is installed here (on PATH, or in the cache
    folder .ci/install-agents fills), its version, the version the tests run (pinned) and how to install it."""
    from ._agents import installed, table

    try:
        rows = installed(list(names) or None)
    except ValueError as exc:
        from ..agents._pins import preset_suggestion

        guess = next((preset_suggestion(name) for name in names if preset_suggestion(name) not in (None, name)), None)
        raise click.BadParameter(str(exc) + (f"; did you mean {guess!r}?" if guess else ""), param_hint="NAMES") from None
    if as_json:
        click.echo(json.dumps([row.as_dict() for row in rows], indent=2))
    else:
        _say(table(rows), err=False)


@main.group()
def skill() -> None:
    """The agent skill that lets a coding agent drive trialrun ("/eval run", "/eval compare", ...)."""


@skill.command("install")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite an existing SKILL.md.")
@_fail_cleanly
def skill_install(directory: str, force: bool) -> None:
    """Copy the eval skill into DIRECTORY/eval/SKILL.md (e.g. .claude/skills)."""
    from importlib.resources import files

    source = files("trialrun").joinpath("skills").joinpath("eval").joinpath("SKILL.md").read_text(encoding="utf-8")
    target = Path(directory) / "eval" / "SKILL.md"
    if target.exists() and not force:
        _say(f"error: {target} exists; use --force to overwrite")
        sys.exit(EXIT_USAGE)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(source, encoding="utf-8")
    _say(f"installed {target}", err=False)
