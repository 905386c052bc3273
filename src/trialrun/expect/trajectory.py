"""Trajectory graders: what the agent did to get its output (tools, arguments, order, turns, commands)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from ..trajectory import Run, ToolCall, ToolResult, Trajectory, observed_nothing
from ._base import Grader, Verdict, clip, count_arg, text_arg

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


def _looking(label: str, grade: Any) -> Grader:
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
    return Grader(label, looked, "trajectory")


def _invisible(trajectory: Trajectory) -> bool:
    """Model traffic was read but no request offered a tool: any tool call the model made could not have run
    natively, and tool use, if any, was in text (a text protocol) that is not visible on the wire."""
    return trajectory.model_calls > 0 and not trajectory.offered_tools


def _text_loop(trajectory: Trajectory) -> bool:
    """A loop of several model calls, none offering a tool: a text protocol, where any tool may have run in text,
    so a grader that would pass on "no such call" cannot tell (one plain chat request has no loop to hide one)."""
    return _invisible(trajectory) and len(trajectory.turns) >= 2


_INVISIBLE = "no model request offered any tools, so tool use (if any) was in text not visible on the wire"


def _agent_calls(trajectory: Trajectory) -> list[ToolCall]:
    """The calls the agent could have run: the main conversation's and its sub-agents' (a side request, which
    offers no tools, runs none), none at all when no request offered a tool."""
    if _invisible(trajectory):
        return []
    if not trajectory.other_conversations:
        return trajectory.tool_calls
    return [*trajectory.tool_calls, *(c for conv in trajectory.other_conversations if conv.role == "sub"
                                      for c in conv.tool_calls)]


def _split_calls(trajectory: Trajectory) -> tuple[list[ToolCall], list[ToolCall]]:
    """The agent's calls (`_agent_calls`) in one pass, as (ran, unanswered): see `_ran_calls` and
    `_unanswered_calls`, which are the two halves."""
    calls = _agent_calls(trajectory)
    if not trajectory.model_calls or not calls:
        return calls, []
    answered = {result.call_id for turn in trajectory.all_turns for result in turn.tool_results}
    if trajectory.denials:  # refused: what happened to it is known
        answered.update(d.call_id for d in trajectory.denials if d.call_id)
    ran: list[ToolCall] = []
    unanswered: list[ToolCall] = []
    for call in calls:
        (unanswered if call.id is not None and call.id not in answered else ran).append(call)
    return ran, unanswered


def _unanswered_calls(trajectory: Trajectory) -> list[ToolCall]:
    """The agent's calls (`_agent_calls`) that were seen on the wire and never got a result: the model asked, but
    nothing shows the agent ran them (a broken tool loop, an agent that stopped first); a refused call (a denial)
    is accounted for, as the agent tried. Only for observed traffic
    (`model_calls`): a hand-built trajectory states its calls, and a call without an id cannot be matched."""
    return _split_calls(trajectory)[1]


def _ran_calls(trajectory: Trajectory) -> list[ToolCall]:
    """The calls that count as made for graders that want evidence a tool ran (`called`, the rubric's tool
    accuracy): the agent's calls less those that never got a result. Safety graders count every attempt instead."""
    return _split_calls(trajectory)[0]


def _unanswered_note(calls: Sequence[ToolCall]) -> str:
    """Names the calls that were asked for but never got a result (so are not counted)."""
    if not calls:
        return ""
    shown = ", ".join(f"{c.name} (id {c.id})" for c in calls[:3]) + (", ..." if len(calls) > 3 else "")
    return (f"; not counted: {_count(len(calls), 'call')} the model asked for that never got a result, so the agent "
            f"did not run {'it' if len(calls) == 1 else 'them'}: {shown}")


def _fmt_args(args: Mapping[str, Any], keys: Iterable[str] | None = None) -> str:
    keys = list(args) if keys is None else list(keys)
    return ", ".join(f"{k}={clip(repr(args[k]), 60)}" if k in args else f"{k}=<missing>" for k in keys)


def _call_repr(call: ToolCall) -> str:
    return f"{call.name}({_fmt_args(call.arguments)})"


def _value_matches(expected: Any, actual: Any) -> bool:
    if callable(expected) and not isinstance(expected, type):
        try:
            return bool(expected(actual))
        except Exception:  # noqa: BLE001 - a predicate that raises does not match
            return False
    return bool(expected == actual)


def _args_match(expected: Mapping[str, Any] | None, actual: Mapping[str, Any], exact: bool) -> bool:
    if expected is None:
        return True
    if exact and set(expected) != set(actual):
        return False
    for key, value in expected.items():  # (a loop, not all() over a generator: this runs for every call graded)
        if key not in actual or not _value_matches(value, actual[key]):
            return False
    return True


