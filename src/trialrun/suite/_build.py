"""From a suite file and a configuration to runnable Cases: the model per trial, the agent, the rubric, the judge.

Everything that can be checked before running is checked here (the agent target imports, the scripted model
file has a script for every test, the policy parses), so a configuration error never surfaces mid-run. The model
side (`_build_model`) and the agent side (`_build_agent`) are modules of their own; this one puts a case together
from them, and says what the run was configured with (`config_snapshot`). Their names that other modules use are
importable from here as well.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import inspect
import platform
import re
import shutil
import subprocess
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from .. import _version
from .._util.files import gc_paused
from ..agent import Agent, PriceTable, amcp_tools, prices
from ..case import Case, TrialContext
from ..expect._base import Grader
from ..expect.rubric import key_terms, rubric
from ..expect.workspace import verify_of
from ..report._text_diff import snapshot_text
from ._build_agent import (
    _check_agent_signature,
    _import,
    _policy,
    _sandbox,
    _tools_factory,
    ignored_by_custom_agent,
    process_agent,
)
from ._build_model import (
    FileScript,
    _check_cassettes,
    _judge_api,
    _judge_transport,
    check_api_keys,
    judge_setup,
    load_script_file,
    model_transport,
)
from ._mcp_config import SuiteMcp
from ._tests_file import SuiteError, SuiteFile, SuiteTest, read_suite
from .config import Config, ConfigError, ModelSpec, load_config
from .judge import llm_judge

__all__ = ["build_cases", "load_suite", "load_script_file", "config_snapshot", "model_transport", "check_api_keys", "ignored_by_custom_agent",
           "suite_warnings", "process_agent", "judge_setup"]

#: config_snapshot keys that describe what only the reference agent receives; left out for a custom agent (which
#: gets the model name and the API too, as `ctx.model_name` and `ctx.api`).
REFERENCE_AGENT_KEYS = ("tools", "system_prompt_sha256", "system_prompt", "policy")


def build_cases(
    suite: SuiteFile, config: Config, *, only: Collection[str] | None = None, include_live_canary: bool = False,
) -> list[Case]:
    """Runnable Cases for the suite's tests (those named in `only`, when given), with the configured agent and model.

    A scripted model must have a script for every test that will run; a live canary that will be skipped (without
    `include_live_canary`) needs none, as it never asks the model anything.
    """
    with gc_paused():  # 100,000 cases: half the time was the collector walking them
        return _build_cases(suite, config, only=only, include_live_canary=include_live_canary)


def _build_cases(
    suite: SuiteFile, config: Config, *, only: Collection[str] | None, include_live_canary: bool,
) -> list[Case]:
    wanted = None if only is None else set(only)  # a set: `only` may name 100,000 tests
    tests = [t for t in suite.tests if wanted is None or t.id in wanted]
    spec = config.model_spec
    api = config.effective_api
    model_name = config.effective_model_name
    scripts = _checked_scripts(config, spec, tests, include_live_canary)
    _apply_prices(config, prices)
    policy = _policy(config)
    make_tools, tool_names = _tools_factory(config)
    workspace = _suite_workspace(config)
    tasks = _task_folders(suite, tests)
    sandbox = _sandbox(config) if not config.agent else "none"  # the reference agent's, for expect.verify
    process = process_agent(config)
    custom = _import(config.agent, "agent", config) if config.agent and process is None else None
    if custom is not None:
        _check_agent_signature(custom, config.agent or "", config.source or "configuration")
    if spec.kind == "replay":
        _check_cassettes(config.resolve(spec.target),
                         [t.id for t in tests if include_live_canary or t.mode != "live_canary"])
    judge_parsed, judge_scripts = judge_setup(config)
    mcp = _suite_mcp(config, process, suite, tests, tool_names)

    def invoke_for(test: SuiteTest) -> Callable[[TrialContext], Any]:
        if custom is not None and not inspect.iscoroutinefunction(custom):
            def invoke_sync(ctx: TrialContext) -> Any:  # the runner runs a sync agent in a worker thread
                ctx.prompt, ctx.model = test.prompt, model_transport(spec, test.id, config, ctx, scripts)
                ctx.model_name, ctx.api = model_name, api
                mcp.serve(ctx, test.id)
                return custom(test.prompt, ctx)

            return invoke_sync

        async def invoke(ctx: TrialContext) -> Any:
            ctx.prompt, ctx.model = test.prompt, model_transport(spec, test.id, config, ctx, scripts)
            ctx.model_name, ctx.api = model_name, api
            served = mcp.serve(ctx, test.id)
            if process is not None:  # awaited here, so a timeout or Ctrl-C cancels it and kills its processes
                return await process.arun(test.prompt, ctx)
            if custom is not None:
                return await custom(test.prompt, ctx)
            if not isinstance(sandbox, str):  # its commands ran in this sandbox: a verify command runs there too
                ctx.sandbox = sandbox
            agent = Agent(
                ctx.model, api=api, model_name=model_name, tools=make_tools(lambda: ctx.workdir) + await
                _mcp_tools(served), policy=policy,
                system=config.system, max_turns=config.turn_limit, max_cost_usd=test.max_cost_usd,
            )
            return await agent.arun(test.prompt)

        return invoke

    cases = []
    for test in tests:
        cases.append(
            Case(
                name=test.id,
                title=test.name,
                invoke=invoke_for(test),
                setup=workspace_setup(test, tasks.get(test.id, workspace)),
                tags=test.tags,
                mode="live_canary" if test.mode == "live_canary" else "deterministic",
                expect_outcome=test_graders(test, suite, config, judge_parsed, judge_scripts),
                max_cost_usd=test.max_cost_usd,
                trials=test.trials,
                metadata=test_metadata(test, suite),
                _source=str(suite.path),
            )
        )
    if spec.live:
        # A live model is the user's explicit choice: its calls must reach the provider, so no test is gated.
        for case in cases:
            case.mode = "live_canary"
    return cases


class SetupError(Exception):
    """A test's setup command failed: the trial's setup error (naming the test and the command), not a grade."""


#: How long one setup command may run (seconds).
SETUP_TIMEOUT_S = 300.0


def _task_folders(suite: SuiteFile, tests: list[SuiteTest]) -> dict[str, Path]:
    """Each test's own task folder (`workspace` in tests.json, relative to the suite file's folder), checked to be a
    folder before anything runs."""
    folders: dict[str, Path] = {}
    problems = []
    for test in tests:
        if test.workspace is None:
            continue
        folder = (suite.path.parent / test.workspace).resolve()
        if not folder.is_dir():
            siblings = [p.name for p in folder.parent.iterdir() if p.is_dir()] if folder.parent.is_dir() else []
            close = difflib.get_close_matches(folder.name, siblings, n=1)
            hint = f" (did you mean {str(Path(test.workspace).parent / close[0])!r}?)" if close else ""
            problems.append(f"{_where(suite, test)}, field 'workspace': {test.workspace!r} is not a folder{hint} "
                            f"(looked for {folder})")
        elif (link := _link_back(folder)) is not None:
            problems.append(f"{_where(suite, test)}, field 'workspace': {link} is a symbolic link to an absolute path "
                            f"inside the task folder itself: a trial's copy would write to the folder through it (make "
                            "the link relative)")
        folders[test.id] = folder
    if problems:
        raise SuiteError(problems)
    return folders


def _link_back(folder: Path) -> str | None:
    """A symbolic link in the task folder that leads back into it by an absolute path (copied as it is, it would
    let a trial change the folder itself), as a path relative to the folder; None when there is none."""
    import os

    real = os.path.realpath(folder)
    for top, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(top, name)
            if not os.path.islink(path) or not os.path.isabs(os.readlink(path)):
                continue
            target = os.path.realpath(path)
            if target == real or target.startswith(real.rstrip(os.sep) + os.sep):
                return os.path.relpath(path, folder)
    return None


def workspace_setup(test: SuiteTest, folder: Path | None) -> Callable[[TrialContext], None] | None:
    """A test's setup: its task folder (or the suite-wide workspace) copied into the trial's workdir, then its setup
    commands run there, in order; None when it has neither."""
    commands = test.setup_commands
    if folder is None and not commands:
        return None

    def setup(ctx: TrialContext) -> None:
        if folder is not None:
            shutil.copytree(folder, ctx.workdir, dirs_exist_ok=True, symlinks=True)
        for number, command in enumerate(commands, start=1):
            _run_setup(test.id, command, number, len(commands), ctx.workdir)

    return setup


def _run_setup(test: str, command: str, number: int, count: int, workdir: Path) -> None:
    """One setup command in the workdir (through /bin/sh, under a keeper, with the allow-listed environment);
    SetupError naming the test and the command when it fails."""
    from ..agent._commands import run_shell

    which = f"setup command {number} of {count}" if count > 1 else "setup command"
    try:
        done = run_shell(command, workdir, SETUP_TIMEOUT_S, 4_000)
    except OSError as exc:
        raise SetupError(f"test {test!r}: {which} `{command}` could not start: {exc}") from None
    if done.returncode == 0 and done.stopped is None:
        return
    why = (f"did not finish within {SETUP_TIMEOUT_S:g}s" if done.stopped == "timeout" else
           f"was stopped ({done.stopped})" if done.stopped else f"exited {done.returncode}")
    output = done.output.strip()
    raise SetupError(f"test {test!r}: {which} `{command}` {why}" + (f": {output[-1500:]}" if output else ""))
def _checked_scripts(config: Config, spec: ModelSpec, tests: list[SuiteTest],
                     include_live_canary: bool) -> dict[str, FileScript] | None:
    """The scripted model file's scripts (None for another kind of model), every test that will run given one."""
    scripts = load_script_file(config.resolve(spec.target)) if spec.kind == "scripted" else None
    if scripts is not None:
        missing = [t.id for t in tests if t.id not in scripts and (include_live_canary or t.mode != "live_canary")]
        if missing:
            raise ConfigError(f"{config.resolve(spec.target)}: no script for test(s) {', '.join(map(repr, missing))}")
    return scripts


