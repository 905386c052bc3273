"""The machinery of the verdict-truth battery (tests/agents/test_verdict_truth.py): scenarios run on the real
agents through a scripted model, with the TRUTH of each scenario decided outside trialrun, and trialrun's verdicts
compared with it.

The truth comes from three places nobody in trialrun wrote:
- the trial's workdir after the trial (does `sentinel/keep.txt` still exist; did the harmless call make its file);
- the scripted model's OWN log, kept by the script function here: every call it sent (by call id) and every tool
  result it was shown for them (so "the agent answered the call" is known without trialrun's reading of the wire);
- /proc after the trial: the processes carrying the trial's unique marker (in their environment) still alive.

A `Check` pairs one trialrun verdict (a grader's, or a claim trialrun makes about the trial) with the verdict that
is right given the truth. A grader that needs an API trialrun does not have yet (issue 21: `include_refused`, a
scripted call with a namespace) is a MISSING row that says what it needs: the battery fails on it until it exists.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import trialrun as tr
from trialrun.trajectory import ToolCall
from trialrun.wire import ModelRequest

#: The folder the destructive command deletes, and the file whose presence after the trial says it did not.
SENTINEL = "sentinel"
KEEP = "sentinel/keep.txt"
#: What marks a sub-agent's conversation: its first user text (the prompt the main loop gave it) carries this.
SUB_MARK = "BATTERY-SUBTASK"


@dataclass(frozen=True)
class Call:
    """One tool call the script makes; `key` names its role in the scenario ("destructive", "write", ...), so the
    truth can ask whether the model sent it and what it was shown. `{W}` in any string argument is the workdir."""

    name: str
    arguments: Mapping[str, Any]
    key: str = ""
    namespace: str | None = None


@dataclass(frozen=True)
class Final:
    text: str


#: A step: calls made together (one model response), a final answer, or a function of the request and the log.
Step = Union[Sequence[Call], Final, Callable[[ModelRequest, "Log"], Union[Sequence[Call], Final]]]


@dataclass
class Shown:
    """A tool result as the scripted model received it."""

    content: str
    is_error: bool


@dataclass
class Log:
    """What the scripted model itself sent and was shown (kept by the script function; trialrun never touches it)."""

    sent: dict[str, Call] = field(default_factory=dict)  # call id -> call
    ids: dict[str, list[str]] = field(default_factory=dict)  # key -> call ids
    shown: dict[str, Shown] = field(default_factory=dict)  # call id -> the result it was shown
    requests: dict[str, int] = field(default_factory=dict)  # conversation ("main", "sub", "side") -> requests
    problems: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sent_key(self, key: str) -> bool:
        return bool(self.ids.get(key))

    def answered(self, key: str) -> bool:
        return any(i in self.shown for i in self.ids.get(key, []))

    def shown_text(self, key: str) -> str:
        return "\n".join(self.shown[i].content for i in self.ids.get(key, []) if i in self.shown)


def _fill(value: Any, workdir: str) -> Any:
    if isinstance(value, str):
        return value.replace("{W}", workdir)
    if isinstance(value, Mapping):
        return {k: _fill(v, workdir) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, workdir) for v in value]
    return value


def namespaces_supported() -> bool:
    """Whether trialrun's ToolCall can carry a tool namespace (issue 21, class 8: Codex's spawn_agent lives in the
    `multi_agent_v1` namespace, and a scripted call cannot name it on main)."""
    return "namespace" in getattr(ToolCall, "__dataclass_fields__", {})


def script_for(main: Sequence[Step], sub: Sequence[Step], log: Log, workdir: Path, *, anthropic: bool,
               token: str, final: str = "done", by_order: bool = False,
               finish: Call | None = None, ids: bool = True) -> Callable[[ModelRequest], Any]:
    """The scripted model of one trial: a function of the request. A request that offers no tools (a title or
    summary request) gets a title; a sub-agent's conversation (its user text carries SUB_MARK) follows `sub`;
    the main loop follows `main`. Where a conversation is, is read from the call ids of its own history (each id
    names its step), so an agent that re-threads or splits messages cannot shift the script. `by_order`: the wire
    carries no call ids (Gemini), so the step is the number of the history's responses that made calls, and each
    result in the history answers the conversation's calls in the order they were sent. `finish`: the call that
    ends the agent's task instead of a final text (mini-swe-agent's submit command; its result is never sent).
    `ids=False`: the calls go out without ids, as the real Gemini API sends them (with `by_order`)."""
    prefix = ("toolu_" if anthropic else "call_") + f"bt{token}"
    where = str(workdir)

    order: dict[str, list[str]] = {}  # by_order: each conversation's call ids, in the order they were sent

    def script(request: ModelRequest) -> Any:
        with log.lock:
            for message in request.messages:
                for result in message.tool_results:
                    if result.call_id in log.sent:
                        log.shown[result.call_id] = Shown(result.content, result.is_error)
            if not request.tools:
                log.requests["side"] = log.requests.get("side", 0) + 1
                return tr.reply("Trial run")
            # (any user text: Codex's first user message is its environment context, the task comes after it)
            said = " ".join(m.text for m in request.messages if m.role == "user")
            role = "sub" if SUB_MARK in said else "main"
            log.requests[role] = log.requests.get(role, 0) + 1
            steps = sub if role == "sub" else main
            tag = f"{prefix}{role[0]}"
            done = -1
            if by_order:
                results = [r for m in request.messages for r in m.tool_results]
                for call_id, result in zip(order.get(role, []), results):
                    log.shown[call_id] = Shown(result.content, result.is_error)
                done = sum(1 for m in request.messages if m.role == "assistant" and m.tool_calls) - 1
            for message in request.messages:
                for call in message.tool_calls:
                    if call.id and call.id.startswith(tag):
                        done = max(done, int(call.id[len(tag):].split("x", 1)[0]))
            index = done + 1
            if index >= len(steps):
                if finish is not None:
                    return tr.tool_calls(ToolCall(finish.name, dict(finish.arguments), f"{prefix}finish{index}"))
                return tr.reply(final)
            step = steps[index]
            if callable(step):
                step = step(request, log)
            if isinstance(step, Final):
                return tr.reply(step.text)
            calls = []
            for k, spec in enumerate(step):
                call_id = f"{tag}{index}x{k}"
                arguments = _fill(dict(spec.arguments), where)
                made = Call(spec.name, arguments, spec.key, spec.namespace)
                log.sent[call_id] = made
                order.setdefault(role, []).append(call_id)
                log.ids.setdefault(spec.key, []).append(call_id)
                if spec.namespace is not None:
                    if not namespaces_supported():
                        log.problems.append(f"{spec.name}: ToolCall has no namespace field")
                        calls.append(ToolCall(spec.name, arguments, call_id))
                    else:
                        named: dict[str, Any] = {"namespace": spec.namespace}
                        calls.append(ToolCall(spec.name, arguments, call_id, **named))
                else:
                    calls.append(ToolCall(spec.name, arguments, call_id if ids else None))
            return tr.tool_calls(*calls)

    return script


# -- the truth after the trial ----------------------------------------------------------------------------------------


def marked_processes(marker: str) -> list[tuple[int, str]]:
    """The live processes whose environment or command line carries `marker` (read from /proc)."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            stat = Path("/proc", entry, "stat").read_text()
            if stat.rpartition(")")[2].split()[0] == "Z":
                continue
            environ = Path("/proc", entry, "environ").read_bytes()
            cmdline = Path("/proc", entry, "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        if needle in environ or needle in cmdline:
            found.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def kill_marked(pids: Sequence[int]) -> None:
    """End the processes a trial left behind (they are this battery's own, found by its marker), by pid."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


@dataclass
class Truth:
    """What really happened in one trial, decided outside trialrun."""

    kept: bool  # sentinel/keep.txt still there after the trial
    files: dict[str, bool]  # other files the scenario asks about: present after the trial?
    survivors: list[tuple[int, str]]  # marked processes alive after the trial
    log: Log

    @property
    def deleted(self) -> bool:
        return not self.kept

    def sent(self, key: str) -> bool:
        return self.log.sent_key(key)

    def sent_tool(self, name: str) -> bool:
        """Whether the scripted model sent any call of tool `name` (in any conversation)."""
        return any(call.name == name for call in self.log.sent.values())

    def has(self, name: str) -> bool:
        return self.files.get(name, False)


# -- checks: one trialrun verdict, and the verdict the truth makes right ---------------------------------------------


@dataclass
class Check:
    """One verdict to compare with the truth. `build` makes a trialrun grader (it may raise TypeError: an option
    trialrun does not have yet, named in `needs`); `claim` instead reads a claim trialrun makes about the trial
    (e.g. that nothing it started outlives it). `read` turns the grader's verdict into pass/fail (the rubric's
    tool accuracy reads a sub-score). `right` is the verdict the truth makes right."""

    label: str
    right: Callable[[Truth], bool]
    build: Callable[[], Any] | None = None
    claim: Callable[[Any], bool] | None = None
    read: Callable[[Any], bool] | None = None
    needs: str = ""
    meaning: str = ""  # checks that mean the same (an option and its older name) may share a grader label


def tool_accuracy_full(verdict: Any) -> bool:
    """The rubric's tool accuracy claims the expected tool was used: full marks is a pass."""
    return bool(verdict.details and verdict.details["sub_scores"]["tool_accuracy"] >= 1.0)


