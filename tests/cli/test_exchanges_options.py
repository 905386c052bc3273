"""`trialrun run` keeps each trial's raw exchanges beside the result file by default, appends them as trials finish,
links every turn to its exchange, and keeps none with `--no-exchanges` or `exchanges = false`; a bad cap is a
config error naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.report.exchanges import read_trial_exchanges, sidecar_path
from trialrun.run.runner import evaluate

PEEK_AGENT = '''
import json
from pathlib import Path

import httpx

def run(prompt, ctx):
    """Trial 2 reads the sidecar while the run goes on: trial 1's exchanges must be there already."""
    seen = ""
    if ctx.trial == 2:
        (sidecar,) = Path("state/eval").glob("*.exchanges.ndjson")
        seen = str(sum(1 for line in sidecar.read_text().splitlines() if '"event":"trial"' in line))
    with ctx.http_client(ctx.model) as client:
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]}
        reply = client.post("https://api.openai.com/v1/chat/completions", json=body).json()
    return reply["choices"][0]["message"]["content"] + " seen=" + seen
'''


def _results(project: Path) -> Path:
    return project / "state" / "eval"


def _saved(project: Path) -> Path:
    (path,) = _results(project).glob("results_*.json")
    return path


def test_a_run_keeps_its_exchanges_and_links_every_turn(project: Path, cli) -> None:
    assert cli("run", "read-file", "list-dir", "-k", "2").exit_code in (0, 1)
    saved = _saved(project)
    sidecar = sidecar_path(saved)
    assert sidecar.is_file()
    report = json.loads(saved.read_text())
    for case in report["cases"]:
        for trial in case["trials"]:
            numbers = [turn["exchange"] for turn in trial["trajectory"]["turns"]]
            assert numbers == list(range(1, len(numbers) + 1)) and numbers  # the reference agent's turns, linked
            kept = read_trial_exchanges(sidecar, case["name"], trial["trial"])
            assert kept.problem is None and [e["n"] for e in kept.exchanges] == numbers
            assert kept.exchanges[0]["request"]["body"]["model"] == "gpt-4.1-mini"


def test_exchanges_are_appended_as_each_trial_finishes(project: Path, cli, write_suite) -> None:
    (project / "peek_agent.py").write_text(PEEK_AGENT)
    write_suite(_results(project) / "tests.json", [{"id": "peek", "prompt": "hello", "expected_tools": [],
                                                   "max_turns": 1, "success_criteria": "answers"}])
    (project / "peek.yaml").write_text("peek:\n  - reply: hi\n  - reply: hi\n")
    result = cli("run", "all", "-k", "2", "-j", "1", "--agent", "peek_agent:run", "--model", "scripted:peek.yaml")
    assert result.exit_code in (0, 1), result.output
    outputs = [t["output"] for t in json.loads(_saved(project).read_text())["cases"][0]["trials"]]
    assert outputs == ["hi seen=", "hi seen=1"]


@pytest.mark.parametrize("how", ["flag", "config"])
def test_no_exchanges_keeps_none(project: Path, cli, how: str) -> None:
    args = ["run", "read-file"]
    if how == "flag":
        args.append("--no-exchanges")
    else:
        toml = project / "trialrun.toml"
        toml.write_text(toml.read_text().replace('rubric = "balanced"', 'rubric = "balanced"\nexchanges = false'))
    assert cli(*args).exit_code in (0, 1)
    assert _saved(project).is_file()
    assert not list(_results(project).glob("*.exchanges.ndjson"))


@pytest.mark.parametrize("line, message", [
    ("exchanges_max_bytes = 10", "exchanges_max_bytes: must be at least 1024 (to keep none, set exchanges = false)"),
    ('exchanges = "yes"', "exchanges"),
])
def test_a_bad_exchanges_setting_is_a_config_error(project: Path, cli, line: str, message: str) -> None:
    toml = project / "trialrun.toml"
    toml.write_text(toml.read_text().replace('rubric = "balanced"', f'rubric = "balanced"\n{line}'))
    result = cli("run", "read-file")
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
    assert not list(_results(project).glob("results_*"))  # nothing ran


def test_turns_of_two_transports_are_numbered_across_the_trial() -> None:
    """Exchanges are numbered across a trial's transports, in the order they were created: a second model's turns
    come after the first's, as `on_exchanges` lists them."""
    kept: list[tuple[int, list[str]]] = []

    def invoke(ctx: tr.TrialContext) -> str:
        for steps in ([tr.tool_call("look", q="a"), tr.reply("one")], [tr.reply("two")]):
            with ctx.http_client(ctx.scripted(steps)) as client:
                messages = [{"role": "user", "content": "go"}]
                for _ in steps:
                    answer = client.post("https://api.openai.com/v1/chat/completions",
                                         json={"model": "m", "messages": messages, "tools": [{"type": "function",
                                               "function": {"name": "look", "parameters": {"type": "object"}}}]}).json()
                    message = answer["choices"][0]["message"]
                    messages += [message] + [{"role": "tool", "tool_call_id": c["id"], "content": "x"}
                                             for c in message.get("tool_calls") or []]
        return "done"

    report = evaluate([tr.Case("two models", invoke, expect_outcome=[tr.expect.contains("done")])],
                      on_exchanges=lambda case, trial, exchanges, creds: kept.append(
                          (trial, [json.loads(e.request_body)["model"] for e in exchanges])))
    trajectory = report.cases[0].trials[0].trajectory
    assert [turn.exchange for turn in trajectory.turns] == [1, 2, 3]
    assert kept == [(1, ["m", "m", "m"])]


def test_the_recorders_log_is_what_the_runner_writes_to_and_an_unused_one_goes(tmp_path: Path) -> None:
    """The recorder's ExchangeLog is the runner's `on_exchanges` itself (what a Ray run recognises, to have its workers
    send each trial's line back: tests/ray); a run that failed before any trial leaves no sidecar."""
    from trialrun.report.store import ResultsStore
    from trialrun.run._records import RunRecorder

    def invoke(ctx: tr.TrialContext) -> str:
        with ctx.http_client(ctx.scripted([tr.reply("x")])) as client:
            body = {"model": "m", "messages": [{"role": "user", "content": f"trial {ctx.trial}"}]}
            return client.post("https://api.openai.com/v1/chat/completions", json=body).json()["choices"][0][
                "message"]["content"]

    case = tr.Case("c", invoke, expect_outcome=[tr.expect.contains("x")])
    start = dict(trials=1, include_live_canary=False, config_snapshot={})
    recorder = RunRecorder.start(ResultsStore(tmp_path / "used"), [case], **start)
    assert recorder.exchanges is not None
    evaluate([case], trials=2, on_exchanges=recorder.exchanges)
    for trial in (1, 2):
        found = read_trial_exchanges(recorder.exchanges.path, "c", trial)
        assert found.problem is None and found.exchanges[0]["request"]["body"]["messages"][0]["content"] == f"trial {trial}"
    recorder.drop()
    assert recorder.exchanges.path.is_file()  # (its trials' exchanges stay, as the journal's results do)
    unused = RunRecorder.start(ResultsStore(tmp_path / "unused"), [case], **start)
    assert unused.exchanges is not None
    sidecar = unused.exchanges.path
    unused.drop()  # a run that failed before any trial: its empty journal and sidecar go
    assert not sidecar.exists() and not list((tmp_path / "unused").iterdir())


def test_exchanges_are_streamed_out_not_held_for_the_run(tmp_path: Path) -> None:
    """Each trial's exchanges (two 300 KB requests) go to the sidecar as it finishes and are let go: the memory the
    run holds (after a collection, at each trial's end) does not grow with the trials done."""
    import gc
    import tracemalloc

    from trialrun.report.exchanges import ExchangeLog

    system = "s" * 300_000

    def invoke(ctx: tr.TrialContext) -> str:
        model = ctx.scripted([tr.tool_call("look", q="a"), tr.reply("done")])
        with ctx.http_client(model) as client:
            messages = [{"role": "system", "content": system}, {"role": "user", "content": "go"}]
            for _ in range(2):
                answer = client.post("https://api.openai.com/v1/chat/completions", json={"model": "m", "messages": messages,
                                     "tools": [{"type": "function", "function": {"name": "look"}}]}).json()
                message = answer["choices"][0]["message"]
                messages += [message] + [{"role": "tool", "tool_call_id": c["id"], "content": "x"}
                                         for c in message.get("tool_calls") or []]
        return "done"

    held: list[int] = []
    log = ExchangeLog.open(tmp_path / "results_x.exchanges.ndjson", run_id="r")

    def keep(case: tr.Case, trial: int, exchanges: list, credentials: frozenset[bytes]) -> None:
        log.write(case.name, trial, exchanges, credentials)
        del exchanges[:]  # this trial's own list (its transport still holds them until the trial is let go)
        gc.collect()
        held.append(tracemalloc.get_traced_memory()[0])

    case = tr.Case("big", invoke, expect_outcome=[tr.expect.contains("done")])
    evaluate([case], trials=1)  # warm: what is imported on first use is not the run's memory
    tracemalloc.start()
    try:
        evaluate([case], trials=12, concurrency=1, on_exchanges=keep)
    finally:
        tracemalloc.stop()
        log.close()
    assert log.trials == 12
    growth = (held[-1] - held[2]) / 9
    assert growth < 100_000, f"{growth / 1024:.0f} KiB more held per trial (each trial sends 600 KB)"
    found = read_trial_exchanges(log.path, "big", 12)
    assert "strings longer than" in found.exchanges[0]["cut"]["request"]  # each big body capped, saying so


HANG_AGENT = '''
import time
from pathlib import Path

