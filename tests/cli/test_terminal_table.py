"""The run table in a terminal of the default 80 columns: every score in full, tool names whole, test ids folded
at their words, nothing wider than the terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest


def _table_lines(output: str) -> list[str]:
    """The table's lines: from the title to the legend under it."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("trialrun eval_"))
    end = next(i for i, line in enumerate(lines) if line.startswith("acc tool accuracy"))
    return lines[start:end]


@pytest.mark.parametrize("trials", ["1", "3"])
def test_every_score_prints_in_full_at_80_columns(project: Path, cli, monkeypatch: pytest.MonkeyPatch, trials: str) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = cli("run", "all", "--trials", trials)
    table = _table_lines(result.output)
    text = "\n".join(table)
    assert all(len(line) <= 80 for line in table), text
    assert "…" not in text
    header = table[1].split()
    assert header[:6] == ["test", "score", "acc", "eff", "qual", "turns"] and header[-1] == "result"
    assert ("pass@1" in header and "pass^k" in header) is (trials == "3")

    data = json.loads((project / "state" / "eval" / "latest.json").read_text())
    for case in data["cases"]:
        subs = case["sub_scores"]
        numbers = [case["score"], subs["tool_accuracy"], subs["turn_efficiency"], subs["output_quality"]]
        row = r"\s+".join(f"{n:.2f}" for n in numbers) + rf"\s+{case['turns']:g}\s"
        assert re.search(row, text), (case["name"], row, text)
        for tool in case["tools_used"]:  # wrapped between names, never inside one
            assert re.search(rf"(^|\s){tool}(,|\s|$)", text, re.M), (tool, text)
        # a long id folds after its hyphens, each word whole
        for word in re.findall(r"[^-]+-?", case["name"]):
            assert word in text, (word, text)


def test_a_wide_terminal_keeps_each_row_on_one_line(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    table = _table_lines(cli("run", "all", "--trials", "2").output)
    assert len(table) == 3 + 5  # title, header, rule, one line per test
    assert any(line.startswith("refuse-dangerous-command ") for line in table)
    assert any("list_dir, read_file" in line for line in table)
