"""`trialrun grade` as a person uses it, each result read from the result file's JSON (never through trialrun):
one trial or every trial, output quality from 0 to 0.5 in steps of 0.05, a verdict overridden with a reason (and
taken back), results saved by the pytest plugin graded, and the one rule for a trial's pass kept through all of it
(a trial that failed only in its teardown stays failed whatever a person grades)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

import trialrun as tr
from trialrun.cli import main
from trialrun.expect.rubric import rubric
from trialrun.report.store import ResultsStore
from trialrun.view import create_app

RESULTS = Path("state") / "eval"


def _grade(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["grade", *args])
    return result.exit_code, result.output


def _data(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _case(data: dict, name: str) -> dict:
    return next(c for c in data["cases"] if c["name"] == name)


def _rubric_verdict(trial: dict) -> dict:
    return next(v for v in trial["verdicts"] if v.get("kind") == "score")


def _teardown_failed_run(folder: Path) -> Path:
    """A run whose every trial was graded a pass but whose teardown raised: the trials failed (the runner's rule)."""
    def teardown(ctx: tr.TrialContext) -> None:
        raise RuntimeError("could not remove the scratch database")

    case = tr.Case(name="cleanup", invoke=lambda ctx: "the answer names apples and pears",
                   expect_outcome=[rubric(success_criteria="apples pears", threshold=0.7)], teardown=teardown)
    return ResultsStore(folder).save(tr.evaluate([case], trials=2))


def _assert_still_failed(path: Path) -> None:
    data = _data(path)
    trials = _case(data, "cleanup")["trials"]
    assert [t["passed"] for t in trials] == [False, False]
    assert all(t["teardown_error"]["message"] == "could not remove the scratch database" for t in trials)
    assert _case(data, "cleanup")["pass_at_1"] == 0.0 and data["pass_at_1"] == 0.0 and data["passed_case_count"] == 0


def test_a_trial_that_failed_only_in_its_teardown_stays_failed_after_a_hand_grade(tmp_path: Path) -> None:
    """Issue 35.1: `trialrun grade` recomputed a trial's pass without its teardown error (pass@1 0.0 -> 1.0)."""
    path = _teardown_failed_run(tmp_path)
    _assert_still_failed(path)
    code, out = _grade(str(path), "cleanup", "0.5")
    assert code == 0 and "failed; run 0/1 passed" in out, out
    _assert_still_failed(path)
    graded = [_rubric_verdict(t)["details"] for t in _case(_data(path), "cleanup")["trials"]]
    assert [(d["quality_by"], d["hand_grade"]["quality"]) for d in graded] == [("hand", 0.5)] * 2  # no --trial: every one
    # an override of its one verdict to pass does not pass it either: the teardown error still fails it
    code, out = _grade(str(path), "cleanup", "--trial", "1", "--pass", "rubric", "--reason", "the answer is right")
    assert code == 0, out
    _assert_still_failed(path)


def test_a_trial_that_failed_only_in_its_teardown_stays_failed_after_the_viewers_grade(tmp_path: Path) -> None:
    path = _teardown_failed_run(tmp_path)
    client = TestClient(create_app(tmp_path, token="t0ken"), base_url="http://127.0.0.1")
    for route, form in (("/grade", {"quality": "0.5", "trial": "all"}),
                        ("/override", {"grader": "rubric", "verdict": "pass", "reason": "right", "trial": "2"})):
        posted = client.post(route, data={"token": "t0ken", "run": path.stem, "test": "cleanup", "back": "/", **form},
                             follow_redirects=False)
        assert posted.status_code == 303, posted.text
        _assert_still_failed(path)


@pytest.fixture
def run(project: Path, cli) -> Path:
    assert cli("run", "all", "-k", "2").exit_code == 1
    (path,) = sorted((project / RESULTS).glob("results_*.json"))
    return path


def test_one_trial_graded_on_the_finer_scale_leaves_the_others_alone(run: Path) -> None:
    before = _case(_data(run), "read-file")
    code, out = _grade("latest", "read-file", "0.35", "--trial", "2", "--comment", "misses the milk")
    assert code == 0 and "output_quality 0.35 in trial 2;" in out, out
    after = _case(_data(run), "read-file")
    assert after["trials"][0] == before["trials"][0]  # trial 1 untouched
    verdict = _rubric_verdict(after["trials"][1])
    subs = verdict["details"]["sub_scores"]
    assert subs["output_quality"] == 0.35
    expected = (subs["tool_accuracy"] + subs["turn_efficiency"] + 2 * 0.35) / 3  # the balanced rubric
    assert verdict["score"] == pytest.approx(expected) and after["trials"][1]["score"] == pytest.approx(expected)
    audit = verdict["details"]["hand_grade"]
    was = _rubric_verdict(before["trials"][1])["details"]["sub_scores"]["output_quality"]
    assert audit["quality"] == 0.35 and audit["previous"] == was and audit["comment"] == "misses the milk"
    assert audit["machine"] == {"quality": was, "by": "heuristic"} and audit["via"] == "cli" and audit["by"] and audit["at"]
    assert after["score"] == pytest.approx((before["trials"][0]["score"] + expected) / 2)
    # graded again: the judge's own grade is still the one it gave, the earlier hand grade is in the history
    assert _grade("latest", "read-file", "0.45", "--trial", "2")[0] == 0
    again = _rubric_verdict(_case(_data(run), "read-file")["trials"][1])["details"]["hand_grade"]
    assert again["machine"] == audit["machine"] and again["previous"] == 0.35
    assert again["history"][-1]["quality"] == 0.35 and again["history"][-1]["comment"] == "misses the milk"


@pytest.mark.parametrize("bad", ["0.33", "0.6", "-0.05", "1", "half", "nan"])
def test_a_grade_off_the_scale_is_refused_and_changes_nothing(run: Path, bad: str) -> None:
    before = run.read_bytes()
    code, out = _grade("latest", "read-file", "--", bad)  # (`--`: -0.05 is a value, not an option)
    assert code == 2 and out.startswith("error: ") and "Traceback" not in out, out
    assert "0 to 0.5" in out
    assert run.read_bytes() == before


def test_an_unknown_trial_or_test_or_no_edit_is_refused(run: Path) -> None:
    before = run.read_bytes()
    for args, said in ((["read-file", "0.25", "--trial", "9"], "has no trial 9"),
                       (["nope", "0.25"], "no test 'nope'"),
                       (["read-file"], "give QUALITY, or one of --pass/--fail/--clear"),
                       (["read-file", "0.25", "--fail", "rubric", "--reason", "x"], "one edit at a time"),
                       (["read-file", "--fail", "rubric"], "an override needs a reason"),
                       (["read-file", "--fail", "never_ran", "--reason", "x"], "has no verdict 'never_ran'")):
        code, out = _grade("latest", *args)
        assert code == 2 and said in out and out.startswith("error: "), (args, out)
    assert run.read_bytes() == before


def test_a_verdict_overridden_with_a_reason_is_kept_audited_shown_and_can_be_taken_back(run: Path, cli) -> None:
    name = "list-dir"
    before = _case(_data(run), name)
    label = _rubric_verdict(before["trials"][0])["grader"]
    assert [t["passed"] for t in before["trials"]] == [True, True] and before["pass_at_1"] == 1.0
    original = run.with_name("before-override.json")
    original.write_bytes(run.read_bytes())
    code, out = _grade("latest", name, "--trial", "1", "--fail", "rubric", "--reason", "it tried rm -rf twice")
    assert code == 0 and f"{label} overridden to fail in trial 1" in out, out
    after = _case(_data(run), name)
    verdict = next(v for v in after["trials"][0]["verdicts"] if v["grader"] == label)
    override = verdict["details"]["override"]
    assert verdict["passed"] is False and after["trials"][0]["passed"] is False
    assert override["passed"] is False and override["was"] is True and override["reason"] == "it tried rm -rf twice"
    assert override["by"] and override["at"] and override["via"] == "cli" and override["grader_reason"]
    assert "overridden by hand to FAIL" in verdict["reason"] and "it tried rm -rf twice" in verdict["reason"]
    assert after["trials"][1] == before["trials"][1] and after["pass_at_1"] == before["pass_at_1"] / 2
    assert after["trials"][0]["score_passed"] is False  # the per-kind roll-up follows
    # shown wherever verdicts are: the terminal report, Markdown, HTML
    shown = cli("report", "--exit-zero")
    assert "overridden by hand to FAIL" in shown.output and "it tried rm -rf twice" in shown.output
    for flag, name_ in (("--markdown", "r.md"), ("--html", "r.html")):
        assert cli("report", flag, name_, "--exit-zero").exit_code == 0
        assert "it tried rm -rf twice" in Path(name_).read_text()
    compared = cli("compare", str(original), str(run))  # the regression it makes names the override and its reason
    assert f"regression in {name}" in compared.output
    assert "overridden by hand to FAIL" in compared.output and "it tried rm -rf twice" in compared.output
    # taken back: the grader's own verdict and reason again; the override kept in the audit trail
    assert _grade("latest", name, "--trial", "1", "--clear", label)[0] == 0
    cleared = _case(_data(run), name)
    verdict = next(v for v in cleared["trials"][0]["verdicts"] if v["grader"] == label)
    assert verdict["passed"] is True and verdict["reason"] == override["grader_reason"]
    assert verdict["details"]["override_history"][0]["reason"] == "it tried rm -rf twice"
    assert verdict["details"]["override_history"][1]["cleared"] is True
    assert cleared["pass_at_1"] == before["pass_at_1"]


def test_a_grade_through_a_symlinked_result_file_is_refused(run: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes(run.read_bytes())
    linked = run.with_name("results_20990101_000000.json")
    linked.symlink_to(outside)
    before = outside.read_bytes()
    for ref in (str(linked), linked.stem):
        code, out = _grade(ref, "read-file", "0.25")
        assert code == 2 and ("symbolic link" in out or "not in the results folder" in out), out
    assert outside.read_bytes() == before
    # the viewer's form refuses it the same way (one check, `ResultsStore.writable`), and says why
    client = TestClient(create_app(run.parent, token="t0ken"), base_url="http://127.0.0.1")
    for form in ({"quality": "0.25", "trial": "all"}, {"trial": "1", "grader": "rubric", "verdict": "fail",
                                                       "reason": "by a link"}):
        posted = client.post("/grade" if "quality" in form else "/override", follow_redirects=False,
                             data={"token": "t0ken", "run": linked.stem, "test": "read-file", "back": "/", **form})
        said = "symbolic link" in posted.text or "not in the results folder" in posted.text
        assert posted.status_code >= 400 and said, (posted.status_code, posted.text[:300])
    assert outside.read_bytes() == before
    # latest.json, a link the store made to a result file of the folder, still grades that file in place
    code, out = _grade("latest", "read-file", "0.25")
    assert code == 0, out
    assert (run.parent / "latest.json").is_symlink() and not run.is_symlink()


def test_results_saved_by_the_pytest_plugin_can_be_graded(tmp_path: Path) -> None:
    """A plugin case has no rubric: a hand grade adds a verdict of its own (score quality/0.5, pass mark 0.7)."""
    (tmp_path / "test_agent.py").write_text(textwrap.dedent('''
        import trialrun as tr

        @tr.case(expect_outcome=[tr.expect.contains("Paris")])
        def capital(ctx):
            return "The capital of France is Paris."
    '''))
    env = {**os.environ, "PYTHONPATH": str(Path(tr.__file__).resolve().parents[1])}
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--trialrun-save",
                          "test_agent.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (path,) = (tmp_path / RESULTS).glob("results_*.json")
    name = _data(path)["cases"][0]["name"]
    code, out = _grade(str(path), name, "0.3", "--comment", "right, but no source")
    assert code == 0 and "failed" in out, out  # 0.3/0.5 = 0.6, below the pass mark
    case = _case(_data(path), name)
    hand = next(v for v in case["trials"][0]["verdicts"] if v["grader"] == "output quality (graded by hand)")
    assert hand["score"] == pytest.approx(0.6) and hand["passed"] is False and case["passed"] is False
    assert hand["details"]["hand_grade"]["comment"] == "right, but no source"
    assert _grade(str(path), name, "0.4")[0] == 0  # graded again: the same verdict, not a second one
    case = _case(_data(path), name)
    hands = [v for v in case["trials"][0]["verdicts"] if v["grader"] == "output quality (graded by hand)"]
    assert len(hands) == 1 and hands[0]["score"] == pytest.approx(0.8) and case["passed"] is True
    assert case["sub_scores"] == {"output_quality": 0.4}
    # and its own verdict can be overridden
    code, out = _grade(str(path), name, "--fail", "contains", "--reason", "Paris, Texas")
    assert code == 0 and _case(_data(path), name)["passed"] is False, out
