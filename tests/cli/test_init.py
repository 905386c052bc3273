"""`trialrun init`: a project that runs offline straight away, the next three commands printed (and they work),
and never an overwrite."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from trialrun.cli import INIT_NEXT

FILES = ["model.yaml", "state/eval/.gitignore", "state/eval/tests.json", "trialrun.toml", "workspace/notes.txt"]
QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture
def empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def test_init_makes_a_project_whose_next_commands_work(empty: Path, cli: Callable[..., Result]) -> None:
    result = cli("init")
    assert result.exit_code == 0, result.output
    assert sorted(str(p.relative_to(empty)) for p in empty.rglob("*") if p.is_file()) == FILES
    lines = result.output.splitlines()
    assert lines[-4:] == ["next:", *(f"  {c}" for c in INIT_NEXT)]
    for command in INIT_NEXT:  # each one, as printed
        run = cli(*command.split()[1:])
        assert run.exit_code == 0, f"{command}: {run.output}"
    assert f"config: {empty.resolve() / 'trialrun.toml'}" in cli("run", "all").output
    saved = sorted((empty / "state" / "eval").glob("results_*.json"))
    assert len(saved) == 3


def test_init_graded_what_it_ran(empty: Path, cli: Callable[..., Result]) -> None:
    cli("init")
    (empty / "model.yaml").write_text((empty / "model.yaml").read_text().replace(
        '- reply: "I won\'t delete', '- tool_call: {name: run_command, arguments: {command: "rm -rf ./*"}}\n  - reply: "I won\'t delete'))
    result = cli("run", "all")
    assert result.exit_code == 1 and "refuse-wipe" in result.output and "FAIL" in result.output


def test_init_never_overwrites(empty: Path, cli: Callable[..., Result]) -> None:
    (empty / "trialrun.toml").write_text("# mine\n")
    result = cli("init")
    assert result.exit_code == 2
    assert "already has trialrun.toml; trialrun init never overwrites (nothing was written)" in result.output
    assert (empty / "trialrun.toml").read_text() == "# mine\n"
    assert not (empty / "model.yaml").exists() and not (empty / "state").exists()


def _untracked(folder: Path) -> list[str]:
    """What real git would add in `folder` (a fresh repository): the files its ignore rules do not cover."""
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=30)
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=folder, capture_output=True,
                          text=True, check=True, timeout=30)
    return sorted(line[3:] for line in done.stdout.splitlines())


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_what_a_run_writes_stays_out_of_git(empty: Path, cli: Callable[..., Result], tmp_path: Path) -> None:
    """After `trialrun init` and a run (result file, raw exchanges, latest.json), git sees only the project's own
    files; the bundled quickstart the same, with the same ignore file."""
    cli("init")
    assert cli("run", "all").exit_code == 0
    assert list((empty / "state" / "eval").glob("*.exchanges.ndjson")) and (empty / "state/eval/latest.json").exists()
    assert _untracked(empty) == FILES
    quickstart = tmp_path / "quickstart"
    shutil.copytree(QUICKSTART, quickstart)
    shipped = [line for line in (QUICKSTART / "state/eval/.gitignore").read_text().splitlines() if not line.startswith("#")]
    assert shipped == [line for line in (empty / "state/eval/.gitignore").read_text().splitlines() if not line.startswith("#")]
    files = _untracked(quickstart)
    assert cli("run", "all", "--config", str(quickstart / "trialrun.toml")).exit_code in (0, 1)
    assert list((quickstart / "state" / "eval").glob("results_*.exchanges.ndjson"))
    assert _untracked(quickstart) == files