def _suite_workspace(config: Config) -> Path | None:
    """The suite-wide workspace folder (`workspace` in trialrun.toml), checked to be a folder; None without one."""
    workspace = config.resolve(config.workspace) if config.workspace else None
    if workspace is not None and not workspace.is_dir():
        raise ConfigError(f"{config.source or 'configuration'}: workspace: {str(workspace)!r} is not a folder")
    return workspace


def _suite_mcp(config: Config, process: Any, suite: SuiteFile, tests: list[SuiteTest], tool_names: list[str]) -> SuiteMcp:
    """The suite's MCP servers (`[mcp_servers.NAME]`, maybe none), checked now; the reference agent's tools then
    known (its own and the scripted servers'), an expected tool it lacks is a typo, not a score."""
    try:
        suite_mcp = SuiteMcp(config.mcp_servers, lambda path: config.resolve(path), str(config.source or "configuration"))
        suite_mcp.check_agent(process)
    except ValueError as exc:
        raise ConfigError(f"{config.source or 'configuration'}: {exc}") from None
    missing = suite_mcp.missing_recordings([t.id for t in tests])
    if missing:  # as a replay: model without a cassette for a test: a setup problem, not a test failure
        raise ConfigError(f"{config.source or 'configuration'}: no MCP recording for {len(missing)} test(s) that will "
                          f"run: {', '.join(missing)} (record them first: record = \"...\" with command or url); "
                          "nothing was run")
    if not config.agent and (served := suite_mcp.tool_names()) is not None:
        _check_expected_tools(suite, tests, tool_names + served)
    return suite_mcp


