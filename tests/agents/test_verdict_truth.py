"""The verdict-truth battery (issue 21, "Done when"): on every preset (pi, Codex, Claude Code, opencode; the real
agents, driven by a scripted model; each preset's scenarios made from its declared contract: test_battery_plan.py), scenarios whose right verdict is decided OUTSIDE trialrun -- the workdir's
files after the trial, the scripted model's own log of what it sent and was shown, /proc -- compared with
trialrun's verdicts: a destructive command run, refused by each of the agent's permission mechanisms, disguised,
written into a script by each write/edit/patch path and then run, typed into a session, run by a sub-agent,
alongside other calls in one step; a tool error; a timeout with descendants in new sessions; a background process
left behind; a command that ran and printed refusal-like text; side requests kept on; and negative controls
(look-alike commands, harmless edits) on which a grader that fails on looks is a false fail.

Every trial of every agent runs in ONE evaluate, concurrently, and ONE test compares them (so xdist never runs the
battery twice). It prints the matrix (verdicts, right, false passes, false fails per preset and scenario) and
asserts 0 false passes, 0 false fails, no grader option missing, no scenario that did not do what it is meant to,
no colliding labels. `TRIALRUN_BATTERY_MATRIX=path` also writes the matrix to `path` and every row, with
trialrun's reason, to `path.json`; `TRIALRUN_BATTERY_ONLY=pi:,refused` runs only the scenarios whose
"preset:scenario" name contains one of the parts (for working on one class). In the gate scope
(tests/_agent_scope.py: `TRIALRUN_BATTERY=gate`, or unset when nothing the battery judges changed since the merge
base) it runs one scenario per preset (its destructive command, run: `GATE_SCENARIO`); in the full scope
(`TRIALRUN_BATTERY=full`, `.ci/run --full`, any change to agents/, _contain/, _shell/, wire/ or the pins), every
scenario.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import _agent_scope
from _battery import (
    KEEP,
    MISSING,
    SENTINEL,
    Call,
    Check,
    Log,
    Row,
    Scenario,
    Truth,
    compare,
    kill_marked,
    label_collisions,
    marked_processes,
    matrix,
    script_for,
)
from _battery_scenarios import all_scenarios

import trialrun as tr

#: How long each agent may run in the timeout scenario before trialrun kills it: long enough for the agent to start
#: and run the command while the battery's other trials load the machine (opencode starts slowly; others: 60 s).
TIMEOUT_S = {"opencode": 120.0, "kilo-code": 120.0, "qwen-code": 90.0, "continue-cli": 90.0, "copilot-cli": 90.0}
#: How long any other trial may run (Kilo's CLI: 24 s for a call alone, 50-70 s under load, and past 150 s when ten
#: of its trials ran at once beside the others: killed before it answered, its trials could not be judged).
RUN_TIMEOUT_S = {"kilo-code": 360.0}
#: Trials at once: the four timeout trials spend most of their time waiting for their kill.
CONCURRENCY = 10
#: The one scenario per preset of `TRIALRUN_BATTERY=gate`: the destructive command, run by the agent's own shell
#: tool (never_ran must fail it, and the workdir shows it ran).
GATE_SCENARIO = "ran"


def _scope(scenarios: list[Scenario]) -> list[Scenario]:
    """The scenarios the scope asks for (tests/_agent_scope.py: `full` or `gate`); every preset has one in the gate."""
    if not _agent_scope.is_gate():
        return scenarios
    gate = [s for s in scenarios if s.name == GATE_SCENARIO]
    assert sorted(s.preset for s in gate) == sorted({s.preset for s in scenarios}), "a preset with no gate scenario"
    return gate


def _agent(scenario: Scenario, agent_path: Any) -> tuple[Any, str]:
    """The scenario's preset, or why it cannot be made (an option trialrun does not have yet: TypeError)."""
    options = dict(scenario.options)
    options["timeout_s"] = scenario.timeout_s if scenario.timeout_s is not None else RUN_TIMEOUT_S.get(scenario.preset,
                                                                                                       150.0)
    try:
        return tr.agents.preset(scenario.preset, path=agent_path(scenario.preset), **options), ""
    except TypeError as exc:
        return None, str(exc)


def _finish(preset: str) -> Call | None:
    """The call that ends the agent's task where its contract says a final text does not (mini-swe-agent)."""
    command = tr.agents.CONTRACTS[preset].finish
    if command is None:
        return None
    tool = tr.agents.CONTRACTS[preset].shell_tool
    return Call(tool.name, tool.call(command), "finish")


def _case(scenario: Scenario, agent: Any, graders: list[tuple[Check, Any, str]],
          store: dict[str, tuple[Truth, Log]]) -> tr.Case:
    log = Log()
    token = uuid.uuid4().hex[:6]

    def setup(ctx: tr.TrialContext) -> None:
        (ctx.workdir / SENTINEL).mkdir()
        (ctx.workdir / KEEP).write_text("precious\n")
        for name, text in scenario.files.items():
            (ctx.workdir / name).write_text(text)

    def invoke(ctx: tr.TrialContext) -> Any:
        model = ctx.scripted(script_for(scenario.main, scenario.sub, log, ctx.workdir,
                                        anthropic=agent.api == "anthropic", token=token,
                                        by_order=agent.api == "gemini", finish=_finish(scenario.preset),
                                        ids=scenario.ids))
        return agent("Do the task in this folder.", ctx, model=model)

    def teardown(ctx: tr.TrialContext) -> None:
        time.sleep(0.2)  # a process that outlives the trial has had its chance to be killed
        alive = marked_processes(scenario.marker)
        store[scenario.case_name] = (Truth((ctx.workdir / KEEP).is_file(),
                                           {name: (ctx.workdir / name).exists() for name in scenario.watch},
                                           alive, log), log)
        kill_marked([pid for pid, _ in alive])

    built = [g for _, g, _ in graders if g is not None]
    return tr.Case(name=scenario.case_name, setup=setup, invoke=invoke, teardown=teardown,
                   expect_trajectory=built or [tr.expect.max_turns(1000)])


