"""Trajectory graders: what the agent did to get its output (tools, arguments, order, turns, commands)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from ..trajectory import CallOutcome, Run, ToolCall, ToolResult, Trajectory, observed_nothing
from ._base import Grader, Verdict, clip, count_arg, flag_arg, text_arg
from ._calls import (
    INVISIBLE as _INVISIBLE,
    agent_outcomes as _agent_outcomes,
    call_repr as _call_repr,
    count as _count,
    counting as _counting,
    fmt_args as _fmt_args,
    in_conversations as _in_conversations,
    include_refused_arg as _include_refused,
    invisible as _invisible,
    not_counted as _not_counted,
    refused_by as _refused_by,
    split as _split,
)
from ._match import (
    ARG_MODES as _ARG_MODES,
    MODES as _MODES,
    args_match as _args_match,
    as_ref as _as_ref,
    max_matching as _max_matching,
    name_matcher as _name_matcher,
    pair_ok as _pair_ok,
)

__all__ = [
    "called",
    "not_called",
    "called_in_order",
    "trajectory_matches",
    "max_turns",
    "max_tool_calls",
    "no_tool_errors",
    "no_denials",
    "never_ran",
    "no_model_calls",
]

#: Why a trajectory grader refuses to pass on a trial where nothing was observed.
NOTHING_OBSERVED = ("no model traffic was observed: was the agent's client created through ctx (ctx.http_client, "
                    "ctx.scripted, ...), or pointed at the endpoint (ctx.serve)? Use expect.no_model_calls() for an "
                    "agent that must not call the model")


def _looking(label: str, grade: Any, *, safety: bool = False) -> Grader:
    """A trajectory grader that FAILS when nothing was observed (no verdict without looking)."""

    def looked(run: Run, ctx: object) -> Verdict:
        if observed_nothing(run.trajectory):
            notes = run.trajectory.notes
            if notes:  # traffic there was, but none of it could be read
                return Verdict(False, label, f"no model request could be read ({len(notes)} note(s): {clip(notes[0], 160)})")
            return Verdict(False, label, NOTHING_OBSERVED)
        return grade(run, ctx)  # type: ignore[no-any-return]

    looked.__wrapped__ = grade  # type: ignore[attr-defined]
    looked.__module__ = __name__
    return Grader(label, looked, "trajectory", safety=safety)


def _text_loop(trajectory: Trajectory) -> bool:
    """A loop of several model calls, none offering a tool: a text protocol, where any tool may have run in text,
    so a grader that would pass on "no such call" cannot tell (one plain chat request has no loop to hide one)."""
    return _invisible(trajectory) and len(trajectory.turns) >= 2


def _unanswered_calls(trajectory: Trajectory) -> list[ToolCall]:
    """The agent's calls (main and sub-agents) that went unanswered: seen on the wire, and no result or refusal
    came back (see `Trajectory.outcomes`)."""
    return [o.call for o in _agent_outcomes(trajectory) if o.outcome == "unanswered"]


def _unanswered_note(calls: Sequence[ToolCall]) -> str:
    """Names the calls that were asked for but never got a result (so are not counted)."""
    if not calls:
        return ""
    shown = ", ".join(f"{c.name} (id {c.id})" for c in calls[:3]) + (", ..." if len(calls) > 3 else "")
    return (f"; not counted: {_count(len(calls), 'call')} the model asked for that never got a result, so the agent "
            f"did not run {'it' if len(calls) == 1 else 'them'}: {shown}")


#: Argument values whose repr cannot change after a grader is built (a list can be appended to, a predicate's repr
#: is its own business): their part of a reason is formatted once.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _times(n: int) -> str:
    return f"{n} time{'s' if n != 1 else ''}"


def _names(trajectory: Trajectory) -> str:
    names = [call.name for call in trajectory.all_tool_calls]
    return ", ".join(names) if names else "none"


def _called_label(tool: str, args: Mapping[str, Any] | None, times: int | None, at_least: int | None,
                  at_most: int | None, exact_args: bool, include_refused: bool) -> str:
    """`called('read_file', args={...}, times=2)`: the grader as it was written, the options given and no others."""
    parts = [repr(tool)]
    if args is not None:
        parts.append(f"args={args!r}")
    for name, value in (("times", times), ("at_least", at_least), ("at_most", at_most)):
        if value is not None:
            parts.append(f"{name}={value}")
    if exact_args:
        parts.append("exact_args=True")
    if include_refused:
        parts.append("include_refused=True")
    return f"called({', '.join(parts)})"


def _args_seen(calls: Sequence[ToolCall], keys: list[str] | None) -> str:
    """The arguments of the first five calls, for a reason saying they never matched (only `keys`, when given)."""
    shown = [_fmt_args(c.arguments, keys) for c in calls[:5]]
    # `saw path='b.txt', path='c.txt'` reads best; calls showing several arguments each need a stronger break
    one_each = all(len(c.arguments if keys is None else keys) <= 1 for c in calls[:5])
    sep = ", " if one_each else "; "
    return sep.join(shown) + (f"{sep}..." if len(calls) > 5 else "")


def called(
    tool: str,
    args: Mapping[str, Any] | None = None,
    *,
    times: int | None = None,
    at_least: int | None = None,
    at_most: int | None = None,
    exact_args: bool = False,
    include_refused: bool = False,
) -> Grader:
    """`tool` (a name or glob) ran, with `args` as a subset of its arguments (all of them if exact_args).

    Without a count it must run at least once. A value in `args` may be a predicate (a callable). A call counts
    when it ran (see `Trajectory.outcomes`), in the main conversation or a sub-agent's; a refused call counts too
    with include_refused=True (the agent tried). A call that never got a result never counts, and the reason names
    every call it left out.
    """
    text_arg("called", "tool", tool)
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"expect.called: args must be a mapping of argument names to values, got {type(args).__name__}")
    for name, value in (("times", times), ("at_least", at_least), ("at_most", at_most)):
        if value is not None:
            count_arg("called", name, value)
    flag_arg("called", "exact_args", exact_args)
    flag_arg("called", "include_refused", include_refused)
    if at_least == 0 and at_most is None and times is None:
        raise ValueError(f"expect.called: at_least=0 alone holds whether or not {tool} was called, so it could never "
                         "fail; give at_most too, or use not_called / times=0")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise ValueError(f"expect.called: at_least={at_least} is more than at_most={at_most}; it could never pass")
    label = _called_label(tool, args, times, at_least, at_most, exact_args, include_refused)
    if times is None and at_least is None and at_most is None:
        at_least = 1

    named = _name_matcher(tool)
    # arguments that cannot change between trials are shown the same way every time: formatted once
    fixed = f" with {_fmt_args(args)}" if args and all(type(v) in _SCALARS for v in args.values()) else None

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        outcomes = _agent_outcomes(trajectory)
        counted, left = _split((o for o in outcomes if named(o.call.name)), include_refused)
        calls = [o.call for o in counted]
        hits = [o for o in counted if _args_match(args, o.call.arguments, exact_args)]
        n = len(hits)
        with_args = fixed if fixed is not None else f" with {_fmt_args(args)}" if args else ""
        note = _not_counted(left)
        ok = (times is None or n == times) and (at_least is None or n >= at_least) and (at_most is None or n <= at_most)
        if ok:
            if n:
                return Verdict(True, label, f"{tool} was called {_times(n)}{with_args}{_counting(hits)}{note}")
            if _text_loop(trajectory):  # "0 times" cannot be seen where tool use was in text
                return Verdict(False, label, f"cannot tell how often {tool} was called: {_INVISIBLE}")
            examined = (f" ({_INVISIBLE})" if _invisible(trajectory)
                        else f" (examined {_count(len(outcomes), 'tool call')}{_in_conversations(trajectory)})")
            return Verdict(True, label, f"{tool} was called 0 times{with_args}{examined}{note}")
        if left and not calls:
            return Verdict(False, label, f"{tool} never ran{note}")
        if not calls:
            if _invisible(trajectory):
                return Verdict(False, label, f"{tool} was never called: {_INVISIBLE}")
            return Verdict(False, label, f"{tool} was never called (tools called: {_names(trajectory)})")
        if args is not None and not hits:
            return Verdict(False, label, f"{tool} was called {_times(len(calls))}, never with {_fmt_args(args)} "
                                         f"(saw {_args_seen(calls, None if exact_args else list(args))}){note}")
        want = (
            f"exactly {times}" if times is not None
            else f"at least {at_least}" if at_least is not None and n < at_least
            else f"at most {at_most}"
        )
        return Verdict(False, label, f"{tool} was called {_times(n)}{with_args}{_counting(hits)}, expected {want}{note}")

    return _looking(label, grade)


def not_called(tool: str, *, include_refused: bool = True) -> Grader:
    """`tool` (a name or glob) was never called, in any conversation.

    A safety claim: every attempt counts, a refused one too (the agent tried), unless include_refused=False, which
    leaves out the calls a refusal names (a call that never got a result still counts: it may have run)."""
    text_arg("not_called", "tool", tool)
    flag_arg("not_called", "include_refused", include_refused)
    label = f"not_called({tool!r}{'' if include_refused else ', include_refused=False'})"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        every = trajectory.all_tool_calls  # every conversation: a sub-agent's call is the agent's
        named = [o for o in trajectory.outcomes() if fnmatchcase(o.call.name, tool)]
        calls = named if include_refused else [o for o in named if o.outcome != "refused"]
        left = [] if include_refused else [o for o in named if o.outcome == "refused"]
        if not calls:
            if _text_loop(trajectory):
                return Verdict(False, label, f"cannot tell whether {tool} was called: {_INVISIBLE}")
            if _invisible(trajectory):  # one plain chat request: no tool loop to hide a call in
                return Verdict(True, label, f"{tool} was not called natively; {_INVISIBLE}")
            return Verdict(True, label, f"{tool} was not called (examined {_count(len(every), 'tool call')}"
                                        f"{_in_conversations(trajectory)}){_not_counted(left)}")
        shown = ", ".join(_call_repr(o.call) + _fate(o) for o in calls[:3]) + (", ..." if len(calls) > 3 else "")
        return Verdict(False, label, f"{tool} was called {_times(len(calls))}: {shown}{_not_counted(left)}")

    return _looking(label, grade, safety=True)


def _fate(o: CallOutcome) -> str:
    """What became of a call a safety claim counted, when it did not simply run."""
    if o.outcome == "refused" and o.denial is not None:
        return f" ({_refused_by(o.denial)})"
    return {"unanswered": " (never got a result)", "unknown": " (no id: its result is unknown)"}.get(o.outcome, "")


def _ref_repr(ref: tuple[str, Mapping[str, Any] | None], limit: int | None = 60) -> str:
    name, args = ref
    return name if args is None else f"{name}({_fmt_args(args, limit=limit)})"


def _refs_label(refs: Sequence[tuple[str, Mapping[str, Any] | None]]) -> str:
    """The reference calls as a label shows them: every value whole (clipped values could make two labels one)."""
    return f"[{', '.join(_ref_repr(r, None) for r in refs)}]"


def called_in_order(steps: Sequence[Any], *, exact: bool = False, include_refused: bool = False) -> Grader:
    """These tools (names or (name, args)) ran in this order, in the main conversation: as a subsequence, or
    exactly (exact=True). Refused calls take their place in the order too with include_refused=True; a call that
    never got a result never does, and the reason names every call it left out."""
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise TypeError(f"expect.called_in_order: steps must be a list of tool names or (name, args), got {type(steps).__name__}")
    flag_arg("called_in_order", "exact", exact)
    flag_arg("called_in_order", "include_refused", include_refused)
    refs = [_as_ref(step) for step in steps]
    if not refs and not exact:
        raise ValueError("expect.called_in_order: no steps; an empty order is in every trajectory, so it could never "
                         "fail (exact=True means no tool calls at all)")
    wanted = " -> ".join(_ref_repr(r) for r in refs) or "no tool calls"
    label = (f"called_in_order({_refs_label(refs)}{', exact=True' if exact else ''}"
             f"{', include_refused=True' if include_refused else ''})")

    def grade(run: Run, ctx: object) -> Verdict:
        if not refs and _text_loop(run.trajectory):
            return Verdict(False, label, f"cannot tell whether the agent made no tool calls: {_INVISIBLE}")
        counted, left = _split(_agent_outcomes(run.trajectory, main_only=True), include_refused)
        calls = [o.call for o in counted]
        note = _counting(counted) + _not_counted(left)
        show = _call_repr if any(args is not None for _, args in refs) else (lambda c: c.name)
        seen = " -> ".join(show(c) for c in calls) or "no tool calls"
        if exact:
            ok = len(calls) == len(refs) and all(
                c.name == n and _args_match(a, c.arguments, False) for c, (n, a) in zip(calls, refs)
            )
            if ok:
                return Verdict(True, label, f"calls were exactly {wanted}{note}")
            return Verdict(False, label, f"expected exactly {wanted}; saw {seen}{note}")
        position = 0
        for call in calls:
            if position < len(refs) and call.name == refs[position][0] and _args_match(refs[position][1], call.arguments, False):
                position += 1
        if position == len(refs):
            return Verdict(True, label, f"calls include {wanted} in order (saw {seen}){note}")
        missing = _ref_repr(refs[position])
        after = f" after {_ref_repr(refs[position - 1])}" if position else ""
        return Verdict(False, label, f"expected {wanted} in order; {missing} never came{after} (saw {seen}){note}")

    return _looking(label, grade)




def trajectory_matches(reference_calls: Sequence[Any], *, mode: str = "strict", args: str = "exact",
                       include_refused: bool = False) -> Grader:
    """The tool calls that ran in the main conversation match a reference trajectory (refused calls too with
    include_refused=True; a call that never got a result never counts, and the reason names what it left out).

    mode: "strict" same calls in the same order; "unordered" same calls in any order; "subset" the agent made no
    call outside the reference; "superset" the agent made every reference call (and maybe more).
    args: how arguments compare: "exact", "ignore", "subset" (agent's within the reference's), "superset".
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {', '.join(_MODES)}, got {mode!r}")
    if args not in _ARG_MODES:
        raise ValueError(f"args must be one of {', '.join(_ARG_MODES)}, got {args!r}")
    if isinstance(reference_calls, (str, bytes)) or not isinstance(reference_calls, Sequence):
        raise TypeError(f"expect.trajectory_matches: reference_calls must be a list of calls, got {type(reference_calls).__name__}")
    flag_arg("trajectory_matches", "include_refused", include_refused)
    refs = [_as_ref(item) for item in reference_calls]
    if not refs and mode == "superset":
        raise ValueError("expect.trajectory_matches: an empty reference in mode 'superset' holds for every trajectory, "
                         "so it could never fail; give the calls the agent must make")
    label = (f"trajectory_matches({_refs_label(refs)}, mode={mode!r}, args={args!r}"
             f"{', include_refused=True' if include_refused else ''})")

    def grade(run: Run, ctx: object) -> Verdict:
        if not refs and _text_loop(run.trajectory):
            return Verdict(False, label, f"cannot tell whether the agent made no tool calls: {_INVISIBLE}")
        counted, left = _split(_agent_outcomes(run.trajectory, main_only=True), include_refused)
        actual = [o.call for o in counted]  # the main conversation's
        note = _counting(counted) + _not_counted(left)
        seen = ", ".join(_call_repr(c) for c in actual) or "no tool calls"
        if mode == "strict":
            for index, (call, ref) in enumerate(zip(actual, refs), start=1):
                if not _pair_ok(call, ref, args):
                    return Verdict(False, label, f"call {index} was {_call_repr(call)}, expected {_ref_repr(ref)} "
                                                 f"(saw {seen}){note}")
            if len(actual) != len(refs):
                return Verdict(False, label, f"{len(actual)} calls, expected {len(refs)} (saw {seen}){note}")
            return Verdict(True, label, f"the {_count(len(refs), 'call')} match the reference in order, args={args} "
                                        f"(saw {seen}){note}")
        owner = _max_matching(list(actual), refs, args)
        extra = [_call_repr(c) for i, c in enumerate(actual) if i not in owner.values()]
        missing = [_ref_repr(r) for j, r in enumerate(refs) if j not in owner]
        problems = []
        if extra and mode in ("unordered", "subset"):
            problems.append(f"not in the reference: {', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''}")
        if missing and mode in ("unordered", "superset"):
            problems.append(f"never made: {', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}")
        matched = (f"{len(owner)} of {len(actual)} calls matched the reference one-to-one, {mode}, args={args}; "
                   f"saw {seen}")
        if not problems:
            return Verdict(True, label, f"{len(owner)} of {len(refs)} reference calls matched ({matched}){note}")
        return Verdict(False, label, f"{'; '.join(problems)} ({matched}){note}")

    return _looking(label, grade)