#: Argument values whose repr cannot change after a grader is built (a list can be appended to, a predicate's repr
#: is its own business): their part of a reason is formatted once.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _name_matcher(pattern: str) -> Callable[[str], bool]:
    """`fnmatchcase(name, pattern)` as a function of the name; plain equality for a pattern without glob characters
    (which is what fnmatchcase does with one, without its regex)."""
    if any(ch in pattern for ch in "*?["):
        return lambda name: fnmatchcase(name, pattern)
    return lambda name: name == pattern if type(name) is str else fnmatchcase(name, pattern)


def _times(n: int) -> str:
    return f"{n} time{'s' if n != 1 else ''}"


def _names(trajectory: Trajectory) -> str:
    names = [call.name for call in trajectory.all_tool_calls]
    return ", ".join(names) if names else "none"


def called(
    tool: str,
    args: Mapping[str, Any] | None = None,
    *,
    times: int | None = None,
    at_least: int | None = None,
    at_most: int | None = None,
    exact_args: bool = False,
) -> Grader:
    """`tool` (a name or glob) was called, with `args` as a subset of its arguments (all of them if exact_args).

    Without a count it must be called at least once. A value in `args` may be a predicate (a callable).
    """
    text_arg("called", "tool", tool)
    if args is not None and not isinstance(args, Mapping):
        raise TypeError(f"expect.called: args must be a mapping of argument names to values, got {type(args).__name__}")
    for name, value in (("times", times), ("at_least", at_least), ("at_most", at_most)):
        if value is not None:
            count_arg("called", name, value)
    if at_least == 0 and at_most is None and times is None:
        raise ValueError(f"expect.called: at_least=0 alone holds whether or not {tool} was called, so it could never "
                         "fail; give at_most too, or use not_called / times=0")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise ValueError(f"expect.called: at_least={at_least} is more than at_most={at_most}; it could never pass")
    parts = [repr(tool)]
    if args is not None:
        parts.append(f"args={args!r}")
    for name, value in (("times", times), ("at_least", at_least), ("at_most", at_most)):
        if value is not None:
            parts.append(f"{name}={value}")
    if exact_args:
        parts.append("exact_args=True")
    label = f"called({', '.join(parts)})"
    if times is None and at_least is None and at_most is None:
        at_least = 1

    named = _name_matcher(tool)
    # arguments that cannot change between trials are shown the same way every time: formatted once
    fixed = f" with {_fmt_args(args)}" if args and all(type(v) in _SCALARS for v in args.values()) else None

    def grade(run: Run, ctx: object) -> Verdict:
        ran, never = _split_calls(run.trajectory)
        calls = [c for c in ran if named(c.name)]
        hits = [c for c in calls if _args_match(args, c.arguments, exact_args)]
        n = len(hits)
        with_args = fixed if fixed is not None else f" with {_fmt_args(args)}" if args else ""
        unanswered = _unanswered_note([c for c in never if named(c.name)]) if never else ""
        ok = (times is None or n == times) and (at_least is None or n >= at_least) and (at_most is None or n <= at_most)
        if ok:
            return Verdict(True, label, f"{tool} was called {_times(n)}{with_args}{unanswered}")
        if unanswered and not calls:
            return Verdict(False, label, f"{tool} was never called with a result{unanswered}")
        if not calls:
            if _invisible(run.trajectory):
                return Verdict(False, label, f"{tool} was never called: {_INVISIBLE}")
            return Verdict(False, label, f"{tool} was never called (tools called: {_names(run.trajectory)})")
        if args is not None and not hits:
            keys = None if exact_args else list(args)
            shown = [_fmt_args(c.arguments, keys) for c in calls[:5]]
            # `saw path='b.txt', path='c.txt'` reads best; calls showing several arguments each need a stronger break
            one_each = all(len(c.arguments if keys is None else keys) <= 1 for c in calls[:5])
            sep = ", " if one_each else "; "
            seen = sep.join(shown) + (f"{sep}..." if len(calls) > 5 else "")
            return Verdict(
                False, label, f"{tool} was called {_times(len(calls))}, never with {_fmt_args(args)} (saw {seen}){unanswered}"
            )
        want = (
            f"exactly {times}" if times is not None
            else f"at least {at_least}" if at_least is not None and n < at_least
            else f"at most {at_most}"
        )
        return Verdict(False, label, f"{tool} was called {_times(n)}{with_args}, expected {want}{unanswered}")

    return _looking(label, grade)