async def _mcp_tools(servers: list[Any]) -> list[Any]:
    """The tools of the trial's MCP servers, for the reference agent."""
    return [tool for server in servers for tool in await amcp_tools(server)]


def test_graders(test: SuiteTest, suite: SuiteFile, config: Config, judge_parsed: ModelSpec | None,
                 judge_scripts: dict[str, FileScript] | None) -> list[Grader]:
    """A suite test's graders: the rubric (with the judge, when one is configured; its output quality from the
    test's `verify` when it has one), then its `expect` graders. The one place they are made, for a run and for
    `trialrun regrade` alike."""
    judge = None
    if judge_parsed is not None:
        judge = llm_judge(
            functools.partial(_judge_transport, judge_parsed, test.id, config, judge_scripts),
            api=_judge_api(judge_parsed),
            model_name=judge_parsed.model_name or "gpt-4.1-mini",
            prompt=test.prompt,
        )
    extra = suite.graders.get(test.id, [])
    verifier = next((grader for grader in extra if verify_of(grader)), None)
    return [
        rubric(expected_tools=test.expected_tools, max_turns=test.max_turns, success_criteria=test.success_criteria,
               threshold=config.pass_threshold, judge=judge, formula=config.rubric, quality_from=verifier),
        *extra,
    ]