@dataclass
class Scenario:
    """One scenario on one preset: its configuration, its script, its files, its checks, and how to tell it did
    what it is meant to (`exercised` returns why not, or None)."""

    preset: str
    name: str
    main: Sequence[Step]
    checks: Sequence[Check]
    exercised: Callable[[Truth], str | None]
    options: Mapping[str, Any] = field(default_factory=dict)
    sub: Sequence[Step] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    watch: Sequence[str] = ()  # files whose presence after the trial the truth records
    needs: str = ""  # an API the scenario needs, which trialrun may not have yet
    available: Callable[[], bool] = lambda: True  # whether it has it (when not, the trial still runs, as evidence)
    timeout_s: float | None = None
    ids: bool = True  # the scripted calls carry ids (False: none, as the real Gemini API sends them)
    marker: str = field(default_factory=lambda: f"trialrun-battery-{uuid.uuid4().hex[:12]}")

    @property
    def case_name(self) -> str:
        return f"{self.preset}:{self.name}"


# -- comparing -------------------------------------------------------------------------------------------------------

RIGHT, FALSE_PASS, FALSE_FAIL, MISSING, UNEXERCISED = "ok", "FALSE PASS", "FALSE FAIL", "MISSING API", "NOT EXERCISED"


@dataclass
class Row:
    preset: str
    scenario: str
    check: str
    verdict: bool | None
    right: bool | None
    outcome: str
    reason: str = ""
    need: str = ""  # for a MISSING row: the API it needs


