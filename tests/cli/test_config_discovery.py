"""Configuration discovery: from a subfolder, the first trialrun.toml (or pyproject.toml with [tool.trialrun])
upwards is used, its paths relative to its own folder, and the run says which file it used, or that it assumed
the defaults because none was found."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from trialrun.suite.config import find_config, load_config


def test_a_run_from_a_subfolder_uses_the_projects_config(project: Path, cli: Callable[..., Result],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    sub = project / "workspace" / "docs"
    monkeypatch.chdir(sub)
    result = cli("run", "read-file")
    assert result.exit_code == 0, result.output
    assert f"config: {project / 'trialrun.toml'}" in result.output
    saved = list((project / "state" / "eval").glob("results_*.json"))  # the suite's folder, not the cwd's
    assert len(saved) == 1 and not list(sub.glob("**/results_*.json"))


def test_pyproject_tool_section_is_found_upwards_and_the_nearer_file_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.trialrun]\nsuite = "evals/tests.json"\n')
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    config = load_config(deep)
    assert config.source == tmp_path / "pyproject.toml"
    assert config.suite_path() == tmp_path / "evals" / "tests.json"
    (tmp_path / "a" / "trialrun.toml").write_text('suite = "mine.json"\n')
    config = load_config(deep)
    assert config.source == tmp_path / "a" / "trialrun.toml" and config.suite_path() == tmp_path / "a" / "mine.json"


def test_a_pyproject_without_the_section_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    found = find_config(tmp_path)
    assert found is None or found[0] != tmp_path / "pyproject.toml"


def test_without_a_config_the_run_says_it_assumed_the_defaults(tmp_path: Path, cli: Callable[..., Result],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    if find_config(tmp_path) is not None:
        pytest.fail(f"a config above the temp dir ({find_config(tmp_path)}) would make this test meaningless")
    monkeypatch.chdir(tmp_path)
    result = cli("run", "all")
    assert result.exit_code == 2
    assert (f"config: none found (no trialrun.toml or [tool.trialrun] in {tmp_path.resolve()} or above); assuming "
            "the defaults: suite state/eval/tests.json, model scripted:model.yaml") in result.output


def test_a_suite_at_the_projects_root_keeps_its_results_in_state_eval(project: Path, cli: Callable[..., Result],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """suite = "tests.json" beside trialrun.toml: the results go to state/eval/, not into the project's root; a suite
    in its own folder keeps its results beside it; --suite at the root without a configuration the same."""
    (project / "state" / "eval" / "tests.json").rename(project / "tests.json")
    toml = project / "trialrun.toml"
    toml.write_text(toml.read_text().replace('suite = "state/eval/tests.json"', 'suite = "tests.json"'))
    assert cli("run", "read-file").exit_code == 0
    assert len(list((project / "state" / "eval").glob("results_*.json"))) == 1 and not list(project.glob("results_*"))
    assert cli("report").exit_code == 0 and not list(project.glob("latest.json"))
    assert load_config(project).results_path() == project / "state" / "eval"
    (project / "evals").mkdir()
    toml.write_text(toml.read_text().replace('suite = "tests.json"', 'suite = "evals/tests.json"'))
    assert load_config(project).results_path() == project / "evals"
    toml.unlink()
    config = load_config(project).with_overrides(suite=project / "tests.json")
    assert config.source is None and config.results_path() == project / "state" / "eval"
