"""Files a fuzzer mangled: every one gets a message naming the file (and where in it), exit 2, never a traceback,
and a finished run is never lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUITE = Path("state/eval/tests.json")
RESULTS = Path("state/eval")
DEEP = "[" * 100_000 + "]" * 100_000  # past every Python's parser depth limit (3.13's json reads 3,000)


def _clean_failure(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, result.output
    return result.output


def test_a_config_that_is_not_utf8_is_named(project: Path, cli) -> None:
    (project / "trialrun.toml").write_bytes(b"\xff\xfe")
    _clean_failure(cli("run", "all"), "trialrun.toml: not UTF-8 text")


def test_a_config_with_a_byte_order_mark_is_read(project: Path, cli) -> None:
    toml = project / "trialrun.toml"
    toml.write_text("\ufeff" + toml.read_text())
    assert cli("run", "read-file").exit_code == 0


@pytest.mark.parametrize("value", ["1", '"trialrun"'])
def test_a_pyproject_tool_that_is_not_a_table_is_named(project: Path, cli, value: str) -> None:
    (project / "trialrun.toml").rename(project / "elsewhere.toml")
    (project / "pyproject.toml").write_text(f"tool = {value}\n")
    _clean_failure(cli("run", "all"), "pyproject.toml: tool must be a table")


def test_a_suite_nested_thousands_deep_is_named(project: Path, cli) -> None:
    (project / SUITE).write_text(DEEP)
    _clean_failure(cli("run", "all"), "tests.json: nested too deeply to read")


def test_a_yaml_suite_nested_thousands_deep_is_named(project: Path, cli) -> None:
    (project / "deep.yaml").write_text("[" * 3000 + "]" * 3000)
    _clean_failure(cli("run", "all", "--suite", "deep.yaml"), "deep.yaml: nested too deeply to read")


def test_text_that_cannot_be_saved_is_refused_before_the_run(project: Path, cli) -> None:
    tests = json.loads((project / SUITE).read_text())
    raw = json.dumps(tests).replace('"Read the notes"', '"\\ud800"', 1)
    (project / SUITE).write_text(raw)
    _clean_failure(cli("run", "all"), "tests.json: 0.name: text that is not valid Unicode")
    assert not list((project / RESULTS).glob("results_*.json"))


def test_a_scripted_model_file_nested_too_deeply_is_named(project: Path, cli) -> None:
    (project / "model_v1.yaml").write_text(DEEP)
    _clean_failure(cli("run", "all"), "model_v1.yaml: nested too deeply to read")


@pytest.mark.parametrize("content", [DEEP, '{"schema_version": "1.0", "cases": [{"name": "\\ud800"}]}'])
def test_a_mangled_result_file_is_named_and_skipped(project: Path, cli, content: str) -> None:
    assert cli("run", "all").exit_code in (0, 1)
    newest = project / RESULTS / "results_29990101_000000.json"
    newest.write_text(content)
    result = cli("report", str(newest))
    _clean_failure(result, "results_29990101_000000.json")
    assert "nested too deeply" in result.output or "not valid Unicode" in result.output
    assert cli("report").exit_code in (0, 1)  # the good run is still there


def test_a_folder_where_latest_json_goes_does_not_lose_the_run(project: Path, cli) -> None:
    folder = project / RESULTS / "latest.json"
    folder.mkdir(parents=True)
    result = cli("run", "read-file")
    assert result.exit_code == 0, result.output
    [saved] = (project / RESULTS).glob("results_*.json")
    assert f"warning: saved {saved.name}, but could not update {folder}" in result.output
    assert "not saved" not in result.output


def test_config_values_that_do_not_work_name_the_file_and_key(project: Path, cli) -> None:
    toml = project / "trialrun.toml"
    original = toml.read_text()
    toml.write_text(original.replace('tools = ["shell"]', 'tools = ["bogus"]'))
    _clean_failure(cli("run", "all"), "trialrun.toml: tools: 'bogus' is not 'shell'")
    toml.write_text(original.replace('workspace = "workspace"', 'workspace = "nothere"'))
    _clean_failure(cli("run", "all"), "trialrun.toml: workspace: ")


def test_a_cassette_nested_too_deeply_is_named(tmp_path: Path) -> None:
    from trialrun.models._cassette_io import CassetteFileError, load_exchanges

    path = tmp_path / "deep.yaml"
    path.write_text(DEEP)
    with pytest.raises(CassetteFileError, match=r"deep\.yaml: nested too deeply to read"):
        load_exchanges(path)
