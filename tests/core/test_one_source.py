"""One rule, one place (issue 35.1): the wire APIs are the codec registry's names, every place that takes an API
name accepts exactly those, and no module spells the list out again; a trial's pass, its per-kind flags and its
score come from `results.judge_trial`, which the runner, a regrade and a hand grade all reach."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from trialrun.cli import main
from trialrun.expect._base import Verdict
from trialrun.report.results import TrialError, TrialResult, judge_trial, kinds_passed
from trialrun.wire import CODECS

SRC = Path(__file__).resolve().parents[2] / "src" / "trialrun"
NOT_AN_API = "openai-chats"


@pytest.mark.parametrize("api", [*CODECS, NOT_AN_API])
def test_every_place_that_takes_an_api_name_accepts_exactly_the_registrys(api: str, tmp_path: Path) -> None:
    from trialrun.agents._process import ProcessAgent
    from trialrun.suite.config import ConfigError, load_config

    known = api in CODECS
    try:
        ProcessAgent(["true"], api=api)
        agent_ok = True
    except ValueError as exc:
        agent_ok = False
        assert ", ".join(CODECS) in str(exc)
    (tmp_path / "trialrun.toml").write_text(f'api = "{api}"\n')
    try:
        load_config(tmp_path)
        config_ok = True
    except ConfigError as exc:
        config_ok = False
        assert ", ".join(CODECS) in str(exc)
    ran = CliRunner().invoke(main, ["run", "--api", api, "--suite", str(tmp_path / "missing.json")])
    cli_ok = "Invalid value for '--api'" not in ran.output
    assert (agent_ok, config_ok, cli_ok) == (known, known, known), ran.output


def test_the_per_api_tables_cover_the_registry() -> None:
    from trialrun.agent.loop import DEFAULT_BASE_URLS
    from trialrun.agents.pi import _WIRE, CONTRACT
    from trialrun.report._export import PROVIDERS

    assert set(DEFAULT_BASE_URLS) == set(CODECS) and set(PROVIDERS) == set(CODECS)
    assert set(_WIRE) <= set(CODECS) and CONTRACT.apis == tuple(_WIRE)


def _spelled_lists() -> list[str]:
    """Every tuple, list or set literal outside `wire/` naming every wire API, or all but one (a copy gone stale when
    a codec was added): a second copy of the list. (A few named for what they share, such as the wires that carry an
    error flag, are a fact about those wires, not the list.)"""
    found = []
    for path in SRC.rglob("*.py"):
        if path.parent.name == "wire":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                names = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in CODECS}
                if len(names) >= max(2, len(CODECS) - 1):
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    return found


def test_no_module_spells_the_wire_api_list_out_again() -> None:
    assert _spelled_lists() == []


def test_the_scan_finds_a_second_copy(tmp_path: Path) -> None:
    """The scan above can fail: a module with the list spelled out is found."""
    (tmp_path / "copy.py").write_text('APIS = ("openai-chat", "openai-responses", "anthropic")\nOK = ("anthropic", "gemini")\n')
    globals()["SRC"], saved = tmp_path, SRC
    try:
        assert _spelled_lists() == ["copy.py:1"]
    finally:
        globals()["SRC"] = saved


def _v(passed: bool, kind: str | None, score: float | None = None) -> Verdict:
    return Verdict(passed, f"g{kind}{passed}", "why", score, kind)


def test_the_one_rule_for_a_trial() -> None:
    teardown = TrialError(type="RuntimeError", message="x", phase="teardown")
    verdicts = [_v(True, None), _v(True, "trajectory"), _v(False, "trajectory"), _v(True, "score", 0.8), _v(True, "score", 0.4)]
    assert kinds_passed(verdicts) == {"outcome": True, "trajectory": False, "score": True}
    assert list(kinds_passed(verdicts)) == ["outcome", "trajectory", "score"]  # in the verdicts' order
    assert judge_trial(verdicts, None, None) == (False, kinds_passed(verdicts), pytest.approx(0.6))
    passing = [_v(True, None), _v(True, "cost")]
    assert judge_trial(passing, None, None).passed is True
    assert judge_trial(passing, None, teardown).passed is False  # a teardown error fails it (issue 35.1)
    assert judge_trial(passing, teardown, None).passed is False
    assert judge_trial([], None, None) == (True, {}, None)
    # a stored trial judged again gets the same flags the runner gave it
    trial = TrialResult(trial=1, passed=True, verdicts=passing, teardown_error=teardown).judged()
    assert (trial.passed, trial.outcome_passed, trial.cost_passed, trial.trajectory_passed) == (False, True, True, None)


def test_the_roll_up_is_not_written_again() -> None:
    """The per-kind roll-up (`kind or "outcome"` folded with `and`) lives in results.kinds_passed only."""
    copies = []
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if 'by_kind.get(kind, True) and' in text or "by_kind.get(verdict.kind" in text:
            copies.append(str(path.relative_to(SRC)))
    assert copies == ["report/results.py"]
