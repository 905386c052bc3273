"""Cases (one behaviour to evaluate), their validation (the checks of each field are in `_case_checks`), and the
context each trial receives.

A case that cannot be understood is an error raised before anything runs, listing every problem at once: "a case
that silently does nothing is worse than no case at all".
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from ._case_checks import check_callables, check_graders, check_limits_and_text, check_mode, check_tags
from ._util.display import listing
from .expect._base import Grader
from .trajectory import Trajectory

if TYPE_CHECKING:
    import httpx
    import httpx2

    from ._util.workspace import Workspace
    from ._util.workspace_diff import WorkspaceDiff
    from .endpoint import ModelEndpoint
    from .mcp import McpEndpoint, TrialMcp
    from .models import Cassette, ModelTransport, ScriptedModel
    from .wire import Exchange

_T = TypeVar("_T")

__all__ = ["Case", "CaseError", "Problem", "TrialContext", "MODES", "validate_cases", "case"]

MODES = ("deterministic", "live_canary")

FIELDS = (
    "name",
    "invoke",
    "tags",
    "mode",
    "setup",
    "teardown",
    "expect_outcome",
    "expect_trajectory",
    "max_cost_usd",
    "timeout_s",
    "trials",
    "title",
    "description",
    "metadata",
)
# The seed's hashtable keys (PowerShell spelling) map onto the Python names.
_ALIASES = {
    "tag": "tags",
    "expectoutcome": "expect_outcome",
    "expecttrajectory": "expect_trajectory",
    "maxcostusd": "max_cost_usd",
    "timeout": "timeout_s",
    "timeoutseconds": "timeout_s",
    "trial": "trials",
}


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with a case: where (case name or position, field, file) and what."""

    message: str
    case: str | None = None
    index: int | None = None
    field: str | None = None
    source: str | None = None

    def __str__(self) -> str:
        where = []
        if self.source:
            where.append(self.source)
        if self.case:
            where.append(f"case {self.case!r}")
        elif self.index is not None:
            where.append(f"case #{self.index + 1}")
        if self.field:
            where.append(f"field {self.field!r}")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class CaseError(ValueError):
    """Cases that cannot run. `problems` lists every one found, not only the first."""

    def __init__(self, problems: Sequence[Problem | str]) -> None:
        self.problems = [p if isinstance(p, Problem) else Problem(p) for p in problems]
        count = len(self.problems)
        head = f"{count:,} problem{'s' if count != 1 else ''} in the cases; nothing was run:"
        super().__init__(listing(head, self.problems))


