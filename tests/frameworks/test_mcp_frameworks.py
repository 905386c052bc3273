"""Three real agent frameworks (nobody here wrote them) given a scripted MCP server through their own MCP clients,
over stdio and streamable HTTP: pydantic-ai's MCPToolset (fastmcp), the OpenAI Agents SDK's MCPServerStdio /
MCPServerStreamableHttp, LangGraph over the MCP SDK's client. The examples are docs/mcp.md's, run as shown; the
server's own record (kept by the example, outside trialrun) says each call arrived once, as the model asked."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import pytest

import trialrun as tr

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mcp"
NEEDS_311 = pytest.mark.skipif(sys.version_info < (3, 11), reason="pydantic-ai 2 requires Python 3.11")


@pytest.mark.parametrize("name", [pytest.param("pydantic_ai_mcp.py", marks=NEEDS_311), "openai_agents_mcp.py",
                                  "langgraph_mcp.py"])
def test_a_framework_reaches_the_scripted_server_over_both_transports(name: str) -> None:
    example = runpy.run_path(str(EXAMPLES / name), run_name=f"example_{Path(name).stem}")
    report = tr.evaluate(example["cases"])
    for result in report.cases:
        trial = result.trials[0]
        assert trial.passed, (result.name, trial.error, [v.reason for v in trial.verdicts if not v.passed])
        [call] = trial.trajectory.mcp_calls
        assert call.joined and call.model_name == "search_notes" and call.content == "Dentist: Tuesday 10:00"
        assert [s.transport for s in trial.trajectory.mcp_servers] == [result.name.rsplit(" ", 1)[1]]
    assert example["received"] == [{"query": "dentist"}] * 2  # the server's own record: one call per trial