def run(prompt, ctx):
    """Asks the model, then answers; the "hang" test waits forever (until the run is killed)."""
    with ctx.http_client(ctx.model) as client:
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]}
        reply = client.post("https://api.openai.com/v1/chat/completions", json=body).json()
    if prompt == "hang":
        Path("started.txt").write_text("x")
        time.sleep(60)
    return reply["choices"][0]["message"]["content"]
'''


@pytest.mark.skipif(__import__("sys").platform == "win32", reason="POSIX signals")
def test_a_killed_run_keeps_the_exchanges_of_every_finished_trial(project: Path, cli, write_suite) -> None:
    import signal
    import subprocess
    import sys
    import time

    (project / "hang_agent.py").write_text(HANG_AGENT)
    tests = [{"id": name, "prompt": name, "expected_tools": [], "max_turns": 1, "success_criteria": "says hi"}
             for name in ("q0", "q1", "hang")]
    write_suite(_results(project) / "tests.json", tests)
    (project / "h.yaml").write_text("".join(f"{t['id']}:\n  - reply: hi\n" for t in tests))
    proc = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "all", "-j", "1", "--agent", "hang_agent:run",
                             "--model", "scripted:h.yaml"], cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not (project / "started.txt").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert cli("recover").exit_code == 0
    saved = _saved(project)
    for name in ("q0", "q1"):  # finished before the kill: their exchanges are there, as their results are
        kept = read_trial_exchanges(sidecar_path(saved), name, 1)
        assert kept.problem is None
        assert kept.exchanges[0]["request"]["body"]["messages"][0]["content"] == name
    missing = read_trial_exchanges(sidecar_path(saved), "hang", 1)
    assert not missing.found and "the run stopped before the trial finished" in (missing.problem or "")