def _suggest(key: str, options: Iterable[str]) -> str:
    import difflib  # difflib, tempfile and shutil are imported where used: `import trialrun` imports this module

    close = difflib.get_close_matches(key, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _as_tuple(items: Any) -> tuple[Any, ...]:
    """An expectation list as given: None, one grader on its own, or a list of them."""
    if items is None:
        return ()
    if callable(items) and not isinstance(items, (list, tuple)):
        return (items,)
    return tuple(items)


def _normalise_key(key: str) -> str:
    if key in FIELDS:
        return key
    folded = key.replace("-", "_").lower()
    if folded in FIELDS:
        return folded
    return _ALIASES.get(folded.replace("_", ""), key)


class Case:
    """One agent behaviour to evaluate, graded on its outcome, its trajectory and its cost.

    >>> from trialrun import Case, expect
    >>> case = Case(name="greets", invoke=lambda ctx: "hello", expect_outcome=[expect.contains("hello")])
    >>> case.mode
    'deterministic'
    """

    __slots__ = (*FIELDS, "graders")

    def __init__(
        self,
        name: str | None = None,
        invoke: Callable[[TrialContext], Any] | None = None,
        *,
        tags: Iterable[str] = (),
        mode: str = "deterministic",
        setup: Callable[[TrialContext], Any] | None = None,
        teardown: Callable[[TrialContext], Any] | None = None,
        expect_outcome: Iterable[Any] = (),
        expect_trajectory: Iterable[Any] = (),
        max_cost_usd: float | None = None,
        timeout_s: float | None = None,
        trials: int | None = None,
        title: str | None = None,
        description: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        _index: int | None = None,
        _source: str | None = None,
        **unknown: Any,
    ) -> None:
        # name and invoke are required, but a missing one (or a misspelt keyword, caught by **unknown) is reported
        # as a CaseError listing every problem, like any other mistake, rather than as a bare TypeError.
        problems: list[Problem] = []
        label = name if isinstance(name, str) and name.strip() else None

        def bad(field: str, message: str) -> None:
            problems.append(Problem(message, case=label, index=_index, field=field, source=_source))

        for key in unknown:
            normal = _normalise_key(key)
            hint = f" (did you mean {normal!r}?)" if normal in FIELDS else _suggest(key, FIELDS)
            bad(key, f"unknown argument{hint}")
        check_callables(name, invoke, setup, teardown, bad)
        tag_list = check_tags(tags, bad)
        normal_mode = check_mode(mode, bad)
        graders = check_graders(expect_outcome, expect_trajectory, max_cost_usd, bad)
        check_limits_and_text(timeout_s, trials, title, description, metadata, bad)
        if problems:
            raise CaseError(problems)

        assert isinstance(name, str)  # checked above: a CaseError otherwise
        self.name: str = name
        self.invoke = invoke
        self.tags: tuple[str, ...] = tag_list
        self.mode: str = normal_mode if normal_mode is not None else "deterministic"
        self.setup = setup
        self.teardown = teardown
        self.expect_outcome: tuple[Any, ...] = _as_tuple(expect_outcome)
        self.expect_trajectory: tuple[Any, ...] = _as_tuple(expect_trajectory)
        self.max_cost_usd: float | None = float(max_cost_usd) if max_cost_usd is not None else None
        self.timeout_s: float | None = float(timeout_s) if timeout_s is not None else None
        self.trials: int | None = trials
        self.title = title
        self.description = description
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.graders: tuple[Grader, ...] = distinct_labels(graders)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, index: int | None = None, source: str | None = None) -> Case:
        """Build a case from the seed's hashtable form: the same keys as Case's arguments (the seed's PowerShell
        spellings such as Name, Tag, ExpectOutcome and MaxCostUSD are accepted too). An unknown key is an error."""
        if not isinstance(data, Mapping):
            raise CaseError([Problem(f"a case must be a mapping, got {type(data).__name__}", index=index, source=source)])
        label = data.get("name", data.get("Name"))
        label = label if isinstance(label, str) and label.strip() else None
        kwargs: dict[str, Any] = {}
        problems: list[Problem] = []
        for key, value in data.items():
            field = _normalise_key(str(key))
            if field not in FIELDS:
                problems.append(
                    Problem(f"unknown key{_suggest(str(key), FIELDS)}", case=label, index=index, field=str(key), source=source)
                )
            elif field in kwargs:
                problems.append(Problem("given twice (in two spellings)", case=label, index=index, field=field, source=source))
            else:
                kwargs[field] = value
        for required in ("name", "invoke"):
            kwargs.setdefault(required, None)
        try:
            case = cls(**kwargs, _index=index, _source=source)
        except CaseError as exc:
            problems.extend(exc.problems)
            raise CaseError(problems) from None
        if problems:
            raise CaseError(problems)
        return case

    def __repr__(self) -> str:
        return f"Case({self.name!r}, mode={self.mode!r}, tags={list(self.tags)!r})"


def validate_cases(cases: Iterable[Case | Mapping[str, Any]]) -> list[Case]:
    """Turn Cases and hashtable-style dicts into Cases, checking every one and that names are unique.

    Raises CaseError listing every problem in every case.
    """
    if isinstance(cases, (Case, Mapping)):
        cases = [cases]
    result: list[Case] = []
    problems: list[Problem] = []
    for index, item in enumerate(cases):
        if isinstance(item, Case):
            result.append(item)
            continue
        try:
            result.append(Case.from_dict(item, index=index))
        except CaseError as exc:
            problems.extend(exc.problems)
    seen: dict[str, int] = {}
    for index, case in enumerate(result):
        if case.name in seen:
            problems.append(
                Problem(f"duplicate name: cases #{seen[case.name] + 1} and #{index + 1} are both named {case.name!r}; names must be unique in a run", case=case.name, field="name")
            )
        else:
            seen[case.name] = index
    if problems:
        raise CaseError(problems)
    return result


