"""`trialrun run` options: selection, trials, progress, JSON, labels and the config snapshot, live canaries, a
judge, a custom agent, the job summary, and Ctrl-C."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest

SLOW_AGENT = '''
import time
from pathlib import Path

def run(prompt, ctx):
    """A custom agent: (prompt, ctx) -> output. It uses the configured model through ctx.model."""
    import httpx, json
    if prompt.startswith("sleep"):
        Path("started.txt").write_text("x")
        time.sleep(float(prompt.split()[1]))
    with httpx.Client(transport=ctx.model) as client:
        body = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]}
        reply = client.post("https://api.openai.com/v1/chat/completions", json=body).json()
    return reply["choices"][0]["message"]["content"]
'''


def _latest(project: Path) -> dict:
    return json.loads((project / "state" / "eval" / "latest.json").read_text())


def test_tag_and_name_selection(project: Path, cli) -> None:
    assert cli("run", "--tag", "safety").exit_code == 1  # refuse-dangerous-command fails with model v1
    assert [t["id"] for t in _latest(project)["tests"]] == ["refuse-dangerous-command"]
    assert cli("run", "--name", "read-file", "--name", "list-dir").exit_code == 0
    assert [t["id"] for t in _latest(project)["tests"]] == ["read-file", "list-dir"]
    result = cli("run", "--tag", "nope")
    assert result.exit_code == 2 and "has the tag 'nope'" in result.output


def test_json_output_is_the_result_file(project: Path, cli) -> None:
    result = cli("run", "all", "--json")
    data = json.loads(result.output)
    assert data == _latest(project)
    assert "running" not in result.output


def test_labels_and_config_snapshot_hold_no_secrets(project: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-123")
    cli("run", "read-file", "--label", "change=shorter prompt", "--label", "ticket=42")
    snapshot = _latest(project)["config_snapshot"]
    assert snapshot["labels"] == {"change": "shorter prompt", "ticket": "42"}
    for key in ("model", "api", "agent", "skills_loaded", "tools", "system_prompt_sha256", "policy", "suite",
                "trialrun_version", "python_version", "git_commit"):
        assert key in snapshot
    assert snapshot["tools"] == ["run_command", "read_file", "write_file", "list_dir"]
    assert snapshot["policy"] == {"default": "allow", "deny_commands": ["rm -rf", "curl | sh"]}
    assert snapshot["suite"]["path"] == "state/eval/tests.json" and len(snapshot["suite"]["sha256"]) == 64
    text = (project / "state" / "eval" / "latest.json").read_text()
    assert "SECRET" not in text and "sk-test" not in text


def test_config_changes_show_in_compare(project: Path, cli) -> None:
    cli("run", "all")
    (project / "trialrun.toml").write_text((project / "trialrun.toml").read_text().replace('model_name = "gpt-4.1-mini"', 'model_name = "gpt-4.1"'))
    cli("run", "all")
    out = cli("compare").output
    assert "model_name: gpt-4.1-mini -> gpt-4.1" in out


def test_live_canary_tests_are_skipped_and_listed(project: Path, cli, write_suite) -> None:
    suite = json.loads((project / "state" / "eval" / "tests.json").read_text())
    suite[0]["mode"] = "live_canary"
    write_suite(project / "state" / "eval" / "tests.json", suite)
    result = cli("run", "all")
    assert "skipped read-file: live canary" in result.output
    data = _latest(project)
    assert data["skipped_case_count"] == 1 and data["skipped_cases"][0]["name"] == "read-file"
    cli("run", "all", "--include-live-canary")
    assert _latest(project)["skipped_case_count"] == 0


def test_trials_per_test_in_the_suite(project: Path, cli, write_suite) -> None:
    suite = json.loads((project / "state" / "eval" / "tests.json").read_text())
    suite[0]["trials"] = 3
    write_suite(project / "state" / "eval" / "tests.json", suite)
    cli("run", "all")
    cases = {c["name"]: c for c in _latest(project)["cases"]}
    assert len(cases["read-file"]["trials"]) == 3 and len(cases["list-dir"]["trials"]) == 1


def test_scripted_judge_decides_output_quality(project: Path, cli) -> None:
    (project / "judge.yaml").write_text("read-file:\n  - reply: '0.25'\n")
    result = cli("run", "read-file", "--judge", "scripted:judge.yaml")
    assert result.exit_code == 0
    case = _latest(project)["cases"][0]
    verdict = case["trials"][0]["verdicts"][0]
    assert case["sub_scores"]["output_quality"] == 0.25 and verdict["details"]["quality_by"] == "judge"


def test_custom_agent_target(project: Path, cli) -> None:
    (project / "my_agent.py").write_text(SLOW_AGENT)
    (project / "echo.yaml").write_text("read-file:\n  - reply: 'notes: Sam on Tuesday, buy milk'\n")
    result = cli("run", "read-file", "--agent", "my_agent:run", "--model", "scripted:echo.yaml")
    # the agent offers the model no tools, so the test's read_file could never be used: said, not just scored low
    assert result.exit_code == 1, result.output
    assert "'read_file' was never offered to the model (offered: no tools)" in result.output
    case = _latest(project)["cases"][0]
    assert case["trials"][0]["output"] == "notes: Sam on Tuesday, buy milk"
    assert case["turns"] == 1  # the trajectory was observed through ctx.model
    assert _latest(project)["config_snapshot"]["agent"] == "my_agent:run"


def _junit_schema() -> ModuleType:
    """The strict JUnit XML checker of the renderer's tests (tests/ is not a package: load it by path)."""
    path = Path(__file__).resolve().parents[1] / "render" / "_junit_schema.py"
    spec = importlib.util.spec_from_file_location("_junit_schema_cli", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _testcases(path: Path) -> dict[str, ET.Element]:
    return {case.get("name", ""): case for case in ET.parse(path).getroot().iter("testcase")}


def test_markdown_junit_and_job_summary(project: Path, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert cli("run", "all", "-k", "3", "--markdown", "run.md", "--junit", "run.xml").exit_code == 1
    markdown = (project / "run.md").read_text()
    assert "read-file" in markdown and "❌ failed" in markdown
    assert summary.read_text() == markdown  # the job summary got the same Markdown
    junit = (project / "run.xml").read_text()
    _junit_schema().assert_valid(junit)
    cases = _testcases(project / "run.xml")
    assert sorted(cases) == sorted(t["id"] for t in json.loads((project / "state" / "eval" / "tests.json").read_text()))
    # A suite's cases are classed by the suite as pytest's JUnit XML names it (state/eval/tests.json ->
    # "state.eval.tests.json"), as is the testsuite.
    assert {case.get("classname") for case in cases.values()} == {"state.eval.tests.json"}
    assert ET.fromstring(junit).find("testsuite").get("name") == "state.eval.tests.json"  # type: ignore[union-attr]
    refused = cases["refuse-dangerous-command"].find("failure")
    assert refused is not None and refused.get("message", "").startswith("never_ran('rm -rf')")

    size = summary.stat().st_size
    assert cli("run", "all", "--model", "scripted:model_v2.yaml", "--no-summary").exit_code == 1
    assert summary.stat().st_size == size  # --no-summary: nothing appended
    cli("compare")
    assert summary.stat().st_size > size and "summarise-notes" in summary.read_text()[size:]
    cli("report", "--html", "report.html")
    assert (project / "report.html").read_text().lstrip().lower().startswith("<!doctype html")


def test_compare_writes_html_and_markdown_and_respects_no_summary(project: Path, cli, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cli("run", "all")
    cli("run", "all", "--model", "scripted:model_v2.yaml")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = cli("compare", "--markdown", "compare.md", "--html", "compare.html", "--no-summary")
    assert result.exit_code == 0, result.output
    assert not summary.exists()  # --no-summary: the job summary is not touched
    markdown = (project / "compare.md").read_text()
    assert markdown.startswith("## ⚠️ trialrun compare: ") and markdown.splitlines()[0].endswith(" — 1 test worse")
    assert "**Regression in summarise-notes**: 1.00 → 0.17" in markdown
    assert "| `model` | `scripted:model_v1.yaml` | `scripted:model_v2.yaml` |" in markdown  # the config diff
    page = (project / "compare.html").read_text()
    assert page.lstrip().lower().startswith("<!doctype html") and "trialrun · comparison" in page
    assert ('<div class="stat fail" id="stat-regressions"><dt>Regressions</dt><dd><span class="stat-value">1<'
            in page)
    assert "<li><code>summarise-notes</code>: 1.00 → 0.17" in page
    # Without --no-summary, compare appends the same Markdown to the job summary.
    assert cli("compare").exit_code == 0
    assert summary.read_text() == markdown


def test_report_writes_junit_and_markdown(project: Path, cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("run", "all", "-k", "2")
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = cli("report", "--junit", "report.xml", "--markdown", "report.md")
    assert result.exit_code == 0  # the files were written (the run has a failing case: --verdict would say 1)
    assert not summary.exists()  # report shows a run; only run and compare write the job summary
    junit = (project / "report.xml").read_text()
    _junit_schema().assert_valid(junit)
    root = ET.fromstring(junit)
    suite = root.find("testsuite")
    assert suite is not None and (suite.get("name"), suite.get("tests"), suite.get("failures")) == (
        "state.eval.tests.json", "5", "2")
    cases = _testcases(project / "report.xml")
    assert {case.get("classname") for case in cases.values()} == {"state.eval.tests.json"}
    assert [name for name, case in cases.items() if case.find("failure") is not None] == [
        "search-json", "refuse-dangerous-command"]
    properties = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert properties["trialrun.trials"] == "2" and properties["trialrun.case.read-file.pass_pow_k"] == "1"
    markdown = (project / "report.md").read_text()
    latest = json.loads((project / "state" / "eval" / "latest.json").read_text())
    assert markdown.startswith(f"## ❌ trialrun run {latest['run_id']}".replace("_", "\\_"))
    assert "refuse-dangerous-command" in markdown and "<summary><b>refuse-dangerous-command</b>" in markdown


def test_skill_install(project: Path, cli) -> None:
    result = cli("skill", "install", ".claude/skills")
    assert result.exit_code == 0
    text = (project / ".claude" / "skills" / "eval" / "SKILL.md").read_text()
    assert "/eval compare" in text and "测试效果" in text and "trialrun compare" in text
    assert cli("skill", "install", ".claude/skills").exit_code == 2
    assert cli("skill", "install", ".claude/skills", "--force").exit_code == 0


def _subprocess_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def test_progress_bar_on_a_terminal_for_runs_over_a_second(project: Path, write_suite) -> None:
    (project / "my_agent.py").write_text(SLOW_AGENT)
    write_suite(project / "state" / "eval" / "tests.json", [
        {"id": f"t{i}", "prompt": "sleep 0.5", "expected_tools": [], "max_turns": 1, "success_criteria": "Says ok",
         "expect": {"contains": "ok"}} for i in range(4)
    ])
    (project / "s.yaml").write_text("".join(f"t{i}:\n  - reply: ok\n" for i in range(4)))
    args = [sys.executable, "-m", "trialrun", "run", "all", "--agent", "my_agent:run", "--model", "scripted:s.yaml", "-j", "1"]
    tty = subprocess.run(args, capture_output=True, text=True, env={**_subprocess_env(), "TTY_COMPATIBLE": "1"}, timeout=60)
    assert "running" in tty.stdout and "4/4" not in tty.stdout.split("running")[0]
    plain = subprocess.run(args, capture_output=True, text=True, env={**_subprocess_env(), "TTY_COMPATIBLE": "0"}, timeout=60)
    assert "running" not in plain.stdout and plain.returncode == 0
    # not a terminal (a CI log): plain lines once the run is past a second, when each test finishes
    assert "\x1b[" not in plain.stdout and "progress: 4/4 trials · 4 passed · " in plain.stdout
    done_lines = [line for line in plain.stdout.splitlines() if line.endswith(" done")]
    assert done_lines and all(line.startswith("progress: ") for line in done_lines)
    assert "t3 done" in plain.stdout
    as_json = subprocess.run([*args, "--json"], capture_output=True, text=True, env={**_subprocess_env(), "TTY_COMPATIBLE": "1"}, timeout=60)
    assert "running" not in as_json.stdout + as_json.stderr
    json.loads(as_json.stdout)


def test_no_progress_bar_on_a_terminal_for_a_run_under_a_second(project: Path) -> None:
    """The bar is for runs over a second: a fast run on a terminal prints the table and nothing else."""
    args = [sys.executable, "-m", "trialrun", "run", "read-file", "list-dir"]
    env = {**_subprocess_env(), "TTY_COMPATIBLE": "1", "TTY_INTERACTIVE": "1", "COLUMNS": "100"}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "\x1b[" in done.stdout  # rich did treat the output as a terminal (colours)...
    assert "running" not in done.stdout and "━" not in done.stdout  # ...and still drew no bar
    assert "read-file" in done.stdout and "2/2 passed" in done.stdout


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_saves_finished_tests_as_interrupted_and_exits_130(project: Path, write_suite) -> None:
    (project / "my_agent.py").write_text(SLOW_AGENT)
    write_suite(project / "state" / "eval" / "tests.json", [
        {"id": "quick", "prompt": "hello", "expected_tools": [], "max_turns": 1, "success_criteria": "Says hi",
         "expect": {"contains": "hi"}},
        {"id": "slow", "prompt": "sleep 30", "expected_tools": [], "max_turns": 1, "success_criteria": "Says late",
         "expect": {"contains": "late"}},
    ])
    (project / "s.yaml").write_text("quick:\n  - reply: hi\nslow:\n  - reply: late\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "trialrun", "run", "all", "--agent", "my_agent:run", "--model", "scripted:s.yaml", "-j", "1"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_subprocess_env(),
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C on even under `nohup ... &`
    )
    deadline = time.time() + 30
    while not (project / "started.txt").exists():
        assert proc.poll() is None and time.time() < deadline, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, (out, err)
    assert "interrupted: saved the 1 finished test(s)" in err
    assert "Traceback" not in err
    data = _latest(project)
    assert data["status"] == "interrupted"
    assert [t["id"] for t in data["tests"]] == ["quick"] and data["unfinished_cases"] == ["slow"]


def test_report_writing_a_file_prints_one_line_and_exits_0_once_written(project: Path, cli) -> None:
    assert cli("run", "all", "--model", "scripted:model_v2.yaml").exit_code == 1  # one test fails
    result = cli("report", "--html", "report.html")
    assert result.exit_code == 0  # it wrote the report it was asked for; the run's verdict only with --verdict
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("wrote report.html: 4/5 passed · 1 failed · pass@1 0.80")
    assert (project / "report.html").is_file()
    table = cli("report", "--html", "report.html", "--table")
    assert "summarise-notes" in table.stdout and len(table.stdout.splitlines()) > 5
    assert cli("report", "--exit-zero").exit_code == 0
    assert cli("report", "--html", "report.html", "--exit-zero").exit_code == 0
    assert cli("report").exit_code == 1  # the table is the run's result: exits as `run` did
    assert cli("report", "--html", "report.html", "--verdict").exit_code == 1
    assert cli("report", "--junit", "r.xml", "--markdown", "r.md").exit_code == 0
    assert cli("report", "--junit", "r.xml", "--verdict").exit_code == 1
