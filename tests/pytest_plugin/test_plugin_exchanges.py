"""The pytest plugin keeps each trial's raw exchanges beside the result file it saves, as `trialrun run` does: real
pytest sessions (pytester) of cases over trialrun's reference agent and over the official openai SDK (both against a
ScriptedModel) write `results_<stamp>.exchanges.ndjson`, scrubbed (a planted key never reaches it), each turn
naming its exchange; the off switches are honoured; a session that saves no result file (or is killed) leaves no
exchanges; pytest-xdist workers each keep their own trials; and `trialrun view` shows them for a pytest-made run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import textwrap
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import starlette  # noqa: F401  # in the test extra (as the view extra): these tests run in CI, never skip

from trialrun.report.exchanges import read_trial_exchanges, sidecar_path
from trialrun.report.results import RunReport
from trialrun.report.store import load_report

# Not in a conftest: pytest refuses `pytest_plugins` in a conftest below the rootdir when the whole suite runs.
pytest_plugins = ["pytester"]

CASES = '''
import openai
import trialrun as tr
from trialrun import expect

KEY = {key!r}


def _workspace(ctx):
    (ctx.workdir / "notes.txt").write_text("Buy milk.\\n")


@tr.case(name="reads the notes", setup=_workspace, expect_outcome=[expect.contains("milk")],
         expect_trajectory=[expect.called("read_file", args={{"path": "notes.txt"}})])
def reads_notes(ctx):
    agent = tr.Agent(ctx.scripted([tr.tool_call("read_file", path="notes.txt"), tr.reply("Buy milk.")]),
                     tools=tr.shell_tools(ctx.workdir), max_turns=5)
    return agent.run("What do my notes say?")


@tr.case(name="sdk agent", expect_outcome=[expect.contains({reply!r})])
def sdk_agent(ctx):
    client = openai.OpenAI(api_key=KEY, max_retries=0,
                           http_client=ctx.http_client(ctx.scripted([tr.reply({reply!r})]), httpx2=True))
    answer = client.chat.completions.create(model="gpt-4.1-mini", messages=[
        {{"role": "system", "content": "Config: api_key=" + KEY}}, {{"role": "user", "content": "hi"}}])
    return answer.choices[0].message.content
'''


def _key() -> str:
    return "sk-proj-" + secrets.token_urlsafe(24).replace("-", "a").replace("_", "b")


def _saved(result: pytest.RunResult) -> Path:
    match = re.search(r"^trialrun: results saved to (.+)$", result.stdout.str(), re.MULTILINE)
    assert match, result.stdout.str()
    return Path(match.group(1))


def _lines(sidecar: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in sidecar.read_text(encoding="utf-8").splitlines()]


def _temps(folder: Path) -> list[str]:
    return [path.name for path in folder.iterdir() if path.name.endswith(".tmp")]


def _assert_linked(report: RunReport, sidecar: Path) -> int:
    """Every trial of every graded case has its line, and each turn's `exchange` is one of that line's exchanges,
    whose response holds the turn's text: the number of trials checked."""
    checked = 0
    for case in report.graded_cases:
        for trial in case.trials:
            kept = read_trial_exchanges(sidecar, case.name, trial.trial)
            assert kept.problem is None, (case.name, trial.trial, kept.problem)
            by_number = kept.by_number()
            turns = trial.trajectory.all_turns
            assert turns and all(turn.exchange in by_number for turn in turns)
            last = by_number[turns[-1].exchange]
            assert trial.output and str(trial.output) in json.dumps(last["response"])
            checked += 1
    return checked