class TrialContext:
    """What setup, invoke and teardown receive for one trial.

    `trial` is 1-based. `workdir` is a fresh temporary folder (created on first use, removed after teardown).
    `state` is a dict setup can fill for invoke. The model helpers create transports whose traffic trialrun
    observes: when invoke returns a plain value, the trajectory read from them becomes the run's trajectory.
    """

    def __init__(self, case: Case, trial: int, *, run_id: str | None = None) -> None:
        self.case = case
        self.trial = trial
        self.run_id = run_id
        self.state: dict[str, Any] = {}
        #: Set for suite tests, for a custom agent (`agent = "module:function"`) to use: the prompt, the configured
        #: model transport (an httpx transport: scripted, replayed or live, observed), the model name to send
        #: (`model_name`, else the one in `model = "openai:NAME"`) and the wire API the configuration names.
        self.prompt: str | None = None
        self.model: Any = None
        self.model_name: str | None = None
        self.api: str | None = None
        self._workdir: Path | None = None
        self._transports: list[Any] = []
        self._clients: list[Any] = []
        self._workspace: Workspace | None = None
        #: Set by the runner when a grader of the case reads the workspace (see `workspace`).
        self._wants_workspace = False
        self._killed: list[str] | None = None  # processes of agents it ran, killed when they ended (TrialResult.killed)
        #: The sandbox the agent ran in (a process agent's, or the suite's reference agent's), for `expect.verify`
        #: to run its command in the same one; None: no sandbox.
        self.sandbox: Any = None
        self._files: WorkspaceDiff | None = None
        self._mcp: TrialMcp | None = None  # its MCP servers (`mcp`), made with the first

    def __repr__(self) -> str:
        return f"TrialContext(case={self.case.name!r}, trial={self.trial})"

    def _note_killed(self, killed: list[str]) -> None:
        """A process agent's run in this trial ended; `killed` is what of it was killed then (maybe nothing)."""
        self._killed = [*(self._killed or ()), *killed]

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            import tempfile

            slug = "".join(ch if ch.isalnum() else "-" for ch in self.case.name)[:40]
            self._workdir = Path(tempfile.mkdtemp(prefix=f"trialrun-{slug}-t{self.trial}-"))
        return self._workdir

    @property
    def has_workdir(self) -> bool:
        """Whether the trial's workdir was made (reading `workdir` makes one)."""
        return self._workdir is not None

    @property
    def workspace(self) -> Workspace | None:
        """The workdir's text files as they stood when the agent started (after setup, before invoke), or None when
        no snapshot was taken. The runner takes one when a grader of the case reads it (`expect.never_ran` does; a
        grader of your own says so with `fn.reads_workspace = True`); `snapshot_workspace()` takes one now."""
        workspace = self._workspace
        if workspace is not None and workspace.root is None and self._workdir is not None:
            workspace.set_root(self._workdir)  # the workdir was made after the snapshot: it was empty then
        return workspace

    def snapshot_workspace(self) -> Workspace:
        """Read the workdir's text files now, as the base of the workspace model (see `workspace`). Bounded: files,
        bytes per file and bytes in all (`trialrun._util.workspace`); what it leaves out is named with the reason."""
        from ._util.workspace import Workspace, snapshot

        self._workspace = snapshot(self._workdir) if self._workdir is not None else Workspace(None)
        return self._workspace

    def _before_invoke(self) -> None:
        """What the runner does between setup and invoke: the workspace snapshot, when a grader reads it or setup
        made the workdir (the base of the workspace diff, `files_left`)."""
        if self._snapshot_due():
            self.snapshot_workspace()

    def _snapshot_due(self) -> bool:
        return self._wants_workspace or self._workdir is not None

    @property
    def files(self) -> WorkspaceDiff | None:
        """What the agent left in the workdir (files added, changed, removed, with their diffs), once the runner has
        compared it after invoke (`Run.files` holds the same); None before that, or when there was no workdir."""
        return self._files

    def files_left(self) -> WorkspaceDiff | None:
        """Compare the workdir now with the snapshot taken before invoke (an empty workdir when the agent made it),
        keep the result as `files` and return it; None when there is no workdir. Bounded (`_util.workspace_diff`)."""
        if self._workdir is None or not self._workdir.is_dir():
            return None
        from ._util.workspace import Workspace, snapshot
        from ._util.workspace_diff import workspace_diff

        before = self.workspace or Workspace(self._workdir)
        self._files = workspace_diff(before, snapshot(self._workdir))
        return self._files

    # -- model transports (the one seam) -------------------------------------------------------------------
    def _register(self, transport: _T) -> _T:
        if not any(t is transport for t in self._transports):
            self._transports.append(transport)
        return transport

    def scripted(self, steps: Any, **kwargs: Any) -> ScriptedModel:
        """A ScriptedModel for this trial, observed."""
        from .models import ScriptedModel

        return self._register(ScriptedModel(steps, **kwargs))

    def cassette(self, path: str | Path, mode: str = "replay", **kwargs: Any) -> Cassette:
        """A Cassette transport for this trial, observed."""
        from .models import Cassette

        return self._register(Cassette(path, mode, **kwargs))  # type: ignore[arg-type]  # Cassette checks the mode and names a wrong one

    def observe(self, transport: Any) -> ModelTransport:
        """Observe any httpx transport (wrapping it when it does not record its own traffic)."""
        from .models import ModelTransport, ObservedTransport

        observed: ModelTransport = transport if isinstance(transport, ModelTransport) else ObservedTransport(transport)
        return self._register(observed)

    @overload
    def http_client(self, transport: Any = None, *, httpx2: Literal[False] = False, **kwargs: Any) -> httpx.Client: ...
    @overload
    def http_client(self, transport: Any = None, *, httpx2: Literal[True], **kwargs: Any) -> httpx2.Client: ...

    def http_client(self, transport: Any = None, *, httpx2: bool = False, **kwargs: Any) -> Any:
        """An httpx.Client whose traffic is observed (closed after the trial).

        `httpx2=True` gives an `httpx2.Client` instead: the anthropic and openai SDKs type their `http_client` as
        one (they bring httpx2). trialrun's transports answer in whichever flavour asks.
        """
        module = _httpx_module(httpx2)
        client = module.Client(transport=self.observe(transport or module.HTTPTransport()), **kwargs)
        self._clients.append(client)
        return client

    @overload
    def async_http_client(
        self, transport: Any = None, *, httpx2: Literal[False] = False, **kwargs: Any
    ) -> httpx.AsyncClient: ...
    @overload
    def async_http_client(
        self, transport: Any = None, *, httpx2: Literal[True], **kwargs: Any
    ) -> httpx2.AsyncClient: ...

    def async_http_client(self, transport: Any = None, *, httpx2: bool = False, **kwargs: Any) -> Any:
        """An httpx.AsyncClient whose traffic is observed (closed after the trial); `httpx2=True` as above."""
        module = _httpx_module(httpx2)
        client = module.AsyncClient(transport=self.observe(transport or module.AsyncHTTPTransport()), **kwargs)
        self._clients.append(client)
        return client

    def serve(self, transport: Any, *, max_body: int | None = None) -> ModelEndpoint:
        """Serve a model transport on a loopback port (for an agent in another process); observed, and stopped
        after the trial. Point the agent at `endpoint.openai_base_url` or `endpoint.anthropic_base_url`.
        `max_body`: the largest request body read (bytes; default `trialrun.endpoint.DEFAULT_MAX_BODY`)."""
        from .endpoint import DEFAULT_MAX_BODY, serve

        endpoint = serve(self.observe(transport), max_body=DEFAULT_MAX_BODY if max_body is None else max_body).start()
        self._clients.append(endpoint)  # stopped with the clients
        return endpoint

    # -- MCP servers (the second seam) ------------------------------------------------------------------------
    def mcp(self, server: Any, *, name: str | None = None, transport: str = "stdio") -> McpEndpoint:
        """Serve an MCP server for this trial, every message recorded (stopped after the trial): a
        `ScriptedMCPServer`, a script file, a real server (`{"command": "..."}` or `{"url": "..."}`, behind the
        recording proxy) or an MCP cassette. `transport`: "stdio" (`endpoint.command`, for the agent to start) or
        "http" (`endpoint.url`). Process agents write every server of the trial into their agent's configuration."""
        if self._mcp is None:
            from .mcp import TrialMcp

            self._mcp = TrialMcp()
            self._clients.append(self._mcp)  # stopped with the clients
        return self._mcp.add(server, name=name, transport=transport, workdir=lambda: self.workdir)

    @property
    def mcp_servers(self) -> list[McpEndpoint]:
        """The trial's MCP servers (`mcp`), in the order they were added."""
        return list(self._mcp.endpoints) if self._mcp is not None else []

    def _attach_mcp(self, trajectory: Trajectory) -> None:
        """What the trial's MCP servers received, into `trajectory`, joined to the model's calls (the runner does
        this before grading)."""
        if self._mcp is not None:
            self._mcp.attach(trajectory, len(self._model_exchanges()) + 1)

    def _mcp_problems(self) -> list[str]:
        return self._mcp.problems() if self._mcp is not None else []

    @property
    def transports(self) -> list[Any]:
        return list(self._transports)

    def _outer(self) -> list[Any]:
        """The transports the agent talked to: one that serves as another's upstream
        (`ctx.cassette(p, "record", upstream=ctx.scripted(...))`) saw the same calls, and is left out."""
        if len(self._transports) <= 1:
            return list(self._transports)
        behind = {id(inner) for t in self._transports for inner in (getattr(t, "upstream", None), getattr(t, "inner", None))
                  if inner is not None}
        return [t for t in self._transports if id(t) not in behind]

    def model_kinds(self) -> list[str]:
        """The kinds of model this trial talked to (`models.ModelKind`: scripted, replay, live, other), sorted: those
        of the transports the agent talked to that saw a request. The trial's result keeps them (`models`), so a
        comparison knows whether its runs were deterministic from what they did, not from what was configured."""
        from .models._base import kind_of

        return sorted({kind_of(transport) for transport in self._outer() if transport.exchanges})

    def exchanges(self) -> list[Exchange]:
        """The trial's recorded HTTP exchanges, numbered as `Turn.exchange` numbers them (from 1): each observed
        transport's in arrival order, one transport after another in the order they were created; then its MCP
        servers' exchanges (`trialrun.mcp`), numbered as `McpCall.exchange` numbers them."""
        model = self._model_exchanges()
        return model + self._mcp.exchanges() if self._mcp is not None else model

    def _model_exchanges(self) -> list[Exchange]:
        return [exchange for transport in self._outer() for exchange in transport.exchanges]

    def credentials(self) -> frozenset[bytes]:
        """The credential values the trial's requests carried in credential headers (recorded REDACTED): what a
        writer of `exchanges()` removes wherever else they appear."""
        return frozenset(v for t in self._transports for v in getattr(t, "credentials", ()))

    def trajectory(self) -> Trajectory:
        """The trajectory observed through this trial's transports (in the order they were created). A transport that
        serves as another's upstream saw the same calls: only the outer one, what the agent talked to, is counted."""
        outer = self._outer()
        if len(outer) == 1:
            only: Trajectory = outer[0].trajectory()
            return only
        merged = Trajectory()
        offset = 0
        for transport in outer:
            part = transport.trajectory()
            for turn in part.all_turns:  # numbered across the trial, as `exchanges()` lists them
                if turn.exchange is not None:
                    turn.exchange += offset
            offset += len(transport.exchanges)
            merged.turns.extend(part.turns)
            merged.commands.extend(part.commands)
            merged.denials.extend(part.denials)
            merged.notes.extend(part.notes)
            merged.other_conversations.extend(part.other_conversations)
            merged.model_calls += part.model_calls
            merged.offered_tools.extend(name for name in part.offered_tools if name not in merged.offered_tools)
            merged.command_tools.update(part.command_tools)
            merged.quiet_tools.extend(name for name in part.quiet_tools if name not in merged.quiet_tools)
            merged.error_flags_unknown.update(part.error_flags_unknown)
            merged.prompt = merged.prompt or part.prompt  # the first transport's prompt started the run
        return merged

    def problems(self) -> list[str]:
        """What the transports saw that must fail the trial (an exhausted script, a cassette miss)."""
        return [problem for transport in self._transports for problem in getattr(transport, "problems", ())]

    async def aclose(self) -> None:
        """Close the clients made through this context and remove the workdir (the runner does this after
        teardown; call it yourself for a context you made)."""
        for client in self._clients:
            try:
                if hasattr(client, "aclose"):
                    await client.aclose()
                elif hasattr(client, "astop"):  # an endpoint: its thread is woken, the loop never waits on it
                    await client.astop()
                elif hasattr(client, "stop"):
                    client.stop()
                else:
                    client.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
        self._clients.clear()
        self._remove_workdir()

    def close(self) -> None:
        """`aclose` for code without an event loop (async clients are closed on a loop of their own)."""
        if any(hasattr(client, "aclose") for client in self._clients):
            import asyncio

            try:
                asyncio.get_running_loop()
            except RuntimeError:
                asyncio.run(self.aclose())
                return
        for client in self._clients:
            if hasattr(client, "stop"):
                client.stop()
            elif hasattr(client, "close") and not hasattr(client, "aclose"):
                client.close()
        self._clients.clear()
        self._remove_workdir()

    def _remove_workdir(self) -> None:
        workdir = self._release_workdir()
        if workdir is not None:
            remove_workdir(workdir)

    def _release_workdir(self) -> Path | None:
        """Hand the workdir over for removal (`remove_workdir`): the runner removes it off the event loop, where
        a big tree cannot stall the other trials."""
        workdir, self._workdir = self._workdir, None
        return workdir


