"""Output that is not a terminal (a CI log, a pipe) is printed without rich: the run table and the lines under it
are the very text rich prints there, character for character, at every width; what only rich can lay out (text
rich measures by cells, a tab after such text, a title wider than the table) is handed to rich, so the output
never depends on which path printed it."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from rich.console import Console

from trialrun.expect import Verdict
from trialrun.render import _console, _plain
from trialrun.render.terminal import print_report
from trialrun.report.results import CaseResult, RunReport, TrialError, TrialResult
from trialrun.trajectory import ToolCall, ToolResult, Trajectory, Turn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render"))
from _html_reports import shellpilot_report, synthetic_report  # noqa: E402

WIDTHS = (20, 40, 60, 80, 100, 160, 240)


def _rich_text(report: RunReport, width: int, saved: str | None) -> str:
    out = io.StringIO()  # as the CLI's console, on a file that is not a terminal
    print_report(report, Console(file=out, width=width, highlight=False, soft_wrap=True), saved=saved)
    return out.getvalue()


def _trial(n: int, passed: bool, tools: list[str], reason: str, *, status: str = "completed",
           error: TrialError | None = None) -> TrialResult:
    calls = [ToolCall(name, {"i": i}, f"c{n}{i}") for i, name in enumerate(tools)]
    turns = [Turn("", calls, [ToolResult(c.id, "ok") for c in calls]), Turn("done")] if calls else [Turn("done")]
    return TrialResult(trial=n, passed=passed, verdicts=[Verdict(passed, "contains('x')", reason, kind="outcome")],
                       duration_s=0.1, status=status, output="done", error=error, trajectory=Trajectory(turns=turns))


def _edge_report(name: str, *, trials: int = 2, reason: str = "output lacks 'x'", tools: list[str] | None = None,
                 status: str = "completed", run_id: str = "eval_20260101_000000") -> RunReport:
    """A report whose failing test's id and reason are `name` and `reason`, beside ordinary, skipped, partly run
    and unfinished tests, and trials stopped by the turn limit."""
    tools = ["read_file", "list_dir"] if tools is None else tools
    cases = [
        CaseResult.from_trials("plain-case", [_trial(t + 1, True, tools, "contains 'x'") for t in range(trials)],
                               tags=[], mode="deterministic"),
        CaseResult.from_trials(name, [_trial(t + 1, t == 0, tools[:1], reason, status="max_turns") for t in range(trials)],
                               tags=[], mode="deterministic"),
        CaseResult.from_trials("partly", [_trial(1, True, [], "ok")], tags=[], mode="deterministic", unfinished_trials=1),
        CaseResult.from_trials("errored", [_trial(1, False, ["run_command"], "no answer", status="error",
                                                  error=TrialError(type="ValueError", message="bad\tvalue", phase="invoke"))],
                               tags=[], mode="deterministic"),
        CaseResult(name="live-one", mode="live_canary", skipped=True, skip_reason="live canary: --include-live-canary"),
    ]
    return RunReport.build(cases, trial_count=trials, started_at=datetime(2026, 1, 1, tzinfo=timezone.utc), duration_s=3.5,
                           status=status, unfinished=["never-started"] if status != "completed" else None, run_id=run_id,
                           config_snapshot={"turn_limit": 25})


REPORTS = {
    "shellpilot, 2 trials": lambda: shellpilot_report(2),
    "shellpilot, 1 trial": lambda: shellpilot_report(1),
    "synthetic": lambda: synthetic_report(25, 3, seed=11),
    "edge cases, interrupted": lambda: _edge_report("fails-sometimes", status="interrupted"),
    "edge cases, one trial": lambda: _edge_report("fails-once", trials=1),
    "markup and emoji codes": lambda: _edge_report("[red]x[/] :smile:", reason="[bold]no[/bold] :thumbs_up: \\[x]"),
    "control characters": lambda: _edge_report("id\x1b[31m\u202e", reason="line\x07one\r\nline two\x1b]0;t\x07"),
    "tabs": lambda: _edge_report("tabbed", reason="col\tumn\n\tindented"),
    "a long tool name": lambda: _edge_report("one", tools=["a_tool_with_a_rather_long_name_" + "x" * 40, "b"]),
    "no tools": lambda: _edge_report("none", tools=[]),
    "a long run id": lambda: _edge_report("x", run_id="eval_" + "9" * 150),
    "wide characters under the table": lambda: _edge_report("ascii-id", reason="理由: 見つからない ✓ ünïcode 🙂  "),
    "wide characters": lambda: _edge_report("日本語のテスト", reason="理由: 見つからない\tタブ"),
    "wide characters in tools": lambda: _edge_report("w", tools=["読む", "書く_file"]),
}


@pytest.mark.parametrize("which", list(REPORTS))
def test_the_plain_lines_are_what_rich_prints_at_every_width(which: str) -> None:
    report = REPORTS[which]()
    plain_widths = []
    for width in WIDTHS:
        lines = _plain.report_lines(report, width, saved="/tmp/r/results_1.json")
        if lines is not None:
            assert "".join(line + "\n" for line in lines) == _rich_text(report, width, "/tmp/r/results_1.json"), width
            plain_widths.append(width)
    if which.startswith(("wide characters", "a long run id")) and not which.endswith("under the table"):
        assert len(plain_widths) < len(WIDTHS)  # rich's layout was needed somewhere
    else:
        assert plain_widths == list(WIDTHS)  # the everyday reports never need rich


def test_a_plain_console_hands_what_needs_rich_to_rich(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    for report in (REPORTS["wide characters"](), REPORTS["edge cases, one trial"]()):
        _console.print_report(report, _plain.PlainConsole(), saved="/tmp/r.json")
        assert capsys.readouterr().out == _rich_text(report, 60, "/tmp/r.json")


def test_plain_output_follows_richs_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TTY_COMPATIBLE", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert _plain.plain_output(io.StringIO()) and not _plain.plain_output(Tty())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert not _plain.plain_output(io.StringIO())  # rich would colour it: rich prints it
    monkeypatch.setenv("TTY_COMPATIBLE", "0")
    assert _plain.plain_output(Tty())
    for stream in (io.StringIO(), Tty()):
        assert _plain.plain_output(stream) is (not Console(file=stream).is_terminal)


def test_the_width_is_richs(monkeypatch: pytest.MonkeyPatch) -> None:
    for columns in ("57", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert _plain.PlainConsole().width == Console(file=io.StringIO()).width


def test_a_piped_run_prints_the_table_progress_and_summary_plainly(tmp_path: Path) -> None:
    """`trialrun run all | cat`: the table, the progress and the summary are printed, with no terminal codes."""
    import shutil

    project = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "quickstart", project,
                    ignore=shutil.ignore_patterns("results_*.json", "latest.json"))
    probe = "import sys, runpy; sys.argv = ['trialrun', 'run', 'all', '--trials', '2']\nrunpy.run_module('trialrun', run_name='__main__')"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "GITHUB_STEP_SUMMARY")}
    done = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True,
                          env={**env, "COLUMNS": "160"}, timeout=120)
    assert "\x1b[" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "trialrun eval_" in done.stdout and "acc tool accuracy" in done.stdout
    assert "3/5 passed · 2 failed · pass@1 0.60" in done.stdout and "✗ search-json: trial 1 of 2: " in done.stdout
