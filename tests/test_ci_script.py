"""`.ci/run` runs the suite on 3.10 and the newest CPython where they are installed; where one is absent it says so
and does not fail (nothing is downloaded)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(sys.platform == "win32" or shutil.which("bash") is None, reason="a bash script")
def test_absent_interpreters_are_named_and_do_not_fail_ci(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with the tools the script uses and only the default python3
    bin_dir.mkdir()
    for tool in ("bash", "ls", "grep", "sort", "sed", "tail", "dirname", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "no-pyenv"), "CI_EXTRA_ONLY": "1"}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"note: no Python 3.10 here (looked in {tmp_path / 'no-pyenv' / 'versions'} and on PATH)" in done.stderr
    default = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert "the suite did not run on it" in done.stderr or default == "3.10"
    assert f"no CPython newer than the default {default} here" in done.stderr
    assert "== the suite on" not in done.stdout  # nothing ran, nothing was installed


def _git(cwd: Path, *args: str) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True, env=env).stdout


def _scope(repo: Path, *args: str, base: str | None = None) -> str:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(repo), **({"CI_BASE": base} if base else {})}
    done = subprocess.run(["bash", str(repo / ".ci" / "battery-scope"), *args], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None or shutil.which("bash") is None, reason="a bash script over git")
def test_the_battery_runs_whole_when_what_it_judges_changed_since_the_merge_base(tmp_path: Path) -> None:
    """The gate runs one scenario per preset only when nothing the battery judges changed on the branch (its
    commits and its uncommitted changes); a change to the agents, containment, the shell analyser, the wire codecs
    or the pins, `--full`, or no merge base to tell from, runs it whole."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "battery-scope", repo / ".ci" / "battery-scope")
    for folder in ("agents", "_contain", "_shell", "wire", "report"):
        (repo / "src" / "trialrun" / folder).mkdir(parents=True)
        (repo / "src" / "trialrun" / folder / "x.py").write_text("x = 1\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "start")
    _git(repo, "checkout", "-q", "-b", "work")
    assert _scope(repo).startswith("gate nothing it judges changed since the merge base ")
    assert _scope(repo, "--full") == "full --full was given"
    assert _scope(repo, base="no-such-branch") == "full no merge base with no-such-branch was found"
    (repo / "src" / "trialrun" / "report" / "x.py").write_text("x = 2\n")
    _git(repo, "commit", "-q", "-am", "elsewhere")
    assert _scope(repo).startswith("gate ")
    for folder in ("agents", "_contain", "_shell", "wire"):
        (repo / "src" / "trialrun" / folder / "x.py").write_text("x = 2\n")  # uncommitted counts too
        assert _scope(repo) == f"full changed since the merge base: src/trialrun/{folder}/x.py"
        _git(repo, "checkout", "-q", "--", ".")
    (repo / "src" / "trialrun" / "wire" / "x.py").write_text("x = 3\n")
    _git(repo, "commit", "-q", "-am", "a codec")
    assert _scope(repo) == "full changed since the merge base: src/trialrun/wire/x.py"


def test_ci_runs_exactly_the_readme_test_command() -> None:
    """The README's test command is what CI runs (only the environment differs: CI=true, bytecode caches
    written, --durations through PYTEST_ADDOPTS, the batteries' scope); a newcomer's run and CI's are the same tests."""
    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text(encoding="utf-8")
    command = next(line for line in readme.splitlines() if "pip install -q -e '.[test]'" in line)
    assert command.endswith("python -m pytest -q -n 3")
    ci_lines = [line.strip() for line in (root / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    assert command in ci_lines