def test_a_saved_session_keeps_each_trials_exchanges_scrubbed_and_linked_to_its_turns(pytester: pytest.Pytester) -> None:
    key = _key()
    pytester.makepyfile(test_agent=CASES.format(key=key, reply="hello there"))
    result = pytester.runpytest_inprocess("--trialrun-save", "--trialrun-trials", "2")
    result.assert_outcomes(passed=2)
    path = _saved(result)
    sidecar = sidecar_path(path)
    result.stdout.fnmatch_lines([f"trialrun: raw exchanges saved to {sidecar}"])
    report = load_report(path)
    assert _assert_linked(report, sidecar) == 4
    lines = _lines(sidecar)
    assert lines[0] == {"event": "start", "exchanges_version": 1, "run_id": report.run_id,
                        "max_trial_bytes": 4 * 2**20, "kept": True}
    assert sorted((line["case"], line["trial"]) for line in lines[1:]) == [
        ("reads the notes", 1), ("reads the notes", 2), ("sdk agent", 1), ("sdk agent", 2)]
    assert key.encode() not in sidecar.read_bytes() and key.encode() not in path.read_bytes()
    sdk = next(line for line in lines[1:] if line["case"] == "sdk agent")
    (exchange,) = sdk["exchanges"]
    assert exchange["request"]["headers"]["authorization"] == "REDACTED"
    assert exchange["request"]["body"]["messages"][0]["content"] == "Config: api_key=REDACTED"
    notes = next(line for line in lines[1:] if line["case"] == "reads the notes")
    assert [e["n"] for e in notes["exchanges"]] == [1, 2]
    assert _temps(path.parent) == []  # the session's part was merged and removed


def test_names_made_unique_by_module_and_the_configured_cap_reach_the_sidecar(pytester: pytest.Pytester) -> None:
    pytester.makefile(".toml", trialrun='results_dir = "out/runs"\nexchanges_max_bytes = 2048\n')
    case = '''
        import trialrun as tr
        from trialrun import expect

        @tr.case(name="shared name", expect_outcome=[expect.contains("{0}")])
        def shared(ctx):
            return tr.Agent(ctx.scripted([tr.reply("{0} " * 2000)]), max_turns=2).run("{0}?")
    '''
    pytester.makepyfile(test_one=case.format("one"), test_two=case.format("two"))
    result = pytester.runpytest_inprocess("--trialrun-save")
    result.assert_outcomes(passed=2)
    path = _saved(result)
    assert path.parent == pytester.path / "out" / "runs"
    lines = _lines(sidecar_path(path))
    assert lines[0]["max_trial_bytes"] == 2048
    for module in ("one", "two"):
        kept = read_trial_exchanges(sidecar_path(path), f"test_{module}.py::shared name", 1)
        (exchange,) = kept.exchanges
        assert exchange["request"]["body"]["messages"][-1]["content"] == f"{module}?"
        assert "bytes cut" in exchange["cut"]["response"]  # the 2,048-byte cap: cut, and saying so


@pytest.mark.parametrize("how", ["option", "config"])
def test_the_off_switches_keep_none(pytester: pytest.Pytester, how: str) -> None:
    pytester.makepyfile(test_agent=CASES.format(key=_key(), reply="hello there"))
    if how == "config":
        pytester.makefile(".toml", trialrun="exchanges = false\n")
    result = pytester.runpytest_inprocess("--trialrun-save", *(["--trialrun-no-exchanges"] if how == "option" else []))
    result.assert_outcomes(passed=2)
    path = _saved(result)
    assert sorted(p.name for p in path.parent.iterdir()) == sorted([path.name, "latest.json"])
    assert "raw exchanges" not in result.stdout.str()
    gone = read_trial_exchanges(sidecar_path(path), "sdk agent", 1)
    assert "--trialrun-no-exchanges" in (gone.problem or "") and "exchanges = false" in (gone.problem or "")


def test_without_save_nothing_is_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=CASES.format(key=_key(), reply="hello there"))
    pytester.runpytest_inprocess().assert_outcomes(passed=2)
    assert not (pytester.path / "state").exists()