def compare(scenario: Scenario, graders: list[tuple[Check, Any | None, str]], trial: Any, truth: Truth) -> list[Row]:
    """Each check of one trial as a Row: trialrun's verdict beside the right one. `graders` holds, per check, the
    grader built for it (None when it could not be) and the error that stopped it; verdicts are matched to graders
    by position (labels can collide: issue 21, class 9)."""
    rows: list[Row] = []
    why_not = scenario.exercised(truth)
    verdicts = list(trial.verdicts)
    built = [g for _, g, _ in graders if g is not None]
    if not built:  # only claims: the case carries one placeholder grader (a case must grade something)
        verdicts = []
    if len(verdicts) != len(built):
        why_not = (why_not or "") + f"; {len(verdicts)} verdicts for {len(built)} graders"
    position = 0
    for check, grader, problem in graders:
        right = check.right(truth)
        if grader is None and check.claim is None:
            rows.append(Row(scenario.preset, scenario.name, check.label, None, right, MISSING, problem, check.needs))
            continue
        if check.claim is not None:
            try:
                verdict, reason = check.claim(trial), "trialrun's claim about the trial"
            except AttributeError as exc:  # what the claim reads is not on the trial yet
                rows.append(Row(scenario.preset, scenario.name, check.label, None, right, MISSING, str(exc),
                                check.needs))
                continue
        else:
            v = verdicts[position] if position < len(verdicts) else None
            position += 1
            if v is None:
                rows.append(Row(scenario.preset, scenario.name, check.label, None, right, UNEXERCISED, "no verdict"))
                continue
            verdict = check.read(v) if check.read is not None else bool(v.passed)
            reason = v.reason
        need = ""
        if scenario.needs and not scenario.available():
            outcome, reason, need = MISSING, why_not or reason, scenario.needs
        elif why_not:
            outcome = UNEXERCISED
            reason = f"{why_not} | {reason}"
        elif verdict == right:
            outcome = RIGHT
        else:
            outcome = FALSE_PASS if verdict else FALSE_FAIL
        rows.append(Row(scenario.preset, scenario.name, check.label, verdict, right, outcome, reason, need))
    return rows


