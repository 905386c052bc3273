"""`trialrun run` as an A/B run (the bundled quickstart, offline): [arms] tables or arm files, one result file per
arm that `report`, `compare` and `view`'s loader read as any run, the comparison printed and saved, the gate's exit
code, and every mistake in an arm named with its file and field (exit 2, nothing run)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from trialrun.report.store import ResultsStore, load_report

ARMS = '\n[arms.v1]\n\n[arms.v2]\nmodel = "scripted:model_v2.yaml"\n'


def _results(project: Path) -> list[Path]:
    return ResultsStore(project / "state" / "eval").files()


def _summary(project: Path) -> dict:
    (path,) = (project / "state" / "eval").glob("ab_*.json")
    return json.loads(path.read_text())


def test_arms_tables_run_both_arms_and_save_a_run_per_arm(project: Path, cli: Callable[..., Result]) -> None:
    (project / "trialrun.toml").write_text((project / "trialrun.toml").read_text() + ARMS)
    result = cli("run", "all", "--seed", "7", "--fail-on-regression", "--markdown", "ab.md")
    # v2 drops summarise-notes (a deterministic drop: a regression whatever the trial count) and gains two tests
    assert result.exit_code == 1, result.output
    assert "A/B run: 2 arms, baseline v1" in result.output and "seed 7" in result.output
    assert "v1 -> v2" in result.output and "summarise-notes" in result.output
    assert "--fail-on-regression: v2:" in result.output
    markdown = (project / "ab.md").read_text()
    assert markdown.startswith("## trialrun A/B run") and "--fail-on-regression: v2:" in markdown
    assert "v1 → v2" in markdown and "summarise-notes" in markdown
    files = _results(project)
    assert len(files) == 2
    first, second = (load_report(p) for p in files)
    assert first.config_snapshot["arm"]["name"] == "v1" and second.config_snapshot["arm"]["name"] == "v2"
    assert first.config_snapshot["arm"]["seed"] == 7 and second.config_snapshot["arm"]["baseline"] == "v1"
    assert first.config_snapshot["model"] == "scripted:model_v1.yaml"
    assert second.config_snapshot["model"] == "scripted:model_v2.yaml"
    summary = _summary(project)
    assert summary["baseline"] == "v1" and [a["name"] for a in summary["arms"]] == ["v1", "v2"]
    assert [a["file"] for a in summary["arms"]] == [str(p.relative_to(project)) for p in files]
    assert "summarise-notes" in summary["comparisons"]["v2"]["regressions"]
    assert summary["gate"]["failed"] is True and summary["seed"] == 7 and summary["round_orders"]
    # each arm's file is a run like any other: compare (the last two), report and the store read them
    compared = cli("compare")
    assert "arm.name: v1 -> v2" in compared.output and "summarise-notes" in compared.output, compared.output
    assert cli("report", files[0].name).exit_code == 1
    assert ResultsStore(project / "state" / "eval").latest_path() == files[1]


def test_arm_files_overlay_the_configuration_with_paths_beside_them(project: Path, cli: Callable[..., Result]) -> None:
    (project / "arms").mkdir()
    (project / "arms" / "before.toml").write_text("# the base as it is\n")
    (project / "model_v2.yaml").rename(project / "arms" / "model_v2.yaml")
    (project / "arms" / "after.toml").write_text('model = "scripted:model_v2.yaml"\n[policy]\ndeny_commands = ["grep"]\n')
    result = cli("run", "--arms", "arms/before.toml,arms/after.toml", "-k", "2", "--json")
    assert result.exit_code == 1, result.output  # some test fails in each arm (no gate asked)
    data = json.loads(result.stdout)
    assert [a["name"] for a in data["arms"]] == ["before", "after"] and data["rounds"] == 2
    after = load_report(project / data["arms"][1]["file"])
    assert after.config_snapshot["model"] == f"scripted:{project / 'arms' / 'model_v2.yaml'}"
    assert after.config_snapshot["arm"]["source"] == "arms/after.toml"
    assert after.trial_count == 2 and all(len(c.trials) == 2 for c in after.cases)
    before = load_report(project / data["arms"][0]["file"])
    assert "grep" in str(after.config_snapshot["policy"]) and "grep" not in str(before.config_snapshot["policy"])


def test_until_decided_between_deterministic_arms_takes_one_round(project: Path, cli: Callable[..., Result]) -> None:
    (project / "trialrun.toml").write_text((project / "trialrun.toml").read_text() + ARMS)
    result = cli("run", "--until-decided", "--seed", "1")
    assert "Stopped after 1 round: deterministic arms" in result.output, result.output
    assert "one round decided" in result.output
    assert _summary(project)["stopped"] == "deterministic" and _summary(project)["sequential"] == {}
    assert all(load_report(p).trial_count == 1 for p in _results(project))


def test_no_arms_runs_the_base_configuration_alone(project: Path, cli: Callable[..., Result]) -> None:
    (project / "trialrun.toml").write_text((project / "trialrun.toml").read_text() + ARMS)
    result = cli("run", "--no-arms")
    assert "A/B" not in result.output and len(_results(project)) == 1
    assert "arm" not in load_report(_results(project)[0]).config_snapshot


def _error(result: Result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    return result.output


def test_mistakes_in_arms_are_named_with_their_file_and_field(project: Path, cli: Callable[..., Result]) -> None:
    config = project / "trialrun.toml"
    base = config.read_text()
    for extra, message in [
        ('\n[arms.v1]\n[arms.v2]\nmodle = "scripted:model_v2.yaml"\n',
         f"error: {config}: [arms.v2]: unknown key 'modle' (did you mean 'model'?)"),
        ("\n[arms.v1]\n[arms.v2]\npass_threshold = 0.5\n",
         f"error: {config}: [arms.v2]: 'pass_threshold' is the run's, the same in every arm"),
        ('\n[arms.v1]\n[arms.v2]\nturn_limit = "ten"\n',
         f"error: {config}: [arms.v2]: turn_limit: expected a whole number, got 'ten' (text)"),
        ('\n[arms.v1]\n[arms.v2]\nmodel = "scripted:nope.yaml"\n', "nope.yaml"),
        ("\n[arms]\nv1 = 3\n", f"error: {config}: arms.v1: an arm is a table of settings"),
    ]:
        config.write_text(base + extra)
        assert message in _error(cli("run", "all")), extra
        assert _results(project) == []
    config.write_text(base + "\n[arms.before]\n[arms.after]\n")
    assert "--arms: 'aftr' is neither an arm of the configuration nor a file (did you mean 'after'?)" in _error(
        cli("run", "--arms", "before,aftr"))
    (project / "b.toml").write_text("trials = 3\n")
    assert f"error: {project / 'b.toml'}: 'trials' is the run's" in _error(cli("run", "--arms", "before,b.toml"))
    assert "needs two or more arms" in _error(cli("run", "--arms", "before"))
    assert _results(project) == []


def test_options_that_make_no_sense_together_are_usage_errors(project: Path, cli: Callable[..., Result]) -> None:
    assert "--fail-on-regression need(s) an A/B run" in _error(cli("run", "--fail-on-regression"))
    assert "--until-decided need(s) an A/B run" in _error(cli("run", "--until-decided"))
    (project / "trialrun.toml").write_text((project / "trialrun.toml").read_text() + ARMS)
    assert "-k/--trials sets a fixed count" in _error(cli("run", "--until-decided", "-k", "3"))
    assert "--max-trials caps an --until-decided run" in _error(cli("run", "--max-trials", "3"))
    assert "'v3' is not an arm of this run" in _error(cli("run", "--baseline", "v3"))
    assert "--arms and --no-arms contradict" in _error(cli("run", "--arms", "v1,v2", "--no-arms"))
    assert "--junit" in _error(cli("run", "--junit", "out.xml"))
    assert _results(project) == []


SLOW_AGENT = '''
import time
from pathlib import Path


def run(prompt, ctx):
    """Answers at once, except from round 2 on: then it says so and waits (to be interrupted)."""
    if ctx.trial >= 2:
        Path("started.txt").write_text("x")
        time.sleep(60)
    return "hi " + prompt
'''


def test_a_signal_saves_every_arms_finished_trials(project: Path, write_suite) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    (project / "slow_agent.py").write_text(SLOW_AGENT)
    write_suite(project / "state" / "eval" / "tests.json",
                [{"id": t, "prompt": t, "expected_tools": [], "max_turns": 1, "success_criteria": "Says hi",
                  "expect": {"contains": "hi"}} for t in ("a", "b")])
    (project / "trialrun.toml").write_text('agent = "slow_agent:run"\nmodel = "scripted:s.yaml"\n'
                                           '[arms.v1]\n[arms.v2]\nturn_limit = 5\n')
    (project / "s.yaml").write_text("a: [{reply: hi}]\nb: [{reply: hi}]\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    proc = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "-k", "3"], cwd=project, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 60
    while not (project / "started.txt").exists():
        if proc.poll() is not None or time.time() > deadline:
            proc.kill()
            raise AssertionError(proc.communicate())
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert "Traceback" not in err and "interrupted: saved the finished trials of every arm" in err
    files = _results(project)
    assert len(files) == 2 and not list((project / "state" / "eval").glob("*.jsonl"))
    for path, arm in zip(files, ("v1", "v2")):
        report = load_report(path)
        assert report.status == "interrupted" and report.config_snapshot["arm"]["name"] == arm
        assert all([t.trial for t in c.trials] == [1] and c.unfinished_trials == 2 for c in report.cases)
    assert _summary(project)["rounds"] == 1