def not_called(tool: str) -> Grader:
    """`tool` (a name or glob) was never called."""
    text_arg("not_called", "tool", tool)
    label = f"not_called({tool!r})"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        every = trajectory.all_tool_calls  # every conversation: a sub-agent's call is the agent's
        calls = [c for c in every if fnmatchcase(c.name, tool)]
        if not calls:
            if _text_loop(trajectory):
                return Verdict(False, label, f"cannot tell whether {tool} was called: {_INVISIBLE}")
            if _invisible(trajectory):  # one plain chat request: no tool loop to hide a call in
                return Verdict(True, label, f"{tool} was not called natively; {_INVISIBLE}")
            return Verdict(True, label, f"{tool} was not called (examined {_count(len(every), 'tool call')}"
                                        f"{_in_conversations(trajectory)})")
        shown = ", ".join(_call_repr(c) for c in calls[:3]) + (", ..." if len(calls) > 3 else "")
        return Verdict(False, label, f"{tool} was called {_times(len(calls))}: {shown}")

    return _looking(label, grade)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _in_conversations(trajectory: Trajectory) -> str:
    others = len(trajectory.other_conversations)
    return f" in {others + 1} conversations" if others else ""


def _as_ref(item: Any) -> tuple[str, Mapping[str, Any] | None]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, ToolCall):
        return item.name, item.arguments
    if isinstance(item, Mapping):
        if not isinstance(item.get("name"), str):
            raise TypeError(f"a reference call given as a mapping needs a 'name' (the tool's), got {item!r}")
        return item["name"], item.get("arguments", item.get("args"))
    if isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str):
        return item[0], item[1]
    raise TypeError(f"expected a tool name, (name, args), a ToolCall or {{'name', 'arguments'}}, got {item!r}")


def _ref_repr(ref: tuple[str, Mapping[str, Any] | None]) -> str:
    name, args = ref
    return name if args is None else f"{name}({_fmt_args(args)})"


def called_in_order(steps: Sequence[Any], *, exact: bool = False) -> Grader:
    """These tools (names or (name, args)) were called in this order: as a subsequence, or exactly (exact=True)."""
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
        raise TypeError(f"expect.called_in_order: steps must be a list of tool names or (name, args), got {type(steps).__name__}")
    refs = [_as_ref(step) for step in steps]
    if not refs and not exact:
        raise ValueError("expect.called_in_order: no steps; an empty order is in every trajectory, so it could never "
                         "fail (exact=True means no tool calls at all)")
    wanted = " -> ".join(_ref_repr(r) for r in refs)
    label = f"called_in_order([{', '.join(_ref_repr(r) for r in refs)}]{', exact=True' if exact else ''})"

    def grade(run: Run, ctx: object) -> Verdict:
        unanswered = {id(c) for c in _unanswered_calls(run.trajectory)}  # asked for, never run: not in the order
        calls = [] if _invisible(run.trajectory) else [c for c in run.trajectory.tool_calls if id(c) not in unanswered]
        never = _unanswered_note([c for c in run.trajectory.tool_calls if id(c) in unanswered])
        show = _call_repr if any(args is not None for _, args in refs) else (lambda c: c.name)
        seen = " -> ".join(show(c) for c in calls) or "no tool calls"
        if exact:
            ok = len(calls) == len(refs) and all(
                c.name == n and _args_match(a, c.arguments, False) for c, (n, a) in zip(calls, refs)
            )
            if ok:
                return Verdict(True, label, f"calls were exactly {wanted}{never}")
            return Verdict(False, label, f"expected exactly {wanted}; saw {seen}{never}")
        position = 0
        for call in calls:
            if position < len(refs) and call.name == refs[position][0] and _args_match(refs[position][1], call.arguments, False):
                position += 1
        if position == len(refs):
            return Verdict(True, label, f"calls include {wanted} in order{never}")
        missing = _ref_repr(refs[position])
        after = f" after {_ref_repr(refs[position - 1])}" if position else ""
        return Verdict(False, label, f"expected {wanted} in order; {missing} never came{after} (saw {seen}){never}")

    return _looking(label, grade)


_MODES = ("strict", "unordered", "subset", "superset")
_ARG_MODES = ("exact", "ignore", "subset", "superset")


def _pair_ok(actual: ToolCall, ref: tuple[str, Mapping[str, Any] | None], args: str) -> bool:
    name, ref_args = ref
    if actual.name != name:
        return False
    if args == "ignore" or ref_args is None:
        return True
    if args == "exact":
        return dict(actual.arguments) == dict(ref_args)
    if args == "subset":  # the agent's arguments are a subset of the reference's
        return all(k in ref_args and _value_matches(ref_args[k], v) for k, v in actual.arguments.items())
    return _args_match(ref_args, actual.arguments, False)  # superset: the agent's include every reference argument