def distinct_labels(graders: list[Grader]) -> tuple[Grader, ...]:
    """The case's graders, a label that repeats numbered from its second use (`satisfies('<lambda>') #2`): each
    verdict of a trial, and each row of a comparison, must say which grader it is."""
    seen: dict[str, int] = {}
    distinct = []
    for grader in graders:
        seen[grader.label] = count = seen.get(grader.label, 0) + 1
        distinct.append(grader if count == 1 else grader.renamed(f"{grader.label} #{count}"))
    return tuple(distinct)


def remove_workdir(workdir: Path) -> None:
    """Remove a trial's workdir, after stopping the commands the shell tools left running there (`sleep 600 &`):
    they end with the trial."""
    commands = sys.modules.get("trialrun.agent._commands")
    if commands is not None:
        commands.stop_commands(workdir)
    import shutil

    shutil.rmtree(workdir, ignore_errors=True)


def _httpx_module(httpx2: bool) -> Any:
    import importlib

    try:
        return importlib.import_module("httpx2" if httpx2 else "httpx")
    except ImportError:
        raise ImportError("httpx2 is not installed (the official anthropic and openai SDKs bring it)") from None


def case(name: str | None = None, **fields: Any) -> Callable[[Callable[[TrialContext], Any]], Case]:
    """Decorate an invoke function to make it a Case (the function's name is the case's name by default).

    >>> from trialrun import case, expect
    >>> @case(tags=["smoke"], expect_outcome=[expect.contains("hi")])
    ... def says_hi(ctx):
    ...     return "hi"
    >>> says_hi.name, says_hi.tags
    ('says_hi', ('smoke',))
    """

    def wrap(fn: Callable[[TrialContext], Any]) -> Case:
        made = Case(name or fn.__name__, fn, **fields)
        made.metadata.setdefault("module", getattr(fn, "__module__", None))
        made.metadata.setdefault("qualname", getattr(fn, "__qualname__", None))
        return made

    return wrap
