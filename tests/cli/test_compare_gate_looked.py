"""compare's gate through the real CLI, where it could pass without having looked:

- `trialrun init`'s project run with its scripted model, then with an agent that crashes before its first request
  (an agent change that breaks it outright): the gate passed at -k 1 (read-notes 1/1 -> 0/1 "cannot tell", the
  runs taken for "mixed" and judged as live). Whether the crashing agent talked to any model is decided outside
  trialrun's verdict: the exchanges sidecar of its run holds none.
- `--threshold` of 1 or more made "not worse" rule out nothing, and NaN ended in a traceback: both are now refused
  (exit 2, the option named), for compare and for an A/B run.
- an eval-skill result file whose run_id has the shape of a date and is none (eval_20260732_140000) ended in a
  traceback that named no file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

CRASHING = "def run(prompt, ctx):\n    raise RuntimeError('agent crashed at startup')\n"


@pytest.fixture
def initialised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli: Callable[..., Result]) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    assert cli("init").exit_code == 0
    (tmp_path / "crashing.py").write_text(CRASHING)
    return tmp_path


def _talked(project: Path) -> int:
    """Trials of the latest run whose agent sent the model anything, as its exchanges sidecar recorded the wire."""
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    sidecar = project / "state" / "eval" / f"results_{latest['run_id'].removeprefix('eval_')}.exchanges.ndjson"
    if not sidecar.exists():
        return 0
    entries = [json.loads(line) for line in sidecar.read_text().splitlines() if line]
    return sum(1 for e in entries if e.get("event") == "trial" and e.get("exchanges"))


@pytest.mark.parametrize("trials", ["1", "3"])
def test_an_agent_that_no_longer_starts_fails_the_gate(initialised: Path, cli: Callable[..., Result],
                                                       trials: str) -> None:
    assert cli("run", "read-notes", "-k", trials).exit_code == 0
    assert _talked(initialised) == int(trials)  # the scripted model answered every trial
    assert cli("run", "read-notes", "-k", trials, "--agent", "crashing:run").exit_code == 1
    assert _talked(initialised) == 0  # the crashing agent sent nothing: no model's coin was flipped
    result = cli("compare", "--fail-on-regression")
    assert result.exit_code == 1, result.output  # was 0: "cannot tell", judged as live
    lines = result.output.splitlines()
    assert [line for line in lines if line.startswith("Deterministic runs: every change is real")], result.output
    assert f"  read-notes:  worse: {trials}/{trials} -> 0/{trials} trials passed" in lines
    assert lines[-1] == "gate: fails: 1 test worse (read-notes)"


def test_compare_with_itself_fails_the_gate(initialised: Path, cli: Callable[..., Result]) -> None:
    cli("run", "all")
    result = cli("compare", "latest", "latest", "--fail-on-regression")
    assert result.exit_code == 1, result.output  # was 0: "gate: passes: nothing is worse"
    assert "a run compared with itself shows no change" in result.output.splitlines()[-1]


@pytest.mark.parametrize("value", ["1", "1.5", "nan", "inf"])
def test_a_threshold_of_one_or_more_or_nan_is_refused(initialised: Path, cli: Callable[..., Result],
                                                      value: str) -> None:
    cli("run", "all")
    cli("run", "all")
    for command in (("compare",), ("run", "all", "--arms", "a,b")):
        result = cli(*command, "--threshold", value)
        assert result.exit_code == 2, (command, result.output)  # was: 0 ("not worse" ruled out nothing); nan: 1
        assert "Invalid value for '--threshold'" in result.output and "0<x<1" in result.output, result.output


def test_a_skill_file_whose_run_id_is_no_date_is_named(tmp_path: Path, cli: Callable[..., Result]) -> None:
    path = tmp_path / "results_x.json"
    path.write_text(json.dumps({"run_id": "eval_20260732_140000", "tests": [{"id": "read-file", "passed": True}]}))
    result = cli("report", str(path))
    assert result.exit_code == 2 and f"error: {path}: an eval skill result file needs a timestamp" in result.output