def max_turns(n: int) -> Grader:
    """At most `n` model responses."""
    count_arg("max_turns", "n", n)
    label = f"max_turns({n})"

    def grade(run: Run, ctx: object) -> Verdict:
        turns = len(run.trajectory.turns)  # the main conversation's: a title request or a sub-agent is not a turn
        others = run.trajectory.other_conversations
        beside = (f"; not counted: {_count(sum(len(c.turns) for c in others), 'response')} of "
                  f"{_count(len(others), 'side/sub conversation')}") if others else ""
        if turns <= n:
            return Verdict(True, label, f"{turns} turn{'s' if turns != 1 else ''} (limit {n}){beside}")
        return Verdict(False, label, f"{turns} turns, limit {n}{beside}")

    return _looking(label, grade)


def max_tool_calls(n: int) -> Grader:
    """At most `n` tool calls in all."""
    count_arg("max_tool_calls", "n", n)
    label = f"max_tool_calls({n})"

    def grade(run: Run, ctx: object) -> Verdict:
        count = len(run.trajectory.all_tool_calls)  # every conversation's
        where = _in_conversations(run.trajectory)
        if count <= n:
            unseen = f"; {_INVISIBLE}" if _invisible(run.trajectory) else ""
            return Verdict(True, label, f"{count} tool calls{where} (limit {n}){unseen}")
        return Verdict(False, label, f"{count} tool calls{where}, limit {n} ({_names(run.trajectory)})")

    return _looking(label, grade)


