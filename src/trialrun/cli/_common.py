"""What the commands share: the consoles, user errors as a message and exit code 2 (`_fail_cleanly`), the checks of
the folders and files a command writes, the configuration and the results store, the report files, and -v/--debug
(the `trialrun` group's class adds them to every command)."""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from .._util.display import clean

F = TypeVar("F", bound=Callable[..., Any])


class _Threshold(click.FloatRange):
    """`--threshold`: a drop strictly between 0 and 1. At 1 or more "not worse" (the interval excludes a bigger drop)
    rules out nothing and a 3/3 -> 0/3 collapse was "not worse"; click's range lets NaN through (a traceback)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number != number:  # NaN
            self.fail(f"{value!r} is not a number in the range 0<x<1.", param, ctx)
        return number


#: The type of compare's and an A/B run's `--threshold`.
THRESHOLD = _Threshold(min=0, max=1, min_open=True, max_open=True)

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
    from ..case import CaseError
    from ..models._cassette_io import CassetteFileError
    from ..report.store import ResultFileError
    from ..run.executor import ExecutorError
    from ..suite._regrade import RegradeError
    from ..suite._tests_file import SuiteError
    from ..suite.config import ConfigError

    return (ConfigError, SuiteError, CaseError, ResultFileError, CassetteFileError, ExecutorError, RegradeError,
            _PathProblem)


class _PathProblem(Exception):
    """A folder or file the command needs cannot be used; the message names it."""


def _fail_cleanly(fn: F) -> F:
    """User-caused errors become `error: ...` on stderr and exit code 2, never a traceback. A file that cannot be
    read or written (OSError) is one of them: the message names the path; a click error raised by the command's
    own checks is another (only what click itself finds while parsing, before the command runs, keeps click's
    `Usage: ... Error:` form)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except click.ClickException as exc:  # one of our own checks: said in our one style, not click's Usage/Error
            _say(f"error: {exc.format_message()}")
            sys.exit(EXIT_USAGE)
        except _user_errors() as exc:
            _say(f"error: {exc}")
            sys.exit(EXIT_USAGE)
        except OSError as exc:
            _say(f"error: {_os_problem(exc)}")
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def _interrupted() -> NoReturn:
    """Ctrl-C ended a command: one line, exit code 130."""
    click.echo("interrupted", err=True)
    sys.exit(EXIT_INTERRUPTED)


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


def _store(results_dir: str | None, config_path: str | None, suite: str | None = None, *,
           runs: int | None = None) -> Any:
    """The results store the options name (--results-dir, else the configuration's results folder). With `runs`, a
    missing folder, or one holding fewer result files than that, is a user error that says which folder was looked
    in and why (a wrong current folder is the usual reason: `_not_a_project`)."""
    from ..report.store import ResultsStore

    config = None
    if results_dir:
        store = ResultsStore(Path(results_dir))
    else:
        config = _load_config(config_path, suite=Path(suite).resolve() if suite else None)
        store = ResultsStore(config.results_path())
    found = len(store.files()) if store.directory.is_dir() else 0
    if runs is not None and (found < runs or not store.directory.is_dir()):
        what = "no such folder" if not store.directory.is_dir() else f"{found} run(s) here" if found else "no runs here"
        need = "compare needs two runs" if runs == 2 else "nothing to show" if runs else "nothing to browse"
        where = "--results-dir" if results_dir else ("the results folder of " + str(config.source)
                                                     if config is not None and config.source else "")
        hint = _not_a_project(config) if config is not None and config.source is None else (
            "run `trialrun run` again after your change" if found == 1 else "run `trialrun run` first")
        raise _PathProblem(f"results folder {store.directory}{f' ({where})' if where else ''}: {what}; {need}; {hint}")
    return store


def _not_a_project(config: Any) -> str:
    """Why a command found nothing when no configuration was found: it looked in the current folder's defaults,
    which is wrong when the current folder is not the project's."""
    return (f"no trialrun.toml or [tool.trialrun] was found in {config.base_dir} or above, so the defaults under "
            f"{config.base_dir} were used: `trialrun init` makes a project here; or cd to your project, or pass "
            "--config FILE or --suite FILE")


def _check_suite_exists(config: Any) -> None:
    """The suite file is there before anything else is read, else a user error that says where it was looked for."""
    path = config.suite_path()
    if path.exists():
        return
    if config.source is None:
        raise _PathProblem(f"no suite at {path}; {_not_a_project(config)}")
    raise _PathProblem(f"suite file {path} not found (configuration: {config.source}); create it, or pass --suite "
                       "FILE")


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
    """The `trialrun` group: every command also takes -v/--verbose and --debug after its name, and Ctrl-C anywhere in
    a command (reading a big suite, importing an agent, saving) ends it with exit code 130 and one line, never click's
    "Aborted!" and exit 1 (a run's own trials are stopped by the runner, which saves what finished)."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except KeyboardInterrupt:
            _interrupted()

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _interrupted()

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

