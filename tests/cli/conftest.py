"""A copy of the bundled quickstart project per test, and a CLI runner in it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from trialrun.cli import main

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "project"
    shutil.copytree(QUICKSTART, target, ignore=shutil.ignore_patterns("results_*.json", "latest.json"))
    monkeypatch.chdir(target)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("COLUMNS", "160")
    return target


@pytest.fixture
def cli() -> Callable[..., Result]:
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


def _write_suite(path: Path, tests: list | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(tests if isinstance(tests, str) else json.dumps(tests, indent=2))


@pytest.fixture
def write_suite() -> Callable[[Path, list | str], None]:
    """Write a suite file (a list of tests, or raw text)."""
    return _write_suite