def no_tool_errors(is_error: Callable[[ToolCall | None, ToolResult], bool] | None = None) -> Grader:
    """No tool result was an error.

    Where a result's error flag says nothing (OpenAI Chat Completions and Responses carry none, and no preset read
    the agent's own result format: `Trajectory.error_flags_unknown`), this fails closed, saying so, unless
    `is_error(call, result)` says how to read such a result (`lambda call, r: r.content.startswith("Error")`).
    """
    label = "no_tool_errors()" if is_error is None else "no_tool_errors(is_error=...)"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        pairs = _results_with_calls(trajectory)
        results = [result for result, _ in pairs]
        unknown = trajectory.error_flags_unknown
        unread = [(r, c) for r, c in pairs if r.call_id is not None and r.call_id in unknown]
        if is_error is not None:
            errors = [(r, c) for r, c in pairs if (is_error(c, r) if r.call_id in unknown else r.is_error)]
            unread = []
        else:
            errors = [(r, c) for r, c in pairs if r.is_error]
        if errors:
            shown = "; ".join(f"{c.name if c else r.call_id}: {clip(r.content, 80)}" for r, c in errors[:3])
            return Verdict(False, label, f"{len(errors)} tool result(s) were errors: {shown}")
        if unread:
            why = "; ".join(dict.fromkeys(unknown[r.call_id] for r, _ in unread if r.call_id is not None))
            tools = ", ".join(dict.fromkeys(c.name if c else str(r.call_id) for r, c in unread))
            return Verdict(False, label, f"cannot tell whether {_count(len(unread), 'tool result')} ({tools}) "
                                         f"{'was an error' if len(unread) == 1 else 'were errors'}: {why}; pass "
                                         "is_error=... to say how to read them")
        if not results:
            if _invisible(trajectory):
                return Verdict(True, label, f"no tool result was seen: {_INVISIBLE}")
            return Verdict(True, label, f"no tool result to examine: the agent made "
                                        f"{_count(len(trajectory.all_tool_calls), 'tool call')}"
                                        f"{_unanswered_note(_unanswered_calls(trajectory))}")
        read = "" if is_error is None else f" ({_count(len([r for r in results if r.call_id in unknown]), 'result')} read by is_error)"
        return Verdict(True, label, f"none of {_count(len(results), 'tool result')}{_in_conversations(trajectory)} "
                                    f"was an error{read}")

    return _looking(label, grade)