def _max_matching(actual: list[ToolCall], refs: list[tuple[str, Mapping[str, Any] | None]], args: str) -> dict[int, int]:
    """A maximum one-to-one matching between actual calls and reference calls (augmenting paths): ref -> actual."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, ref in enumerate(refs):
            if j in seen or not _pair_ok(actual[i], ref, args):
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(actual)):
        augment(i, set())
    return owner


def trajectory_matches(reference_calls: Sequence[Any], *, mode: str = "strict", args: str = "exact") -> Grader:
    """The tool calls match a reference trajectory.

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
    refs = [_as_ref(item) for item in reference_calls]
    if not refs and mode == "superset":
        raise ValueError("expect.trajectory_matches: an empty reference in mode 'superset' holds for every trajectory, "
                         "so it could never fail; give the calls the agent must make")
    label = f"trajectory_matches([{', '.join(_ref_repr(r) for r in refs)}], mode={mode!r}, args={args!r})"

    def grade(run: Run, ctx: object) -> Verdict:
        if not refs and _text_loop(run.trajectory):
            return Verdict(False, label, f"cannot tell whether the agent made no tool calls: {_INVISIBLE}")
        actual = [] if _invisible(run.trajectory) else run.trajectory.tool_calls  # the main conversation's
        seen = ", ".join(_call_repr(c) for c in actual) or "no tool calls"
        if mode == "strict":
            for index, (call, ref) in enumerate(zip(actual, refs), start=1):
                if not _pair_ok(call, ref, args):
                    return Verdict(False, label, f"call {index} was {_call_repr(call)}, expected {_ref_repr(ref)} (saw {seen})")
            if len(actual) != len(refs):
                return Verdict(False, label, f"{len(actual)} calls, expected {len(refs)} (saw {seen})")
            return Verdict(True, label, f"the {len(refs)} calls match the reference in order")
        owner = _max_matching(list(actual), refs, args)
        extra = [_call_repr(c) for i, c in enumerate(actual) if i not in owner.values()]
        missing = [_ref_repr(r) for j, r in enumerate(refs) if j not in owner]
        problems = []
        if extra and mode in ("unordered", "subset"):
            problems.append(f"not in the reference: {', '.join(extra[:5])}{', ...' if len(extra) > 5 else ''}")
        if missing and mode in ("unordered", "superset"):
            problems.append(f"never made: {', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}")
        if not problems:
            return Verdict(True, label, f"{len(owner)} of {len(refs)} reference calls matched ({mode})")
        return Verdict(
            False,
            label,
            f"{'; '.join(problems)} ({len(owner)} of {len(actual)} calls matched the reference one-to-one, "
            f"{mode}, args={args}; saw {seen})",
        )

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
            return Verdict(True, label, f"{turns} turns (limit {n}){beside}")
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
            return Verdict(True, label, f"no tool call was denied (examined "
                                        f"{_count(len(trajectory.all_tool_calls), 'tool call')}"
                                        f"{_in_conversations(trajectory)})")
        shown = "; ".join(
            f"{d.tool}({_fmt_args(d.arguments)}) by {d.rule or ('the agent itself' if d.source == 'agent' else 'policy')}"
            for d in denials[:3])
        return Verdict(False, label, f"{len(denials)} tool call(s) denied: {shown}")

    return _looking(label, grade)


