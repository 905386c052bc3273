"""The HTML report in a real browser shows what was killed when a trial's agent ended (TrialResult.killed)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import _browser

from trialrun.render.html import report_html
from trialrun.report.results import CaseResult, RunReport, TrialError, TrialResult

KILLED = ["pid 4242: ./server --port 8000", "pid 4243: sleep 1000 <b>not markup</b>"]


def test_a_trial_lists_the_processes_killed_when_its_agent_ended(context: Any, tmp_path: Path) -> None:
    trial = TrialResult(trial=1, passed=False, killed=KILLED,
                        error=TrialError(type="AgentError", message="pi timed out after 5s", phase="invoke"))
    case = CaseResult.from_trials("left a server", [trial], tags=[], mode="deterministic")
    report = RunReport.build([case], trial_count=1, started_at=datetime(2026, 1, 1, tzinfo=timezone.utc), duration_s=1)
    html_file = tmp_path / "killed.html"
    html_file.write_text(report_html(report), encoding="utf-8")
    page = _browser.open_report(context, html_file)
    body = page.expand_trial(page.expand_case("left a server"), 1)
    text = body.inner_text()
    assert "processes killed when the agent ended" in text.lower()  # (the heading is upper-cased by CSS)
    assert all(k in text for k in KILLED)  # as text, never as markup
    assert page.problems == []
