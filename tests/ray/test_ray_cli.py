"""`trialrun run --executor ray...` and trialrun.toml's `executor` on the bundled quickstart suite (a suite file:
its cases always ship to workers), and what happens without Ray."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from trialrun.cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"
_VOLATILE = {"started_at", "timestamp", "duration_s", "run_id", "finished_at"}


def _stable(value: object) -> object:
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "project"
    shutil.copytree(QUICKSTART, target, ignore=shutil.ignore_patterns("results_*.json", "latest.json"))
    monkeypatch.chdir(target)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return target


def _run(*args: str) -> tuple[int, dict]:
    result = CliRunner().invoke(main, ["run", "--json", "-k", "2", *args], catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout)


def _sidecar(folder: Path) -> Path:
    (path,) = folder.glob("results_*.exchanges.ndjson")
    return path


def test_the_suite_on_ray_reports_what_it_reports_locally(ray_cluster: str, project: Path, read_sidecar) -> None:
    local_code, local = _run("--results-dir", "local")
    ray_code, remote = _run("--results-dir", "ray", "--executor", f"ray:{ray_cluster}")
    # where the trials ran is recorded (and is all that differs)
    assert (local["config_snapshot"].pop("executor"), remote["config_snapshot"].pop("executor")) == ("local", f"ray:{ray_cluster}")
    assert (ray_code, _stable(remote)) == (local_code, _stable(local))
    assert len(remote["cases"]) >= 3 and any(c["passed"] for c in remote["cases"])
    assert any(t["trajectory"]["turns"] for c in remote["cases"] for t in c["trials"])  # agents ran, on workers
    assert list((project / "ray").glob("results_*.json"))  # saved by the same store
    # Each worker sent its trial's exchanges back: the Ray run's sidecar is the local run's, trial for trial.
    kept, local_kept = read_sidecar(_sidecar(project / "ray")), read_sidecar(_sidecar(project / "local"))
    assert kept == local_kept
    assert sorted(kept) == sorted((c["name"], t["trial"]) for c in remote["cases"] for t in c["trials"])
    for case in remote["cases"]:
        for trial in case["trials"]:  # every turn's `exchange` names one of its trial's exchanges
            numbers = {e["n"] for e in kept[case["name"], trial["trial"]]}
            assert {turn["exchange"] for turn in trial["trajectory"]["turns"]} <= numbers and numbers
    # ... and `trialrun view`'s trial page shows them under the turns.
    from trialrun.render.exchanges import trial_page
    from trialrun.report._history import load_history
    from trialrun.report.exchanges import read_trial_exchanges

    entry = load_history(project / "ray").runs[-1]
    case = next(c for c in entry.report.cases if c.trials[0].trajectory.turns)
    log = read_trial_exchanges(_sidecar(project / "ray"), case.name, 2)
    assert log.problem is None and log.exchanges == kept[case.name, 2]
    page = trial_page(entry, case.name, case.trials[1], log)
    assert page.count("Raw request and response") >= len(case.trials[1].trajectory.turns) >= 1
    assert "kept no raw exchanges" not in page and "gpt-4.1-mini" in page
    asked = log.exchanges[0]["request"]["body"]["messages"][-1]["content"]
    assert asked and f'"content": "{asked}"' in page  # the request body, pretty-printed


def test_trialrun_toml_names_the_executor(ray_cluster: str, project: Path) -> None:
    config = project / "trialrun.toml"
    config.write_text(config.read_text().replace('rubric = "balanced"', f'rubric = "balanced"\nexecutor = "ray:{ray_cluster}"'))
    code, report = _run("--results-dir", "toml")
    assert code in (0, 1) and report["cases"]
    config.write_text(config.read_text().replace(f'executor = "ray:{ray_cluster}"', 'executor = "spark"'))
    result = CliRunner().invoke(main, ["run"], catch_exceptions=False)
    assert result.exit_code == 2
    assert "executor" in result.stderr and "'spark' is not known" in result.stderr and "Traceback" not in result.stderr


def test_without_ray_the_error_names_the_extra_and_import_trialrun_never_loads_ray(project: Path) -> None:
    script = (
        "import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
        "import trialrun as tr\n"
        "assert 'ray' not in [m for m in sys.modules if sys.modules[m] is not None]\n"
        "try:\n"
        "    tr.evaluate([tr.Case(name='c', invoke=lambda ctx: 'x', expect_outcome=[tr.expect.contains('x')])],"
        " executor='ray')\n"
        "except ValueError as exc:\n"
        "    print('ERROR', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "ERROR executor 'ray' needs Ray" in out.stdout and "pip install 'trialrun[ray]'" in out.stdout, out.stderr
    fresh = subprocess.run([sys.executable, "-c", "import sys, trialrun, trialrun.run.executor, trialrun.run.runner; "
                            "print('ray' in sys.modules)"], capture_output=True, text=True, timeout=60)
    assert fresh.stdout.strip() == "False", fresh.stderr
    cli = subprocess.run([sys.executable, "-c", "import sys; sys.modules['ray'] = None; from trialrun.cli import main; "
                          "main()", "run", "--executor", "ray"], capture_output=True, text=True, timeout=60, cwd=project)
    assert cli.returncode == 2 and "pip install 'trialrun[ray]'" in cli.stderr and "Traceback" not in cli.stderr
