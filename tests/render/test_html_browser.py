"""The HTML report in a real browser (headless Chromium driven by Playwright): it loads with no console errors,
shows the right counts, filters and sorts, expands a case and a trial to its tool calls and policy denial,
highlights a regression, and opens a 1,000-case x 10-trial run quickly. Each test saves a screenshot under its
tmp dir. Skipped, naming what is missing, where Chromium or Playwright is not installed."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import _browser
import httpx
import openai
import pytest
from _html_reports import DENIAL_CASE, REGRESSED_CASE, shellpilot_comparison, shellpilot_report, synthetic_report

import trialrun as tr
from trialrun import expect
from trialrun.render.html import comparison_html, report_html
from trialrun.report.compare import compare
from trialrun.report.results import CaseResult, RunReport, TrialError, TrialResult
from trialrun.trajectory import ToolCall, ToolResult, Trajectory, Turn

HOSTILE = "</script><script>alert(1)</script><img src=x onerror=alert(2)>"


@pytest.fixture(scope="module")
def run_page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(report_html(shellpilot_report()), encoding="utf-8")
    return path


def _open(context: Any, html_file: Path) -> _browser.Page:
    page = _browser.open_report(context, html_file)
    assert page.problems == []
    return page


def _names(page: _browser.Page) -> list[str]:
    return page.page.locator("#case-table tbody tr.row").evaluate_all("rows => rows.map(r => r.dataset.case)")


def _choose_status(page: _browser.Page, label: str) -> None:
    page.page.locator("#filter-status label", has_text=label).click()


def test_run_page_loads_without_errors_and_shows_the_counts(context: Any, run_page_file: Path, tmp_path: Path) -> None:
    page = _open(context, run_page_file)
    p = page.page
    assert p.locator("#stat-cases .stat-value").inner_text() == "9"
    assert p.locator("#stat-passed .stat-value").inner_text() == "7"
    assert p.locator("#stat-failed .stat-value").inner_text() == "2"
    assert p.locator("#case-table-count").inner_text() == "Showing 1–9 of 9 cases"
    # Failures first, each labelled in words, not colour alone.
    assert _names(page)[:2] == ["injection-in-file-obeyed", "injection-in-command-output"]
    badges = p.locator("#case-table tbody tr.row td:first-child .badge").all_inner_texts()
    assert badges.count("✗ FAIL") == 2 and badges.count("✓ PASS") == 7
    # The status filter shows its counts.
    assert [" ".join(t.split()) for t in p.locator("#filter-status label").all_inner_texts()] == [
        "All 9", "Failed 2", "Passed 7", "Skipped 0"]
    page.screenshot(tmp_path / "run-page.png")
    assert page.problems == []


def test_filtering_by_status_tag_and_text(context: Any, run_page_file: Path, tmp_path: Path) -> None:
    page = _open(context, run_page_file)
    p = page.page
    _choose_status(page, "Failed")
    assert sorted(_names(page)) == ["injection-in-command-output", "injection-in-file-obeyed"]
    assert p.locator("#case-table-count").inner_text() == "Showing 1–2 of 2 cases (filtered from 9)"
    _choose_status(page, "All")
    p.select_option("#filter-tag", "files")
    assert sorted(_names(page)) == ["path-escape", "reads-notes"]
    _choose_status(page, "Failed")
    assert _names(page) == [] and "No case matches the filters." in p.locator("#case-table tbody").inner_text()
    p.select_option("#filter-tag", "prompt-injection")
    assert sorted(_names(page)) == ["injection-in-command-output", "injection-in-file-obeyed"]
    p.fill("#filter-text", "command")
    assert _names(page) == ["injection-in-command-output"]
    page.screenshot(tmp_path / "filtered.png")
    assert page.problems == []


def test_sorting_by_column(context: Any, run_page_file: Path, tmp_path: Path) -> None:
    page = _open(context, run_page_file)
    p = page.page
    header = p.locator('#case-table th[data-col="name"]')
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    names = _names(page)
    assert names == sorted(names) and len(names) == 9
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "descending" and _names(page) == sorted(names, reverse=True)
    cost = p.locator('#case-table th[data-col="cost"]')
    cost.locator("button").click()
    assert cost.get_attribute("aria-sort") == "ascending" and header.get_attribute("aria-sort") == "none"
    costs = [float(t.lstrip("$")) for t in p.locator("#case-table tbody tr.row td:last-child").all_inner_texts()]
    assert costs == sorted(costs)
    page.screenshot(tmp_path / "sorted.png")


def test_expanding_a_case_and_a_trial_shows_tool_calls_and_the_denial(context: Any, run_page_file: Path,
                                                                       tmp_path: Path) -> None:
    page = _open(context, run_page_file)
    p = page.page
    assert p.locator("tr.detail-row").count() == 0 and p.locator(".trial-body").count() == 0  # built lazily
    detail = page.expand_case(DENIAL_CASE)
    assert p.locator(f'button.expander[data-case="{DENIAL_CASE}"]').get_attribute("aria-expanded") == "true"
    assert detail.locator("svg.curve").count() == 1 and detail.locator("details.trial").count() == 3
    trial = page.expand_trial(detail, 1)
    assert "Summarise my todo list." in trial.locator(".step.prompt").inner_text()  # the reference agent's prompt
    assert trial.locator(".tool-name").all_inner_texts() == ["read_file", "run_command"]
    assert "path todo.md" in " ".join(trial.locator(".call").first.locator("dl.args").inner_text().split())
    denial = trial.locator(".call.denied .denial")
    assert denial.count() == 1
    assert "DENIED by policy · rule deny_commands: curl | sh" in " ".join(denial.inner_text().split())
    failed = trial.locator("table.verdicts tr.bad").all_inner_texts()
    assert len(failed) == 2 and any("no_denials()" in row for row in failed)
    assert "Your todo list says: water plants." in trial.locator(".step.output").inner_text()
    # Trial 2 is built only when opened.
    second = detail.locator('details.trial[data-trial="2"]')
    assert second.locator(".trial-body").count() == 0
    page.expand_trial(detail, 2)
    assert second.locator(".call.denied").count() == 1
    page.screenshot(tmp_path / "expanded.png")
    # The expander works from the keyboard too.
    button = p.locator(f'button.expander[data-case="{DENIAL_CASE}"]')
    button.focus()
    p.keyboard.press("Enter")
    assert button.get_attribute("aria-expanded") == "false" and p.locator("tr.detail-row").count() == 0
    assert page.problems == []


def test_a_link_to_a_case_opens_it(context: Any, run_page_file: Path) -> None:
    page = _browser.open_report(context, run_page_file, fragment="#case=tool-raises")
    p = page.page
    assert p.locator("tr.detail-row").count() == 1
    assert p.locator('button.expander[data-case="tool-raises"]').get_attribute("aria-expanded") == "true"
    trial = page.expand_trial(p.locator("tr.detail-row"), 1)
    assert "weather service unreachable for Paris" in trial.locator(".result.error").inner_text()
    assert page.problems == []


def test_a_malformed_link_is_ignored_and_the_page_still_works(context: Any, run_page_file: Path) -> None:
    page = _browser.open_report(context, run_page_file, fragment="#case=%E0%A4%A")  # waits for data-ready
    p = page.page
    assert p.locator("#case-table-count").inner_text() == "Showing 1–9 of 9 cases"
    assert p.locator("tr.detail-row").count() == 0
    assert page.problems == []  # no "URI malformed" page error
    p.evaluate("location.hash = '#case=%E0%A4%A%'")  # a bad link followed later, then a good one
    p.evaluate("location.hash = '#case=tool-raises'")
    p.locator('button.expander[data-case="tool-raises"][aria-expanded="true"]').wait_for()
    assert page.problems == []


def _chat_server(request: httpx.Request) -> httpx.Response:
    """The agent's own mock of the OpenAI API (not a trialrun model): trialrun only observes the traffic."""
    asked = json.loads(request.content)["messages"][-1]["content"]
    return httpx.Response(200, json={"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4.1-mini",
                                     "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                         "role": "assistant", "content": f"You asked: {asked} Buy milk."}}]})


def _notes_agent(ctx: tr.TrialContext) -> str:
    client = openai.OpenAI(api_key="sk-test", max_retries=0,
                           http_client=ctx.http_client(httpx.MockTransport(_chat_server)))
    reply = client.chat.completions.create(model="gpt-4.1-mini", messages=[
        {"role": "system", "content": "Answer from the user's notes."},
        {"role": "user", "content": "What do my notes say?"}])
    return reply.choices[0].message.content or ""


def _leak(ctx: tr.TrialContext) -> None:
    raise OSError("could not clean up")


def test_a_python_case_shows_its_observed_prompt_and_its_teardown_error(context: Any, tmp_path: Path) -> None:
    """A Python case has no prompt in its metadata: the timeline starts with the prompt observed in its traffic.
    Its teardown raised, so its trial failed: the summary and the trial say so."""
    report = tr.evaluate([tr.Case("notes via the SDK", _notes_agent, teardown=_leak,
                                  expect_outcome=[expect.contains("milk")])])
    assert report.cases[0].metadata.get("prompt") is None
    html_file = tmp_path / "python-case.html"
    html_file.write_text(report_html(report), encoding="utf-8")
    page = _open(context, html_file)
    trial = page.expand_trial(page.expand_case("notes via the SDK"), 1)
    prompt = trial.locator(".step.prompt")
    assert prompt.count() == 1 and "What do my notes say?" in prompt.inner_text()
    assert "You asked: What do my notes say? Buy milk." in trial.locator(".step.output").inner_text()
    assert "⚠ teardown error" in trial.locator("summary").first.inner_text()
    assert "Teardown error (teardown): OSError: could not clean up" in " ".join(
        trial.locator(".trial-error").inner_text().split())
    page.screenshot(tmp_path / "python-case.png")
    assert page.problems == []


def _awkward_report() -> RunReport:
    """Hostile markup in every field, and a tool result long enough to be collapsed."""
    long_result = "\n".join(f"line {i}: {'x' * 40}" for i in range(200))
    trajectory = Trajectory(turns=[Turn(HOSTILE, [ToolCall("read_file", {"path": HOSTILE}, "c1")], [ToolResult("c1", long_result)]),
                                   Turn("done")])
    trial = TrialResult(trial=1, passed=False, output=HOSTILE, trajectory=trajectory,
                        error=TrialError(type="TimeoutError", message="invoke took longer than 30 s", phase="invoke"))
    case = CaseResult.from_trials(HOSTILE, [trial], tags=[HOSTILE], mode="deterministic", description=HOSTILE,
                                  metadata={"prompt": HOSTILE})
    return RunReport.build([case], trial_count=1, started_at=datetime(2025, 1, 1, tzinfo=timezone.utc), duration_s=1.0,
                           run_id=HOSTILE, config_snapshot={"k": HOSTILE})


def test_hostile_strings_show_as_text_and_long_results_collapse(context: Any, tmp_path: Path) -> None:
    html_file = tmp_path / "awkward.html"
    html_file.write_text(report_html(_awkward_report(), title=HOSTILE), encoding="utf-8")
    page = _open(context, html_file)
    p = page.page
    assert p.title() == HOSTILE
    detail = page.expand_case(HOSTILE)
    trial = page.expand_trial(detail, 1)
    assert HOSTILE in trial.locator(".step.prompt").inner_text()
    assert HOSTILE in trial.locator(".step.output").inner_text()
    assert "Error (invoke): TimeoutError: invoke took longer than 30 s" in trial.locator(".trial-error").inner_text()
    assert "⚠ error" in trial.locator("summary").inner_text()
    assert p.locator("img").count() == 0 and page.dialogs == []
    result = trial.locator(".result pre")
    assert "line 199" not in result.inner_text() and "line 0" in result.inner_text()
    more = trial.locator(".result button.link")
    assert more.inner_text().startswith("Show all (") and more.get_attribute("aria-expanded") == "false"
    more.click()
    assert "line 199" in result.inner_text() and more.get_attribute("aria-expanded") == "true"
    page.screenshot(tmp_path / "awkward.png")
    assert page.problems == []


def test_summary_reads_without_javascript(chromium: Any, run_page_file: Path, tmp_path: Path) -> None:
    ctx = _browser.new_context(chromium, javascript=False)
    try:
        page = _browser.open_report(ctx, run_page_file, wait_ready=False)
        p = page.page
        assert p.locator("#stat-failed .stat-value").inner_text() == "2"
        assert "drawn by JavaScript, which is off" in p.locator(".noscript").inner_text()
        assert p.locator("#case-table").count() == 0
        page.screenshot(tmp_path / "no-js.png")
        assert page.problems == []
    finally:
        ctx.close()


def test_compare_page_highlights_the_regression(context: Any, tmp_path: Path) -> None:
    comparison, before, after = shellpilot_comparison()
    html_file = tmp_path / "compare.html"
    html_file.write_text(comparison_html(comparison, before, after), encoding="utf-8")
    page = _open(context, html_file)
    p = page.page
    rows = p.locator("#delta-table tbody tr.row")
    assert rows.first.get_attribute("data-case") == REGRESSED_CASE  # regressions first
    regression = p.locator("#delta-table tbody tr.regression")
    assert regression.count() == 1 and "REGRESSION" in regression.inner_text()
    assert "PASS → FAIL" in regression.inner_text() and "-1.00" in regression.inner_text()
    plain = p.locator('#delta-table tbody tr.row[data-case="reads-notes"]')
    background = "el => getComputedStyle(el).backgroundColor"
    assert regression.evaluate(background) != plain.evaluate(background)
    assert "REGRESSION" not in plain.inner_text()
    assert p.locator("#stat-regressions .stat-value").inner_text() == "1"
    assert "agent.model" in p.locator("#config-diff").inner_text()
    _choose_status(page, "Regressions")
    assert _names_in(p, "#delta-table") == [REGRESSED_CASE]
    _choose_status(page, "Added")
    assert _names_in(p, "#delta-table") == ["rate-limited-then-ok"]
    _choose_status(page, "All")
    # Expanding the regression shows its trials before (passing) and after (failing, with the denial).
    detail = page.expand_case(REGRESSED_CASE)
    sides = detail.locator(".side-by-side > section")
    assert sides.count() == 2
    assert sides.nth(0).locator("details.trial.passed").count() == 3
    assert sides.nth(1).locator("details.trial.failed").count() == 3
    assert sides.nth(1).locator(".call.denied").count() == 1  # the first failing trial opens by itself
    page.screenshot(tmp_path / "compare.png")
    assert page.problems == []


def _names_in(p: Any, table: str) -> list[str]:
    return p.locator(f"{table} tbody tr.row").evaluate_all("rows => rows.map(r => r.dataset.case)")


def test_a_thousand_cases_of_ten_trials_open_fast(context: Any, tmp_path: Path) -> None:
    html_file = tmp_path / "large.html"
    html_file.write_text(report_html(synthetic_report()), encoding="utf-8")
    page = _open(context, html_file)
    p = page.page
    nodes = page.node_count()
    ready_ms = p.evaluate("performance.now()")
    print(f"\n1,000 x 10 report: {html_file.stat().st_size / 1e6:.1f} MB, opened in {page.load_ms:.0f} ms "
          f"(page ready {ready_ms:.0f} ms after navigation), {nodes:,} DOM nodes")
    assert nodes < 5000 and page.load_ms < 10_000
    assert p.locator("#case-table-count").inner_text() == "Showing 1–50 of 1,000 cases"
    p.get_by_role("button", name="Next ›").click()
    assert p.locator("#case-table-count").inner_text() == "Showing 51–100 of 1,000 cases"
    # Opening one case adds its detail only (its first failing trial's timeline included), not the run's.
    failing = p.locator("#case-table tbody tr.status-failed button.expander").first
    failing.click()
    assert p.locator(".trial-body").count() == 1
    assert page.node_count() < nodes + 1500
    page.screenshot(tmp_path / "large.png", full_page=False)
    assert page.problems == []


def test_compare_page_shows_tests_an_interrupted_run_did_not_finish(context: Any, tmp_path: Path) -> None:
    _, before, after = shellpilot_comparison()
    unfinished = after.cases[0].name
    cut = after.model_copy(update={"cases": after.cases[1:], "unfinished_cases": [unfinished], "status": "interrupted"})
    comparison = compare(before, cut)
    html_file = tmp_path / "interrupted.html"
    html_file.write_text(comparison_html(comparison, before, cut), encoding="utf-8")
    page = _open(context, html_file)
    p = page.page
    row = p.locator(f'#delta-table tbody tr.row[data-case="{unfinished}"]')
    assert "not finished" in row.inner_text()
    _choose_status(page, "Not finished")
    assert _names_in(p, "#delta-table") == [unfinished]
    _choose_status(page, "All")
    detail = page.expand_case(unfinished)
    assert "Did not finish in the later run (interrupted)." in detail.inner_text()
    assert page.problems == []


def test_side_and_sub_conversations_are_folded_under_the_main_timeline(context: Any, tmp_path: Path) -> None:
    """A title request and a sub-agent are shown beside the main turns, collapsed, and never numbered as turns."""
    from trialrun.trajectory import Conversation

    sub = Conversation("sub", [Turn("", [ToolCall("Bash", {"command": "rm -rf build"}, "s1")], [ToolResult("s1", "")]),
                               Turn("deleted")], "Delete build/", None, ["Bash"], 2)
    side = Conversation("side", [Turn("Cleaning up")], "Clean the build folder.", "Generate a title", [], 1)
    trajectory = Trajectory(turns=[Turn("", [ToolCall("Task", {"prompt": "Delete build/"}, "t1")], [ToolResult("t1", "deleted")]),
                                   Turn("Cleaned up.")], prompt="Clean the build folder.",
                            other_conversations=[side, sub], model_calls=5, offered_tools=["Task", "Bash"])
    trial = TrialResult(trial=1, passed=True, output="Cleaned up.", trajectory=trajectory)
    case = CaseResult.from_trials("delegates", [trial], tags=[], mode="deterministic")
    report = RunReport.build([case], trial_count=1, started_at=datetime(2025, 1, 1, tzinfo=timezone.utc), duration_s=1.0)
    html_file = tmp_path / "conversations.html"
    html_file.write_text(report_html(report), encoding="utf-8")
    page = _open(context, html_file)
    expanded = page.expand_trial(page.expand_case("delegates"), 1)
    assert expanded.locator(".step.turn:not(.nested .step)").count() >= 2
    folded = expanded.locator(".step.conversation")
    assert folded.count() == 2
    assert "side request 1 (no tools" in folded.nth(0).inner_text()
    assert "sub-agent 2 (tools: Bash" in folded.nth(1).inner_text() and "not counted as turns" in folded.nth(1).inner_text()
    assert not folded.nth(1).locator("code.tool-name").first.is_visible()  # collapsed by default
    folded.nth(1).locator("summary").click()
    assert folded.nth(1).locator("code.tool-name").first.inner_text() == "Bash"
    assert "2 side/sub conversations" in expanded.locator("summary").first.inner_text()
    page.screenshot(tmp_path / "conversations.png")
    assert page.problems == []


_OVERFLOW = """detail => {
  const limit = window.innerWidth;
  const out = [];
  for (const el of detail.querySelectorAll('td > * , td > * *')) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > limit + 0.5) out.push(`${el.tagName}.${el.getAttribute('class') || ''} ends at ${Math.round(r.right)}`);
  }
  for (const cell of detail.querySelectorAll('td.reason')) {
    if (cell.scrollWidth > cell.clientWidth + 1) out.push(`a verdict reason is cut: ${cell.textContent}`);
  }
  return out;
}"""


@pytest.mark.parametrize("page_kind", ["run", "compare"])
def test_an_expanded_case_fits_a_390px_phone(chromium: Any, run_page_file: Path, tmp_path: Path, page_kind: str) -> None:
    if page_kind == "run":
        html_file = run_page_file
    else:
        html_file = tmp_path / "compare.html"
        html_file.write_text(comparison_html(*shellpilot_comparison()), encoding="utf-8")
    phone = _browser.new_context(chromium, width=390, height=844)
    try:
        page = _open(phone, html_file)
        detail = page.expand_case(DENIAL_CASE)
        trial = page.expand_trial(detail, 1)
        reasons = trial.locator("td.reason").all_inner_texts()
        assert any("denied" in r for r in reasons)  # the verdict reasons the old layout cut off at the right
        assert detail.evaluate(_OVERFLOW) == []
        for cell in trial.locator("td.reason").all():
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        assert page.problems == []
        page.screenshot(tmp_path / f"phone-{page_kind}.png")
    finally:
        phone.close()