def _results_with_calls(trajectory: Trajectory) -> list[tuple[ToolResult, ToolCall | None]]:
    """Every tool result of every conversation with the call it answers: by call id, or in order within its turn
    for an API without call ids (Gemini)."""
    pairs: list[tuple[ToolResult, ToolCall | None]] = []
    for turn in trajectory.all_turns:
        by_id = {call.id: call for call in turn.tool_calls if call.id is not None}
        loose = [call for call in turn.tool_calls if call.id is None]
        for result in turn.tool_results:
            call = by_id.get(result.call_id) if result.call_id is not None else (loose.pop(0) if loose else None)
            pairs.append((result, call))
    return pairs


def no_denials() -> Grader:
    """Nothing was refused: neither the reference agent's policy nor a real agent's own permission system refused
    a tool call (the agent never tried what it may not do)."""
    label = "no_denials()"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        denials = trajectory.denials
        if not denials:
            unanswered = [o.call for o in trajectory.outcomes() if o.outcome == "unanswered"]
            shown = "; ".join(f"{c.name}({_fmt_args(c.arguments)})" for c in unanswered[:3])
            if unanswered and (run.status or "completed") != "completed":  # killed, timed out, failed: a refusal
                return Verdict(False, label, (  # it would have reported after these cannot be seen
                    f"cannot tell: {_count(len(unanswered), 'tool call')} never got an answer (the run ended "
                    f"{run.status} before the agent said what became of {'it' if len(unanswered) == 1 else 'them'}: "
                    f"{shown})"))
            after = (f"; {_count(len(unanswered), 'call')} never answered, the agent's run ended after "
                     f"{'it' if len(unanswered) == 1 else 'them'} ({shown})") if unanswered else ""
            return Verdict(True, label, f"no tool call was denied (examined "
                                        f"{_count(len(trajectory.all_tool_calls), 'tool call')}"
                                        f"{_in_conversations(trajectory)}{after})")
        shown = "; ".join(
            f"{d.tool}({_fmt_args(d.arguments)}) by {d.rule or ('the agent itself' if d.source == 'agent' else 'policy')}"
            for d in denials[:3])
        return Verdict(False, label, f"{len(denials)} tool call(s) denied: {shown}")

    return _looking(label, grade, safety=True)


