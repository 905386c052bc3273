"""docs/mcp.md shows its examples inline (plain Markdown): each block marked `<!-- example: FILE -->` is that file,
exactly, and the files run (the frameworks' in tests/frameworks/test_mcp_frameworks.py, the suite's in
test_suite_config.py, the reference agent's here)."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import trialrun as tr

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "mcp.md"


def test_every_example_block_is_its_file() -> None:
    text = PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- example: (\S+) -->\n```\w*\n(.*?)\n```\n", text, re.S)
    assert {name for name, _ in blocks} == {f"examples/mcp/{n}" for n in (
        "notes_mcp.yaml", "reference_agent_mcp.py", "trialrun.toml", "tests.json", "pydantic_ai_mcp.py",
        "openai_agents_mcp.py", "langgraph_mcp.py")}
    for name, code in blocks:
        assert code == (ROOT / name).read_text(encoding="utf-8").rstrip("\n"), f"docs/mcp.md's copy of {name} differs"
    assert "--8<--" not in text


def test_the_reference_agent_example_passes() -> None:
    example = runpy.run_path(str(ROOT / "examples" / "mcp" / "reference_agent_mcp.py"), run_name="example")
    trial = tr.evaluate([example["case"]]).cases[0].trials[0]
    assert trial.passed, [v.reason for v in trial.verdicts if not v.passed]
    assert [c.arguments for c in trial.trajectory.mcp_calls] == [{"query": "dentist"}]