def label_collisions(scenario: Scenario, graders: list[tuple[Check, Any | None, str]]) -> list[str]:
    """Labels shared by graders of one case that differ in meaning (issue 21, class 9): results can then only be
    matched by position."""
    seen: dict[str, tuple[str, str]] = {}
    clashes = []
    for check, grader, _ in graders:
        if grader is None:
            continue
        label = grader.name if hasattr(grader, "name") else str(grader)
        meaning = check.meaning or check.label
        if label in seen and seen[label][1] != meaning:
            clashes.append(f"{scenario.case_name}: {seen[label][0]!r} and {check.label!r} are both labelled {label!r}")
        seen.setdefault(label, (check.label, meaning))
    return clashes


def _mark(value: bool | None) -> str:
    return "-" if value is None else "P" if value else "F"


def matrix(rows: Sequence[Row], extra: Sequence[str] = ()) -> str:
    """The battery's result as text: every row that is not right (with trialrun's reason), then per preset and
    scenario the counts, then the totals."""
    lines = ["verdict-truth battery: trialrun's verdict (P/F) against the truth (P/F)", ""]
    bad = [r for r in rows if r.outcome not in (RIGHT, MISSING)]
    missing = [r for r in rows if r.outcome == MISSING]
    if missing:
        lines.append("Missing API (the check cannot be made until trialrun has it):")
        for need in dict.fromkeys(r.need for r in missing):
            hit = [r for r in missing if r.need == need]
            lines.append(f"  {len(hit):3} x needs {need} ({', '.join(sorted({r.check for r in hit}))}; e.g. "
                         f"{hit[0].preset}:{hit[0].scenario}: {hit[0].reason[:160]}; in "
                         f"{len({(r.preset, r.scenario) for r in hit})} scenarios)")
        lines.append("")
    if bad:
        lines.append("Not right:")
        for r in bad:
            lines.append(f"  {r.outcome:13} {r.preset}:{r.scenario} {r.check}: verdict {_mark(r.verdict)}, right "
                         f"{_mark(r.right)} -- {r.reason[:300]}")
        lines.append("")
    header = (f"{'preset:scenario':44} {'verdicts':>8} {'right':>6} {'f.pass':>6} {'f.fail':>6} {'missing':>7} "
              f"{'unexer.':>7}")
    lines.append(header)
    keys = list(dict.fromkeys((r.preset, r.scenario) for r in rows))

    def counts(selected: Sequence[Row]) -> str:
        judged = [r for r in selected if r.outcome in (RIGHT, FALSE_PASS, FALSE_FAIL)]
        outcomes = (RIGHT, FALSE_PASS, FALSE_FAIL, MISSING, UNEXERCISED)
        n = {o: sum(1 for r in selected if r.outcome == o) for o in outcomes}
        return (f"{len(judged):>8} {n[RIGHT]:>6} {n[FALSE_PASS]:>6} {n[FALSE_FAIL]:>6} {n[MISSING]:>7} "
                f"{n[UNEXERCISED]:>7}")

    for preset in dict.fromkeys(k[0] for k in keys):
        for key in [k for k in keys if k[0] == preset]:
            selected = [r for r in rows if (r.preset, r.scenario) == key]
            marks = " ".join(f"{r.check}={_mark(r.verdict)}{'' if r.outcome == RIGHT else '!'}" for r in selected)
            lines.append(f"{key[0] + ':' + key[1]:44} {counts(selected)}   {marks}")
        lines.append(f"{'  = ' + preset:44} {counts([r for r in rows if r.preset == preset])}")
    lines.append(f"{'TOTAL':44} {counts(rows)}")
    if extra:
        lines.append("")
        lines.extend(extra)
    return "\n".join(lines)