def test_a_session_whose_result_file_cannot_be_saved_keeps_no_exchanges(pytester: pytest.Pytester,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The trials wrote their exchanges; the save then fails (a full disk, simulated at the store): they go too."""
    from trialrun.report.store import ResultsStore

    def full(self: ResultsStore, report: RunReport, *, stem: str | None = None) -> Path:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ResultsStore, "save", full)
    pytester.makepyfile(test_agent=CASES.format(key=_key(), reply="hello there"))
    result = pytester.runpytest_inprocess("--trialrun-save")
    result.stdout.fnmatch_lines(["trialrun: could not save the results: *No space left on device*"])
    assert list((pytester.path / "state" / "eval").iterdir()) == []


def test_a_killed_session_leaves_nothing_the_next_session_keeps(pytester: pytest.Pytester) -> None:
    """The plugin keeps no journal: a session killed after its trials ran has no result file, so its part is an
    orphan; the next saving session in that folder removes it and keeps only its own trials."""
    pytester.makepyfile(test_agent=CASES.format(key=_key(), reply="hello there"), test_zz_kill=textwrap.dedent('''
        import os

        def test_killed():
            os._exit(9)  # the process dies here, after the cases ran: no sessionfinish
    '''))
    killed = pytester.runpytest_subprocess("--trialrun-save")
    folder = pytester.path / "state" / "eval"
    (part,) = _temps(folder)
    assert part.startswith(".pytest-exchanges-main.") and not list(folder.glob("results_*"))
    assert killed.ret != 0
    old = time.time() - 60
    os.utime(folder / part, (old, old))
    (pytester.path / "test_zz_kill.py").unlink()
    result = pytester.runpytest_inprocess("--trialrun-save")
    result.assert_outcomes(passed=2)
    path = _saved(result)
    assert _temps(folder) == [] and sidecar_path(path).is_file()
    assert _assert_linked(load_report(path), sidecar_path(path)) == 2


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="pytest-xdist is not installed")
def test_xdist_workers_each_keep_their_trials_in_the_one_sidecar(pytester: pytest.Pytester) -> None:
    key = _key()
    for n in range(3):
        pytester.makepyfile(**{f"test_agent{n}": CASES.format(key=key, reply=f"hello {n}")})
    result = pytester.runpytest_subprocess("-p", "xdist", "-n", "2", "--trialrun-save", "--trialrun-trials", "2")
    result.assert_outcomes(passed=6)
    path = _saved(result)
    report = load_report(path)
    assert {c.name for c in report.cases} == {f"test_agent{n}.py::{name}" for n in range(3)
                                              for name in ("reads the notes", "sdk agent")}
    sidecar = sidecar_path(path)
    lines = _lines(sidecar)
    keys = [(line["case"], line["trial"]) for line in lines[1:]]
    assert len(keys) == len(set(keys)) == 12  # every trial once, none lost or doubled by the other worker
    assert _assert_linked(report, sidecar) == 12
    for n in range(3):  # each module's own reply under its own name
        kept = read_trial_exchanges(sidecar, f"test_agent{n}.py::sdk agent", 2)
        assert f"hello {n}" in json.dumps(kept.exchanges[0]["response"])
    assert key.encode() not in sidecar.read_bytes()
    assert _temps(path.parent) == []


def test_the_view_shows_a_pytest_made_runs_exchanges_under_its_turns(pytester: pytest.Pytester) -> None:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    key = _key()
    pytester.makepyfile(test_agent=CASES.format(key=key, reply="hello there"))
    path = _saved(pytester.runpytest_inprocess("--trialrun-save"))
    client = TestClient(create_app(path.parent), base_url="http://127.0.0.1")
    for name, count in (("reads the notes", 2), ("sdk agent", 1)):
        response = client.get(f"/trial/{path.stem}?{urlencode({'test': name, 'trial': 1})}")
        assert response.status_code == 200
        html = response.text
        details = re.findall(r'<details class="raw-exchange" data-exchange="(\d+)"[^>]*>', html)
        assert details == [str(n) for n in range(1, count + 1)] and "<details open" not in html
        assert 'id="exchanges-note"' not in html and f"{count} exchange{'s' if count != 1 else ''} kept" in html
        assert key not in html
    assert "<th>authorization</th><td><code>REDACTED</code>" in html


def test_a_saved_run_whose_latest_json_cannot_follow_keeps_its_result_file_and_exchanges(pytester: pytest.Pytester) -> None:
    """latest.json is only a pointer: when it cannot be updated (a folder in its place), the session's result file
    and exchanges are still saved, with a warning, and the session does not fail (as `trialrun run` does)."""
    pytester.makefile(".toml", trialrun='results_dir = "runs"\n')
    (pytester.path / "runs" / "latest.json").mkdir(parents=True)
    (pytester.path / "runs" / "latest.json" / "keep").write_text("not a pointer")
    pytester.makepyfile(test_agent=CASES.format(key=_key(), reply="hello there"))
    result = pytester.runpytest_inprocess("--trialrun-save")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    path = _saved(result)
    assert "could not save the results" not in result.stdout.str()
    result.stdout.fnmatch_lines([f"trialrun: saved {path.name}, but could not update *latest.json*"])
    assert _assert_linked(load_report(path), sidecar_path(path)) == 2
