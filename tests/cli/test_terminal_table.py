"""The run table at the default 80 columns, as CI logs and pipes (`trialrun run all | cat`) get it: every score in
full, tool names whole, and every test id whole on one line (it is what a reader searches a log for). The tools
column wraps between names to make room; when even that is not enough the table is wider than 80 columns."""

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
def test_every_id_and_score_prints_whole_at_80_columns(project: Path, cli, monkeypatch: pytest.MonkeyPatch, trials: str) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    result = cli("run", "all", "--trials", trials)  # captured output: not a terminal
    table = _table_lines(result.output)
    text = "\n".join(table)
    assert "…" not in text
    header = table[1].split()
    assert header[:6] == ["test", "score", "acc", "eff", "qual", "turns"] and header[-1] == "result"
    assert ("pass@1" in header and "pass^k" in header) is (trials == "3")

    data = json.loads((project / "state" / "eval" / "latest.json").read_text())
    ids = [case["name"] for case in data["cases"]]
    assert "refuse-dangerous-command" in ids and "search-json" in ids
    for case in data["cases"]:
        subs = case["sub_scores"]
        numbers = [f"{case['score']:.2f}", f"{subs['tool_accuracy']:.2f}", f"{subs['turn_efficiency']:.2f}",
                   f"{subs['output_quality']:g}/0.5"]  # output quality out of its maximum
        row = rf"^{re.escape(case['name'])}\s+" + r"\s+".join(map(re.escape, numbers)) + rf"\s+{case['turns']:g}\s"
        assert len([line for line in table if re.match(row, line)]) == 1, (case["name"], row, text)  # id and scores on one line
        for tool in case["tools_used"]:  # wrapped between names, never inside one
            assert re.search(rf"(^|\s){tool}(,|\s|$)", text, re.M), (tool, text)
    # No line holds a piece of an id: the rows that carry no id are the tools column's wrapped names only, and the
    # result column's second word (what failed a test: `FAIL` above `never_ran`).
    for line in table[3:]:
        if not any(line.startswith(name + " ") for name in ids):
            assert re.fullmatch(r"(\s+[a-z_]+,?)+\s*", line), (line, text)
    fails = {case["name"]: line for case in data["cases"] for line in table if line.startswith(case["name"] + " ")}
    assert fails["refuse-dangerous-command"].rstrip().endswith("FAIL") and "never_ran" in text  # why, in the table
    widest = max(len(line.rstrip()) for line in table)
    if trials == "1":  # as narrow as it can be: one tool a line, the result's words one a line (FAIL / never_ran)
        assert widest <= 84 and "FAIL never_ran" not in text and re.search(r"^\s+read_file\s+score\s*$", text, re.M), text
    else:
        assert widest > 80, text  # two more columns cannot fit whole ids in 80: wider, not split


def test_a_wide_terminal_keeps_each_row_on_one_line(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    table = _table_lines(cli("run", "all", "--trials", "2").output)
    assert len(table) == 3 + 5  # title, header, rule, one line per test
    assert any(line.startswith("refuse-dangerous-command ") for line in table)
    assert any("list_dir, read_file" in line for line in table)


@pytest.mark.parametrize("terminal", [True, False])
def test_print_report_never_splits_an_id_on_any_console(project: Path, cli, terminal: bool) -> None:
    """The renderer itself, on an 80-column console that is (or is not) a terminal: ids whole, scores whole."""
    import io

    from rich.console import Console

    from trialrun.render.terminal import print_report
    from trialrun.report.store import load_report

    cli("run", "all", "--trials", "3")
    report = load_report(project / "state" / "eval" / "latest.json")
    out = io.StringIO()
    print_report(report, Console(file=out, width=80, force_terminal=terminal, color_system=None, highlight=False))
    lines = out.getvalue().splitlines()
    for case in report.cases:
        [row] = [line for line in lines if line.startswith(case.name + " ")]
        assert f"{case.score:.2f}" in row and "…" not in row
