"""`trialrun regrade` keeps what people said (issue 33.2): hand grades and verdict overrides of the run are carried
onto the regraded run, listed in its output, never dropped (before, the heuristic came back: output_quality 0.0);
the regraded run does not become latest (it ran no agent). Read from the result files' JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from trialrun.cli import main

RESULTS = Path("state") / "eval"


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _case(path: Path, name: str) -> dict:
    return next(c for c in json.loads(path.read_text())["cases"] if c["name"] == name)


def _score_verdict(trial: dict) -> dict:
    return next(v for v in trial["verdicts"] if v.get("kind") == "score")


def test_a_regrade_carries_hand_grades_and_overrides_forward_and_says_so(project: Path, cli) -> None:
    assert cli("run", "all", "-k", "2").exit_code == 1
    (original,) = sorted((project / RESULTS).glob("results_*.json"))
    heuristic = _score_verdict(_case(original, "read-file")["trials"][1])["details"]["sub_scores"]["output_quality"]
    assert _cli("grade", "latest", "read-file", "0.15", "--trial", "2", "--comment", "misses Tuesday")[0] == 0
    assert _cli("grade", "latest", "list-dir", "--trial", "1", "--fail", "rubric", "--reason", "names two files")[0] == 0
    graded = {name: _case(original, name) for name in ("read-file", "list-dir")}
    code, out = _cli("regrade")
    assert code == 1, out
    (regraded,) = [p for p in sorted((project / RESULTS).glob("results_*.json")) if p != original]
    assert "carried forward from" in out and "2 hand grade(s) and override(s)" in out, out
    assert "read-file trial 2: output quality 0.15 by hand" in out and "(the heuristic now says" in out
    assert "list-dir trial 1: override of rubric(" in out and "to fail" in out
    # the hand grade: the same quality, audit and pass as in the graded run; the judge's fresh opinion beside it
    after = _case(regraded, "read-file")
    verdict = _score_verdict(after["trials"][1])
    audit = verdict["details"]["hand_grade"]
    assert verdict["details"]["sub_scores"]["output_quality"] == 0.15 and verdict["details"]["quality_by"] == "hand"
    before_audit = _score_verdict(graded["read-file"]["trials"][1])["details"]["hand_grade"]
    assert {k: audit[k] for k in ("by", "at", "via", "comment")} == {k: before_audit[k] for k in ("by", "at", "via", "comment")}
    assert audit["origin"] == json.loads(original.read_text())["run_id"]
    assert audit["machine"] == {"quality": heuristic, "by": "heuristic"}
    assert [t["passed"] for t in after["trials"]] == [t["passed"] for t in graded["read-file"]["trials"]]
    assert after["score"] == graded["read-file"]["score"]
    # the override: the same verdict failed, with its reason and author
    overridden = _score_verdict(_case(regraded, "list-dir")["trials"][0])
    assert overridden["passed"] is False and overridden["details"]["override"]["reason"] == "names two files"
    assert _case(regraded, "list-dir")["trials"][0]["passed"] is False
    # latest.json stays on the agent's run; the regrade said so
    assert (project / RESULTS / "latest.json").resolve() == original.resolve()
    assert "latest.json still points at the last run of the agent" in out


def test_a_regrade_with_a_judge_measures_the_judge_against_the_hand_grade(project: Path, cli) -> None:
    assert cli("run", "read-file").exit_code == 0
    assert _cli("grade", "latest", "read-file", "0.4")[0] == 0
    (project / "judge.yaml").write_text("read-file:\n  - reply: '0.25'\n")
    toml = project / "trialrun.toml"
    toml.write_text('judge = "scripted:judge.yaml"\n' + toml.read_text())
    code, out = _cli("regrade")
    assert "the scripted:judge.yaml now says 0.25" in out, out
    regraded = max((project / RESULTS).glob("results_*.json"))
    details = _score_verdict(_case(regraded, "read-file")["trials"][0])["details"]
    assert details["sub_scores"]["output_quality"] == 0.4  # the person's grade stands
    assert details["hand_grade"]["machine"] == {"quality": 0.25, "by": "scripted:judge.yaml"}  # the judge's, beside it
    # and the agreement the report shows is the judge's against the person: 0.25 vs 0.4 (the level 0.5): disagreed
    shown = cli("report", regraded.stem, "--exit-zero").output
    assert "scripted:judge.yaml" in shown and "0/1 agreed" in shown, shown


def test_a_grade_given_while_the_regrade_grades_is_carried_too(project: Path, cli, monkeypatch) -> None:
    """The regrade grades with no lock held (a judge may take minutes), then reads the run again under the folder's
    lock: a grade a person gives meanwhile, from another `trialrun grade` process, is on the regraded run too (a
    regrade that carried only what it read at its start would drop it)."""
    import os
    import subprocess
    import sys

    import trialrun
    import trialrun.suite._regrade as regrading

    assert cli("run", "read-file").exit_code == 0
    (original,) = sorted((project / RESULTS).glob("results_*.json"))
    real = regrading.regrade_report
    env = {**os.environ, "PYTHONPATH": str(Path(trialrun.__file__).resolve().parents[1])}

    def grading_meanwhile(*args, **kwargs):  # type: ignore[no-untyped-def]
        done = real(*args, **kwargs)
        graded = subprocess.run([sys.executable, "-m", "trialrun", "grade", "latest", "read-file", "0.35", "--comment",
                                 "given meanwhile"], cwd=project, env=env, capture_output=True, text=True, timeout=120)
        assert graded.returncode == 0, graded.stdout + graded.stderr
        return done

    monkeypatch.setattr(regrading, "regrade_report", grading_meanwhile)
    code, out = _cli("regrade")
    assert code == 0, out
    assert "read-file trial 1: output quality 0.35 by hand" in out, out
    (regraded,) = [p for p in sorted((project / RESULTS).glob("results_*.json")) if p != original]
    details = _score_verdict(_case(regraded, "read-file")["trials"][0])["details"]
    assert details["sub_scores"]["output_quality"] == 0.35 and details["hand_grade"]["comment"] == "given meanwhile"
    assert _score_verdict(_case(original, "read-file")["trials"][0])["details"]["sub_scores"]["output_quality"] == 0.35
