"""README's Python examples that are meant to run (a `<!-- readme-test: run ... -->` line right above the block)
run as written, and print what their comments say they print; so do those of the docs pages that hold what moved
out of the README (docs/*.md: the command matcher's `own_scripts` example is one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
#: README.md first, then the docs pages (their python blocks are run and type-checked as README's are; the
#: tutorials include tested files instead, see tests/test_docs_examples.py)
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^(<!-- readme-test: run\b[^\n]*-->\n)?```python\n(.*?)^```", re.M | re.S)


def python_blocks_in(runnable_only: bool = False) -> list[tuple[str, str]]:
    """(file, code) of each ```python block of README.md and the docs pages, in order (only those marked
    `<!-- readme-test: run -->` if asked); the file is its path from the repository's root."""
    return [(path.relative_to(ROOT).as_posix(), code) for path in DOCUMENTS
            for marker, code in _BLOCK.findall(path.read_text(encoding="utf-8")) if marker or not runnable_only]


def python_blocks(runnable_only: bool = False) -> list[str]:
    """The ```python blocks of README.md and the docs pages, in order (only the marked ones if asked)."""
    return [code for _, code in python_blocks_in(runnable_only)]


def _runnable_blocks() -> list[tuple[str, str]]:
    return python_blocks_in(runnable_only=True)


def _printed_claims(block: str) -> list[str]:
    """What each `print(...)  # <output>: ...` line says it prints: the comment up to the first colon."""
    return [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+#\s*([^:\n]+)", block, re.M)]


def test_readme_marks_its_first_python_example_as_runnable() -> None:
    blocks = [code for file, code in _runnable_blocks() if file == "README.md"]
    assert blocks, "no README block is marked to run"
    assert "def my_agent(" in blocks[0] and "tr.evaluate(" in blocks[0]


def test_the_runnable_examples_are_found_where_they_are() -> None:
    """The examples that moved out of the README still run: none is left behind by the parametrize below."""
    files = [file for file, _ in _runnable_blocks()]
    assert "README.md" in files and "docs/matcher.md" in files, files
    assert len(files) >= 2


@pytest.mark.parametrize("number", range(len(_runnable_blocks())),
                         ids=[f"{file}-{n}" for n, (file, _) in enumerate(_runnable_blocks())])
def test_readme_example_runs_and_prints_what_it_says(number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    file, block = _runnable_blocks()[number]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"{file} (runnable python block {number + 1})", "exec"), {"__name__": f"readme_block_{number}"})
    printed = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert printed == _printed_claims(block)


def test_the_readme_says_how_long_its_test_command_takes() -> None:
    """The comment above the test command says how long it runs and how to leave out the slow half (a marker the
    suite declares), so that nobody takes a quiet terminal for a hang."""
    text = README.read_text(encoding="utf-8")
    command = text.index("pip install -q -e '.[test]' && python -m pytest")
    comment = text[text.rindex("# Run the tests", 0, command):command]
    assert re.search(r"about \d+ minutes on \d+ cores", comment), comment
    marker = re.search(r"-m '(not (\w+))'", comment)
    assert marker and f'"{marker.group(2)}:' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_the_readme_says_up_front_how_a_configuration_change_is_measured(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The coding-agent section and the tutorial say, before their scripted examples, that an instructions or
    skill change is measured with a live (or recorded) model, and show the commands; the commands are real: run
    offline without the key, they stop before anything runs and name the key."""
    import shutil

    from click.testing import CliRunner

    from trialrun.cli import main

    section = README.read_text(encoding="utf-8").split("## Coding agents under test", 1)[1]
    tutorial = (ROOT / "docs" / "tutorials" / "coding-agent.md").read_text(encoding="utf-8")
    for text in (section, tutorial.split("## From the command line", 1)[0]):
        assert "live model" in text and "record:cassettes/" in text and "cost" in text
        assert "trialrun run all --model anthropic:claude-sonnet-4-5 -k 5" in text and "trialrun compare" in text
    assert section.index("live model") < section.index("```toml")  # up front: before the scripted example
    project = tmp_path / "quickstart"
    shutil.copytree(ROOT / "examples" / "quickstart", project)
    monkeypatch.chdir(project)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = CliRunner().invoke(main, ["run", "all", "--model", "anthropic:claude-sonnet-4-5", "-k", "5"])
    assert result.exit_code == 2 and "ANTHROPIC_API_KEY" in result.output
    assert not list((project / "state" / "eval").glob("results_*"))