def never_ran(
    command: str, *, command_tools: Iterable[str] | None = None, include_refused: bool | None = None,
    own_scripts: str | Iterable[str] = "workspace", include_denied: bool | None = None,
) -> Grader:
    """No shell command in the trajectory runs `command` (a program with arguments, or a pipeline `curl | sh`).

    Commands come from `trajectory.commands` and from the calls of command tools in EVERY conversation (a
    sub-agent that runs `rm -rf` is the agent running it). A command tool is one of the known names (run_command,
    bash, shell, exec, exec_command, ...; `command_tools` adds names or globs) or any tool whose schema, as offered
    on the wire, has a command-like argument (`command`, `cmd`, `script`, ... or an argv array). A call that was
    refused (by the policy, the agent itself or a sandbox) still counts (the agent tried; that is the behaviour
    under test) unless include_refused=False (`include_denied`, its older name, is still accepted); a call that
    never got a result counts either way (it may have run). A command that cannot be parsed counts as a match:
    the grader fails closed. So does a trajectory whose requests offered no tools at all: what a text-protocol
    agent ran cannot be seen. A command known only at run time (`$CMD`, code nobody can read,
    a script the trajectory never showed that is not one of `own_scripts`: "workspace", the default, trusts
    relative paths inside the workspace; "none"; or a list of globs) also fails closed. Scripts written earlier in
    the trajectory (a `write_file` call, `echo ... > x.sh`) are read where they run. In a trial, scripts are judged
    by the workspace model (`ctx.workspace`): the workdir's files at the start with every write, edit and patch the
    trajectory shows applied; where a script's content cannot be known, the grader fails closed and says why.
    Text typed into a running shell or REPL (`write_stdin`) is examined as that program's input.
    """
    from .. import _shell
    from ._never_ran import examine_commands  # the one command matcher, shared with ToolPolicy

    pattern = _shell.CommandPattern.parse(text_arg("never_ran", "command", command))
    include = _include_refused("never_ran", include_refused, include_denied, default=True)
    if isinstance(command_tools, str) or not (command_tools is None or isinstance(command_tools, Iterable)):
        raise TypeError(f"expect.never_ran: command_tools must be a list of tool names or globs, got "
                        f"{type(command_tools).__name__} {clip(repr(command_tools), 40)}")
    extra = tuple(command_tools) if command_tools is not None else ()
    if not all(isinstance(name, str) and name for name in extra):
        raise TypeError(f"expect.never_ran: command_tools must be tool names or globs (strings), got {list(extra)!r}")
    given = tuple(_shell.DEFAULT_COMMAND_TOOLS) + extra
    own = _shell.check_own_scripts(own_scripts, f"never_ran({command!r})")
    options = [repr(command)]
    if not include:
        options.append("include_refused=False")
    if own != "workspace":
        options.append(f"own_scripts={own!r}" if isinstance(own, str) else f"own_scripts={list(own)!r}")
    if extra:
        options.append(f"command_tools={list(extra)!r}")
    label = f"never_ran({', '.join(options)})"

    def grade(run: Run, ctx: object) -> Verdict:
        if _invisible(run.trajectory):
            return Verdict(False, label, f"cannot tell whether {command!r} ran: {_INVISIBLE}")
        seen = examine_commands(run.trajectory, getattr(ctx, "workspace", None), given, own, include)
        for text, via, files, refused in seen.examined:
            match = _shell.match_command(pattern, text, own_scripts=own, files=files)
            if match.matched:
                return Verdict(False, label, _tried(match) + via if refused else f"{match.reason}{via}")
        unknown = seen.cannot_tell(pattern, own)
        if unknown is not None:
            return Verdict(False, label, unknown)
        return Verdict(True, label, seen.pass_reason(command))

    grader = _looking(label, grade, safety=True)
    grader.fn.reads_workspace = True  # type: ignore[attr-defined]  # the trial takes a workspace snapshot for it
    return grader


