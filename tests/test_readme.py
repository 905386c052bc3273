"""README's Python examples that are meant to run (a `<!-- readme-test: run ... -->` line right above the block)
run as written, and print what their comments say they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"^(<!-- readme-test: run\b[^\n]*-->\n)?```python\n(.*?)^```", re.M | re.S)


def python_blocks(runnable_only: bool = False) -> list[str]:
    """The README's ```python blocks, in order (only those marked `<!-- readme-test: run -->` if asked)."""
    found = _BLOCK.findall(README.read_text(encoding="utf-8"))
    return [code for marker, code in found if marker or not runnable_only]


def _runnable_blocks() -> list[str]:
    return python_blocks(runnable_only=True)


def _printed_claims(block: str) -> list[str]:
    """What each `print(...)  # <output>: ...` line says it prints: the comment up to the first colon."""
    return [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+#\s*([^:\n]+)", block, re.M)]


def test_readme_marks_its_first_python_example_as_runnable() -> None:
    blocks = _runnable_blocks()
    assert blocks, "no README block is marked to run"
    assert "def my_agent(" in blocks[0] and "tr.evaluate(" in blocks[0]


@pytest.mark.parametrize("number", range(len(_runnable_blocks())))
def test_readme_example_runs_and_prints_what_it_says(number: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    block = _runnable_blocks()[number]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, f"README.md (python block {number + 1})", "exec"), {"__name__": f"readme_block_{number}"})
    printed = [line.strip() for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert printed == _printed_claims(block)