def _graders(scenario: Scenario) -> list[tuple[Check, Any, str]]:
    built: list[tuple[Check, Any, str]] = []
    for check in scenario.checks:
        if check.build is None:
            built.append((check, None, ""))
            continue
        try:
            built.append((check, check.build(), ""))
        except TypeError as exc:  # an option trialrun does not have yet
            built.append((check, None, str(exc)))
    return built


def _rerun_unexercised(report: tr.RunReport, planned: dict[str, tuple[Scenario, list[tuple[Check, Any, str]]]],
                       store: dict[str, tuple[Truth, Log]], agent_path: Any, extra: list[str]) -> list[Any]:
    """The battery's cases, each scenario that did not do what it is meant to run once more, alone.

    A real agent under the battery's load sometimes loses its own tool's output (Qwen Code showed its model
    "Output: (empty)" for `sh clean.sh`, the failure QwenLM/qwen-code#3520 reports): the truth of such a scenario
    was never established, which says nothing about trialrun's verdicts. Only NOT EXERCISED scenarios run again, a
    false pass or fail never does, and every rerun is named in the matrix with why the first run did not count.
    """
    again: dict[str, str] = {}
    for case in report.cases:
        scenario, _ = planned[case.name]
        if case.name not in store:
            continue
        why_not = scenario.exercised(store[case.name][0])
        if why_not:
            again[case.name] = why_not
    if not again:
        return list(report.cases)
    cases = []
    for name in again:
        scenario, graders = planned[name]
        agent, _ = _agent(scenario, agent_path)
        cases.append(_case(scenario, agent, graders, store))
    second = {case.name: case for case in tr.evaluate(cases, concurrency=2).cases}
    for name, why_not in again.items():
        extra.append(f"{name}: run again (the first run was not exercised: {why_not[:200]})")
    return [second.get(case.name, case) for case in report.cases]


def test_verdict_truth_battery(agent_path: Any) -> None:
    started = time.monotonic()
    scenarios = _scope(all_scenarios(TIMEOUT_S))
    only = os.environ.get("TRIALRUN_BATTERY_ONLY")  # a comma-separated filter on "preset:scenario", for working on it
    if only:
        scenarios = [s for s in scenarios if any(part in s.case_name for part in only.split(","))]
    store: dict[str, tuple[Truth, Log]] = {}
    planned = {s.case_name: (s, _graders(s)) for s in scenarios}
    rows: list[Row] = []
    extra: list[str] = []
    cases = []
    for scenario, graders in planned.values():
        agent, problem = _agent(scenario, agent_path)
        if agent is None:  # the preset option it needs is not there: every check of it is missing
            rows += [Row(scenario.preset, scenario.name, c.label, None, None, MISSING, problem, scenario.needs)
                     for c in scenario.checks]
            continue
        cases.append(_case(scenario, agent, graders, store))
    report = tr.evaluate(cases, concurrency=CONCURRENCY)
    wall = time.monotonic() - started
    finished = _rerun_unexercised(report, planned, store, agent_path, extra)

    for case in finished:
        scenario, graders = planned[case.name]
        trial = case.trials[0]
        if case.name not in store:
            extra.append(f"{case.name}: no truth recorded (teardown never ran): {trial.error}")
            continue
        truth, log = store[case.name]
        rows += compare(scenario, graders, trial, truth)
        extra += label_collisions(scenario, graders)
        if truth.survivors:
            extra.append(f"{case.name}: alive after the trial (killed by the battery): "
                         + "; ".join(f"{pid} {cmd[:80]}" for pid, cmd in truth.survivors))
        shown = log.shown_text("destructive") or log.shown_text("read") or log.shown_text("spawn")
        if shown and ("refused" in scenario.name or "error" in scenario.name or "subagent" in scenario.name
                      or "parallel" in scenario.name):
            extra.append(f"{case.name}: the model was shown: {shown[:400]!r}")
        if trial.error is not None:
            extra.append(f"{case.name}: trial error {trial.error.type}: {trial.error.message[:300]!r}")
        if log.problems:
            extra.append(f"{case.name}: script problems: {'; '.join(log.problems)}")
    clashes = [line for line in extra if "are both labelled" in line]
    extra = [line for line in extra if "are both labelled" not in line]
    if clashes:
        extra.append(f"labels that collide (issue 21 class 9) in {len(clashes)} cases, e.g. {clashes[0]}")
    slow = sorted(((c.trials[0].duration_s, c.name) for c in report.cases), reverse=True)[:6]
    extra.append(f"{len(cases)} trials in one evaluate (concurrency {CONCURRENCY}): {wall:.1f} s wall; slowest: "
                 + ", ".join(f"{name} {seconds:.0f} s" for seconds, name in slow))
    text = matrix(rows, extra)
    print(text)
    target = os.environ.get("TRIALRUN_BATTERY_MATRIX")
    if target:  # the matrix, and every row with trialrun's reason beside it
        Path(target).write_text(text + "\n")
        Path(target + ".json").write_text(json.dumps([dataclasses.asdict(r) for r in rows], indent=1) + "\n")
    wrong = [r for r in rows if r.outcome != "ok"]
    assert not wrong and not clashes, text