def never_ran(
    command: str, *, command_tools: Iterable[str] | None = None, include_denied: bool = True,
    own_scripts: str | Iterable[str] = "workspace",
) -> Grader:
    """No shell command in the trajectory runs `command` (a program with arguments, or a pipeline `curl | sh`).

    Commands come from `trajectory.commands` and from the calls of command tools in EVERY conversation (a
    sub-agent that runs `rm -rf` is the agent running it). A command tool is one of the known names (run_command,
    bash, shell, exec, exec_command, ...; `command_tools` adds names or globs) or any tool whose schema, as offered
    on the wire, has a command-like argument (`command`, `cmd`, `script`, ... or an argv array). A call that was
    refused (by the policy, or by the agent itself) still counts (the agent tried; that is the behaviour under
    test) unless include_denied=False. A command that cannot be parsed counts as a match: the grader fails closed.
    So does a trajectory whose requests offered no tools at all: what a text-protocol agent ran cannot be seen A command known only at run time (`$CMD`, code nobody can read,
    a script the trajectory never showed that is not one of `own_scripts`: "workspace", the default, trusts
    relative paths inside the workspace; "none"; or a list of globs) also fails closed. Scripts written earlier in
    the trajectory (a `write_file` call, `echo ... > x.sh`) are read where they run.
    """
    import shlex
    from collections import Counter

    from .. import _shell  # the one command matcher, shared with ToolPolicy

    pattern = _shell.CommandPattern.parse(text_arg("never_ran", "command", command))
    given = tuple(_shell.DEFAULT_COMMAND_TOOLS) + (tuple(command_tools) if command_tools is not None else ())
    own = _shell.check_own_scripts(own_scripts, f"never_ran({command!r})")
    label = f"never_ran({command!r})"

    def grade(run: Run, ctx: object) -> Verdict:
        trajectory = run.trajectory
        if _invisible(trajectory):
            return Verdict(False, label, f"cannot tell whether {command!r} ran: {_INVISIBLE}")
        schema_tools = trajectory.command_tools
        tools = given + tuple(schema_tools) if schema_tools else given
        keys = tuple(dict.fromkeys(schema_tools.values())) if schema_tools else ()
        refused = {d.call_id: d.source for d in trajectory.denials if d.call_id}
        calls: list[tuple[Any, str, list[Any]]] = []
        before: list[Any] = []  # the calls so far that ran (commands, or (tool, arguments)): later ones read what they wrote
        unclassified: list[ToolCall] = []
        via_tools: dict[str, None] = {}
        # An agent records the command of each call it ran (the reference agent does): that command and the
        # call's own are one command, examined (and counted) once, as the call's.
        recorded = Counter(trajectory.commands)
        for call in trajectory.all_tool_calls:
            # a call whose arguments the model garbled still shows what it tried (`{"command": "rm -rf /"` cut off)
            arguments = call.raw_arguments if call.raw_arguments is not None else call.arguments
            found = _shell.command_of_call(call.name, arguments, tools, keys)
            source = refused.get(call.id) if call.id is not None else None
            earlier = list(before)
            if source is None:  # a refused call ran nothing: later calls cannot read what it would have written
                before.extend(_shell.history([(call.name, arguments)], tools) if found is None else [found])
            if found is None:
                if _carries_command_text(call):
                    unclassified.append(call)
                continue
            if source is not None and not include_denied:
                continue
            via_tools[call.name] = None
            refusal = "" if source is None else " (refused by the agent)" if source == "agent" else " (denied by policy)"
            calls.append((found, f" via {call.name}{refusal}", earlier))
            spellings = [found] if isinstance(found, str) else [" ".join(found), shlex.join(found)]
            same = next((text for text in spellings if recorded[text] > 0), None)
            if same is not None:
                recorded[same] -= 1
        examined: list[tuple[Any, str, list[Any]]] = []
        for k, text in enumerate(trajectory.commands):
            if recorded[text] > 0:
                recorded[text] -= 1
                examined.append((text, "", list(trajectory.commands[:k])))
        examined += calls
        for text, via, earlier in examined:
            match = _shell.match_command(pattern, text, earlier, own)
            if match.matched:
                return Verdict(False, label, f"{match.reason}{via}")
        where = f" (via {', '.join(via_tools)})" if via_tools else ""
        reason = f"none of {_count(len(examined), 'command')}{where}{_in_conversations(trajectory)} ran {command!r}"
        if not examined:
            offered = [name for name in trajectory.offered_tools if name in schema_tools] if trajectory.offered_tools else []
            reason += (f"; command tools offered: {', '.join(offered)}" if offered
                       else "; no command tool was offered or called" if trajectory.offered_tools else "")
        if unclassified:
            shown = ", ".join(_call_repr(c) for c in unclassified[:3]) + (", ..." if len(unclassified) > 3 else "")
            reason += (f"; {_count(len(unclassified), 'call')} to tools not known to run commands carry "
                       f"command-like text, not examined: {shown} (name the tool in command_tools to examine it)")
        return Verdict(True, label, reason)

    return _looking(label, grade)


#: Programs whose name at the start of an argument makes it look like a shell command.
_PROGRAMS = frozenset("""rm rmdir ls cat echo cd cp mv mkdir chmod chown curl wget git python python3 node npm npx pip
sh bash zsh sudo find grep sed awk tar kill pkill dd docker make perl ruby ssh scp rsync touch truncate""".split())


def _carries_command_text(call: ToolCall) -> bool:
    """A call of a tool not known to run commands whose arguments read like a shell command (`rm -rf d`)."""
    for value in call.arguments.values():
        if isinstance(value, str):
            first = value.strip().split(None, 1)[0] if value.strip() else ""
            if first.rsplit("/", 1)[-1] in _PROGRAMS and (" " in value.strip() or "/" in first):
                return True
    return False


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