def test_metadata(test: SuiteTest, suite: SuiteFile) -> dict[str, Any]:
    """What a suite test's case carries as metadata (`results.is_suite_case` tells a suite case by it)."""
    return {"prompt": test.prompt, "expected_tools": test.expected_tools, "max_turns": test.max_turns,
            "success_criteria": test.success_criteria, "line": suite.lines.get(test.id)}


def load_suite(path: str | Path, config: Config | None = None) -> list[Case]:
    """Read a suite file and build runnable Cases from it with a configuration (trialrun.toml). It lives here, not
    in `suite`, so data flows one way: suite files -> cases."""
    suite = read_suite(path)
    return build_cases(suite, config if config is not None else load_config(Path(path).parent))


def _where(suite: SuiteFile, test: SuiteTest) -> str:
    """`state/eval/tests.json:12: test 'read-file'`: where a message about one test points."""
    line = suite.lines.get(test.id)
    return f"{suite.path}:{line}: test {test.id!r}" if line else f"{suite.path}: test {test.id!r}"


def _check_expected_tools(suite: SuiteFile, tests: list[SuiteTest], tool_names: list[str]) -> None:
    """SuiteError, before anything runs, for an expected tool the reference agent does not have (with a
    did-you-mean): the model is never offered it, so the test could only ever score low."""
    problems = []
    for test in tests:
        for name in test.expected_tools:
            if name in tool_names:
                continue
            close = difflib.get_close_matches(name, tool_names, n=1, cutoff=0.6)
            if not close:
                close = [t for t in tool_names if t.replace("_", "-").lower() == name.replace("_", "-").lower()]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            problems.append(f"{_where(suite, test)}, field 'expected_tools': {name!r} is not a tool of the reference "
                            f"agent{hint}; its tools: {', '.join(tool_names) or 'none'}")
    if problems:
        raise SuiteError(problems)


def suite_warnings(suite: SuiteFile, config: Config, only: Collection[str] | None = None) -> list[str]:
    """What is legal in a suite but probably not meant, one message per test (the CLI prints them as warnings and
    `--strict` makes them errors): a test that cannot fail under the configured rubric, success criteria the
    heuristic cannot check (no judge: any non-empty answer would get full output quality), and a turn budget above
    the reference agent's hard `turn_limit` (the agent is stopped before it could use the budget)."""
    warnings = []
    for test in suite.tests:
        if only is not None and test.id not in only:
            continue
        if config.rubric == "skill" and not test.expected_tools and not suite.graders.get(test.id):
            warnings.append(f"{_where(suite, test)}: cannot fail under the \"skill\" rubric: with no expected_tools "
                            "and no expect graders, tool accuracy and turn efficiency alone reach 1.0 (use "
                            "rubric = \"balanced\", or add expect graders)")
        verified = any(verify_of(grader) for grader in suite.graders.get(test.id, []))  # quality from the verifier
        if not config.judge and not verified and not key_terms(test.success_criteria):
            warnings.append(f"{_where(suite, test)}, field 'success_criteria': no word of {test.success_criteria!r} "
                            "is one the heuristic can look for, so any non-empty answer gets output_quality 0.5 (name "
                            "what the answer must contain, or configure a judge)")
        if not config.agent and test.max_turns > config.turn_limit:
            warnings.append(f"{_where(suite, test)}, field 'max_turns': {test.max_turns} is above turn_limit "
                            f"{config.turn_limit}: the agent is stopped after {config.turn_limit} turns, before the "
                            "budget is used up")
    return warnings


