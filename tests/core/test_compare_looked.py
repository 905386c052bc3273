"""No verdict without looking, in compare's verdict: a gate that could not have seen a regression must not pass, and
no word may say more than its evidence. Each case below is a comparison a user can make from real result files;
the truth is in the trials themselves (what each recorded it talked to, what its verdicts saw), not in the words.

- An agent that now crashes before its first request (its trials talked to no model) against a scripted run was
  judged as live: 1/1 -> 0/1 "cannot tell", and the gate passed an agent that no longer starts.
- A run compared with itself passed the gate.
- A safety claim that no trial of the earlier run examined (a new grader, or earlier trials that errored before
  grading) and that fails after was no breach: an agent that crashed every trial and then ran `rm -rf ./*` every
  trial was "not worse".
- With no pooled evidence (skill-format files without `passed`) the run was "not worse" while every test could not
  tell.
- `threshold=1` made "not worse" rule out nothing: a 3/3 -> 0/3 collapse was "not worse".
And what already held, kept so: no shared test, every test unfinished, every test skipped, a safety claim that
passed vacuously before (nothing ran) and fails after.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from trialrun.expect._base import Verdict
from trialrun.report.compare import compare
from trialrun.report.results import CaseResult, RunReport, TrialError, TrialResult
from trialrun.report.store import load_report

START = datetime(2026, 7, 1, tzinfo=timezone.utc)
CRASH = TrialError(type="RuntimeError", message="agent crashed at startup", phase="invoke")
RM = Verdict(passed=False, grader="never_ran('rm -rf')", reason="runs `rm -rf './*'` (in `rm -rf ./*`) via run_command")
NOTHING_RAN = Verdict(passed=True, grader="never_ran('rm -rf')", reason="none of 0 commands ran 'rm -rf'")
ANSWERED = Verdict(passed=True, grader="contains('milk')", reason="output contains 'milk'")


def _trial(n: int, passed: bool, models: list[str] | None, verdicts: list[Verdict] | None = None,
           error: TrialError | None = None) -> TrialResult:
    return TrialResult(trial=n, passed=passed, models=models, verdicts=verdicts or [], error=error)


def _run(run_id: str, cases: dict[str, list[TrialResult]], *, hours: int = 0, unfinished: list[str] | None = None,
         skipped: list[str] | None = None, snapshot: dict[str, object] | None = None) -> RunReport:
    built = [CaseResult.from_trials(name, trials, tags=[], mode="deterministic") for name, trials in cases.items()]
    built += [CaseResult(name=name, skipped=True, skip_reason="needs a key") for name in skipped or []]
    return RunReport.build(built, trial_count=max([len(t) for t in cases.values()] or [1]),
                           started_at=START + timedelta(hours=hours), duration_s=0, run_id=run_id,
                           unfinished=unfinished or [], status="interrupted" if unfinished else "completed",
                           config_snapshot=snapshot or {})


@pytest.mark.parametrize("k", [1, 3])
def test_a_scripted_test_whose_agent_now_crashes_before_its_first_request_is_worse(k: int) -> None:
    before = _run("a", {"read-notes": [_trial(n, True, ["scripted"]) for n in range(1, k + 1)]})
    after = _run("b", {"read-notes": [_trial(n, False, [], error=CRASH) for n in range(1, k + 1)]}, hours=1)
    comparison = compare(before, after)
    [delta] = comparison.cases
    assert (delta.word, delta.basis, delta.chance) == ("worse", "deterministic", None)  # was: cannot tell (live)
    assert comparison.pairing == "deterministic" and comparison.gate is not None and comparison.gate.failed
    assert comparison.models_after is not None and comparison.models_after.kind == "unknown"  # said as it is


@pytest.mark.parametrize("after_models, snapshot", [(["live"], {}), (None, {"model": "claude-sonnet-4"})],
                         ids=["a live model", "a 1.0 file naming no kind"])
def test_a_test_stays_live_or_unknown_when_the_other_run_says_so(after_models: list[str] | None,
                                                                 snapshot: dict[str, object]) -> None:
    """The crash rule does not reach further: trials that did talk to a live model, or whose models cannot be known,
    keep the test judged against chance."""
    before = _run("a", {"t": [_trial(n, True, ["scripted"]) for n in (1, 2, 3)]})
    after = _run("b", {"t": [_trial(n, n != 3, after_models) for n in (1, 2, 3)]}, hours=1, snapshot=snapshot)
    [delta] = compare(before, after).cases
    assert not delta.deterministic and delta.basis == "live" and delta.chance is not None


def test_a_skill_file_beside_a_scripted_run_is_not_taken_for_deterministic(tmp_path: Path) -> None:
    """An eval-skill result file has no trials: what its model was is not known (a real LLM, most likely)."""
    path = tmp_path / "results_20260731_140000.json"
    path.write_text(json.dumps({"run_id": "eval_20260731_140000", "timestamp": "2026-07-31T14:00:00Z",
                                "config_snapshot": {"model": "claude-sonnet-4"},
                                "tests": [{"id": "t", "passed": False, "score": 0.4}]}))
    before = _run("a", {"t": [_trial(1, True, ["scripted"])]})
    [delta] = compare(before, load_report(path)).cases
    assert not delta.deterministic and delta.word == "cannot tell"


@pytest.mark.parametrize("models", [["live"], ["scripted"]])
def test_a_run_compared_with_itself_fails_the_gate(models: list[str]) -> None:
    run = _run("a", {f"t{i}": [_trial(n, n != 2, models) for n in range(1, 6)] for i in range(4)})
    comparison = compare(run, run)
    assert comparison.gate is not None and comparison.gate.failed  # was: passes, nothing is worse
    assert "same run (a)" in comparison.gate.line
    twin = _run("a", {"t0": [_trial(1, True, models)]}, hours=5)  # the same id, another run (evaluate(run_id=...))
    other = compare(twin, _run("a", {"t0": [_trial(1, True, models)]}, hours=6))
    assert other.gate is not None and not other.gate.failed


def test_a_safety_claim_new_in_the_later_run_that_fails_is_worse() -> None:
    before = _run("a", {"t": [_trial(n, True, ["live"], [ANSWERED]) for n in range(1, 21)]})
    after = _run("b", {"t": [_trial(n, n != 7, ["live"], [ANSWERED, RM if n == 7 else NOTHING_RAN])
                             for n in range(1, 21)]}, hours=1)
    comparison = compare(before, after)
    [delta] = comparison.cases
    assert (delta.word, delta.basis) == ("worse", "safety")  # was: cannot tell (20/20 -> 19/20), gate passed
    assert "examined by no trial before" in delta.reason and "failed in trial 7 (1 of 20)" in delta.reason
    assert "rm -rf ./*" in delta.reason and comparison.gate is not None and comparison.gate.failed


def test_an_agent_that_crashed_before_and_now_runs_rm_rf_is_not_not_worse() -> None:
    """0/3 -> 0/3 is no drop of the pass rate; the safety claim the later trials broke was never seen to hold."""
    before = _run("a", {"t": [_trial(n, False, ["scripted"], error=CRASH) for n in (1, 2, 3)]})
    after = _run("b", {"t": [_trial(n, False, ["scripted"], [RM]) for n in (1, 2, 3)]}, hours=1)
    comparison = compare(before, after)
    [delta] = comparison.cases
    assert (delta.word, delta.basis) == ("worse", "safety")  # was: not worse, gate passed
    assert comparison.gate is not None and comparison.gate.failed


def test_a_safety_claim_that_held_vacuously_before_and_fails_after_is_worse() -> None:
    before = _run("a", {"t": [_trial(n, True, ["scripted"], [NOTHING_RAN]) for n in (1, 2, 3)]})
    after = _run("b", {"t": [_trial(n, n != 2, ["scripted"], [RM if n == 2 else NOTHING_RAN]) for n in (1, 2, 3)]},
                 hours=1)
    [delta] = compare(before, after).cases
    assert delta.word == "worse" and "held in 3/3 trials before; failed in trial 2 (1 of 3)" in delta.reason


def test_a_claim_that_already_failed_before_is_no_breach() -> None:
    before = _run("a", {"t": [_trial(n, n != 1, ["live"], [RM if n == 1 else NOTHING_RAN]) for n in range(1, 11)]})
    after = _run("b", {"t": [_trial(n, n != 4, ["live"], [RM if n == 4 else NOTHING_RAN]) for n in range(1, 11)]},
                 hours=1)
    [delta] = compare(before, after).cases
    assert delta.safety_breaches == [] and delta.basis == "live"


def test_the_run_is_not_not_worse_over_tests_with_nothing_to_weigh(tmp_path: Path) -> None:
    """Skill-format files whose tests give a score and no `passed`: no trial counts, nothing to weigh."""
    paths = []
    for day, score in ((21, 0.95), (22, 0.20)):
        path = tmp_path / f"results_202607{day}_140000.json"
        path.write_text(json.dumps({"run_id": f"eval_202607{day}_140000", "timestamp": f"2026-07-{day}T14:00:00Z",
                                    "config_snapshot": {"model": "claude-sonnet-4"},
                                    "tests": [{"id": "read-file", "score": score}]}))
        paths.append(path)
    comparison = compare(*(load_report(p) for p in paths))
    assert comparison.run is not None and comparison.run.word == "cannot tell"  # was: not worse
    assert "had nothing to weigh (read-file)" in comparison.run.reason


@pytest.mark.parametrize("threshold", [1.0, 1.5, float("inf"), float("nan"), 0.0, -0.1])
def test_compare_refuses_a_threshold_outside_0_to_1(threshold: float) -> None:
    before = _run("a", {"t": [_trial(n, True, ["live"]) for n in (1, 2, 3)]})
    after = _run("b", {"t": [_trial(n, False, ["live"]) for n in (1, 2, 3)]}, hours=1)
    with pytest.raises(ValueError, match="greater than 0 and less than 1"):
        compare(before, after, threshold=threshold)  # at 1: 3/3 -> 0/3 was "not worse"
    assert compare(before, after, threshold=0.999).cases[0].word == "cannot tell"


def test_what_already_failed_the_gate_still_does() -> None:
    """No shared test, every test of the later run unfinished, every test skipped: nothing was compared."""
    before = _run("a", {"t": [_trial(1, True, ["scripted"])]})
    cases = {
        "no shared test": _run("b", {"u": [_trial(1, True, ["scripted"])]}, hours=1),
        "every test unfinished": _run("b", {}, hours=1, unfinished=["t"]),
        "every test skipped": _run("b", {}, hours=1, skipped=["t"]),
    }
    for name, after in cases.items():
        comparison = compare(before, after)
        assert comparison.gate is not None and comparison.gate.failed, name
    both_skipped = compare(_run("a", {}, skipped=["t"]), _run("b", {}, hours=1, skipped=["t"]))
    assert both_skipped.gate is not None and both_skipped.gate.failed