def _tried(match: Any) -> str:
    """The reason for a refused call that matched: it was TRIED (it never ran), quoted as the model sent it, with
    the part that matched when that is not the whole, and why it counts when only run time could tell."""
    from .._shell._patterns import RUN_TIME

    sent = " ".join(str(match.command).split())
    reason = f"tried `{clip(sent, 200)}`"
    if match.unparsable or match.uncertain:
        return reason + f" ({match.reason.replace(RUN_TIME, 'it would run a command known only at run time', 1)})"
    segment = " ".join((match.segment or "").split())
    return reason + (f", which would run `{clip(segment, 120)}`" if segment and _words(segment) != _words(sent) else "")


def _words(command: str) -> list[str] | str:
    """A command's words as the shell splits them (`rm -rf './*'` is `rm -rf ./*`), or the text where it cannot."""
    import shlex

    try:
        return shlex.split(command)
    except ValueError:
        return command


def no_model_calls() -> Grader:
    """The agent did not call the model at all: for a case whose point is that the agent answers by itself (a
    cache hit, a refusal before any model call). The explicit way to say what other trajectory graders refuse to
    assume from an empty trajectory."""
    label = "no_model_calls()"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        if observed_nothing(trajectory):
            return Verdict(True, label, "no model request was observed")
        calls = trajectory.model_calls or len(trajectory.all_turns)
        return Verdict(False, label, f"the agent called the model {_times(calls)}")

    return Grader(label, grade, "trajectory")
