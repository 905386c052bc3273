"""docs/comparing.md cannot drift from what trialrun does: its tables of trials needed are what the power function
computes, its deterministic example is what compare prints for the issue's transcript, and its worked live A/B
example is rerun here against the live-like model on loopback (tests/_coin_model.py: known chances per test and
per instructions, a seeded stream per test, one trial at a time) and must print every line the page shows."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from _coin_model import coin_model
from click.testing import Result

from trialrun.report._power import level_for, trials_needed

PAGE = Path(__file__).resolve().parents[2] / "docs" / "comparing.md"
DROPS = (0.05, 0.10, 0.20, 0.30, 0.50)


def _blocks() -> list[str]:
    return re.findall(r"^```\n(.*?)^```$", PAGE.read_text(encoding="utf-8"), re.S | re.M)


def _table_after(heading: str) -> list[list[str]]:
    text = PAGE.read_text(encoding="utf-8")
    rows = text[text.index(heading):].split("\n\n", 2)[1].splitlines()
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


@pytest.mark.parametrize("heading, tests", [("One test (or a suite of one):", 1),
                                            ("A suite of 10 tests that all drop alike", 10)])
def test_the_trials_needed_tables_are_what_the_power_function_computes(heading: str, tests: int) -> None:
    rows = _table_after(heading)
    assert [row[0] for row in rows] == ["1.00", "0.95", "0.90", "0.80", "0.70", "0.50"]
    for row in rows:
        rate = float(row[0])
        assert [int(cell) for cell in row[1:]] == [
            trials_needed(rate, drop, tests=tests, level=level_for(tests, pooled=True)) for drop in DROPS], row


#: The worked example: eight tests, the old and the new instructions, each test's chance of a right answer.
TESTS = ["groceries", "pantry", "recipe", "budget", "receipt", "party", "lunch", "refuse-wipe"]
OLD = "You are a careful assistant. Before you answer, read the user's lists; ask before deleting anything."
NEW = "Be brief."
BEFORE = {**dict.fromkeys(TESTS, 0.95), "refuse-wipe": 1.0}
AFTER = {**dict.fromkeys(TESTS, 0.85), "receipt": 0.3, "refuse-wipe": 0.9, "groceries": 0.95}


def _chance(text: str) -> float:
    rates = AFTER if text.startswith(NEW) else BEFORE
    return next(rate for name, rate in rates.items() if f"({name})" in text)


def test_the_worked_live_example_is_what_compare_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         cli: Callable[..., Result]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "state" / "eval").mkdir(parents=True)
    (tmp_path / "state" / "eval" / "tests.json").write_text(json.dumps([
        {"id": name, "prompt": f"What should I buy? ({name})", "expected_tools": [], "max_turns": 1,
         "success_criteria": "Mentions milk", "expect": {"contains": "milk"},
         "tags": ["safety"] if name == "refuse-wipe" else []} for name in TESTS]))
    with coin_model(_chance, seed=2, per_prompt=True) as coin:
        for system in (OLD, NEW):
            (tmp_path / "trialrun.toml").write_text(f'suite = "state/eval/tests.json"\nrubric = "balanced"\n'
                                                    f"system = {json.dumps(system)}\n")
            assert cli("run", "all", "-k", "8", "-j", "1", "--model", coin.spec).exit_code in (0, 1)
    result = cli("compare", "--fail-on-regression")
    [shown] = [block for block in _blocks() if block.startswith("groceries:")]
    assert result.output.split("\n", 1)[1] == shown
    assert result.exit_code == 1


def test_the_deterministic_example_is_what_compare_prints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          cli: Callable[..., Result]) -> None:
    from test_compare_deterministic import BAD  # the bad model

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    cli("init")
    (tmp_path / "bad.yaml").write_text(BAD)
    cli("run", "all", "-k", "3")
    cli("run", "all", "-k", "3", "--model", "scripted:bad.yaml")
    lines = cli("compare").output.splitlines()
    [shown] = [block for block in _blocks() if block.startswith("Deterministic runs: every change is real")]
    assert all(line in lines for line in shown.splitlines()), shown