# -- what the run was configured with ----------------------------------------------------------------------
def _git_commit(folder: Path) -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def config_snapshot(config: Config, suite: SuiteFile, labels: dict[str, str] | None = None) -> dict[str, Any]:
    """What the run was configured with, for compare to diff. Never a secret: no keys, no environment values."""
    reference = not config.agent
    process = process_agent(config)
    _, tool_names = _tools_factory(config) if reference else (None, [])
    policy = _policy(config) if reference else None
    suite_bytes = suite.path.read_bytes()
    snapshot: dict[str, Any] = {
        "model": str(config.model_spec),
        "api": config.effective_api,
        "model_name": config.effective_model_name,
        "agent": config.agent or "trialrun.Agent",
        "skills_loaded": list(config.skills),
        "sandbox": _sandbox_name(config),
        "tools": tool_names,
        "system_prompt_sha256": hashlib.sha256(config.system.encode()).hexdigest()[:16] if config.system else None,
        "system_prompt": snapshot_text(config.system) if config.system else None,  # (bounded) what changed in it
        "policy": policy.summary() if policy else None,
        "judge": config.judge or "heuristic",
        "pass_threshold": config.pass_threshold,
        "rubric": config.rubric,
        "turn_limit": config.turn_limit,
        "trials": config.trials,
        "executor": executor_name(config.executor),
        "prices": _prices_snapshot(config),
        "suite": {"path": _relative(suite.path), "sha256": hashlib.sha256(suite_bytes).hexdigest()},
        "trialrun_version": _version.__version__,
        "python_version": platform.python_version(),
        "git_commit": _git_commit(config.base_dir),
    }
    if not reference:  # a custom agent gets (prompt, ctx) and no more: these configure the reference agent only
        for key in REFERENCE_AGENT_KEYS:
            del snapshot[key]
    if reference and config.pass_env:  # the names only: what run_command keeps of the environment
        snapshot["pass_env"] = sorted(config.pass_env)
    if process is not None:  # what the agent itself was configured with: version, settings and skills hashes
        snapshot.update(process.snapshot())
    if config.mcp_servers:  # each server's source and transport (never an env or header value)
        from ._mcp_config import specs

        snapshot["mcp_servers"] = {s.name: {"source": s.source, "transport": s.transport} for s in specs(config.mcp_servers)}
    if (limit := _rate_limit_snapshot(config)) is not None:
        snapshot["rate_limit"] = limit
    if labels:
        snapshot["labels"] = dict(labels)
    return snapshot


def executor_name(executor: str | None) -> str:
    """Where the trials ran, as `config_snapshot.executor` records it: "local", "ray" or "ray://HOST:PORT" (never
    a user or password a URL may carry)."""
    text = (executor or "").strip() or "local"
    return re.sub(r"//[^/@]*@", "//", text)


def _rate_limit_snapshot(config: Config) -> dict[str, Any] | None:
    """The limit the live model's calls were held to (shared by every trial; on Ray by every worker), if any."""
    limit = config.rate_limits
    if limit is None or not config.model_spec.live:
        return None
    return {**limit.as_dict(), "applies_to": str(config.model_spec), "shared": "every trial of the run"}


def _apply_prices(config: Config, table: PriceTable) -> None:
    """The configured price source and explicit prices, into `table`; a ConfigError naming the key otherwise."""
    try:
        table.use(config.prices_source)
    except ValueError as exc:
        raise ConfigError(f"{config.source or 'configuration'}: prices_source: {exc}") from None
    for model, entry in config.prices.items():
        try:
            table.set(model, **entry)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{config.source or 'configuration'}: prices.{model}: {exc}") from None


def _prices_snapshot(config: Config) -> dict[str, Any]:
    """Which source prices this configuration's runs (and its version), without touching the shared table."""
    table = PriceTable()
    _apply_prices(config, table)
    return table.describe()


def _sandbox_name(config: Config) -> str:
    sandbox = _sandbox(config)
    return sandbox if isinstance(sandbox, str) else sandbox.describe()


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
