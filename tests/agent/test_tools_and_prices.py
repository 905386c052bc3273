"""@tool schemas, shell_tools confinement and limits, and the price table."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.agent.pricing import Price, PriceTable, cost_of_trajectory


def run_tool(tool: tr.Tool, **arguments) -> str:
    return asyncio.run(tool.run(arguments))


def test_tool_schema_from_signature_and_docstring() -> None:
    @tr.tool
    def read_notes(topic: str, limit: int = 5, tags: list[str] | None = None) -> str:
        """Read the notes about a topic.

        Args:
            topic: What the notes are about.
            limit: How many notes at most.
        """
        return f"{limit} on {topic}"

    assert read_notes.name == "read_notes" and read_notes.description == "Read the notes about a topic."
    schema = read_notes.parameters
    assert schema["required"] == ["topic"] and schema["additionalProperties"] is False
    assert schema["properties"]["topic"] == {"description": "What the notes are about.", "type": "string"}
    assert schema["properties"]["limit"]["default"] == 5
    assert read_notes("x") == "5 on x"  # still callable as a function
    assert run_tool(read_notes, topic="x", limit=2) == "2 on x"


def test_tool_options_and_async_tools() -> None:
    @tr.tool(name="fetch", description="Fetch a thing.", timeout_s=0.05)
    async def slow(key: str) -> dict:
        await asyncio.sleep(1)
        return {"key": key}

    assert (slow.name, slow.description) == ("fetch", "Fetch a thing.")
    with pytest.raises(tr.ToolError, match="fetch timed out after 0.05s"):
        run_tool(slow, key="k")

    @tr.tool
    async def quick(key: str) -> dict:
        return {"key": key, "n": [1]}

    assert json.loads(run_tool(quick, key="k")) == {"key": "k", "n": [1]}
    assert quick.run_sync({"key": "k"}) == '{"key": "k", "n": [1]}'


def test_a_tool_may_name_its_parameters_fn_or_self_however_it_is_run() -> None:
    """The worker's own parameter names once took a tool's: `fn=` under `arun` with a time limit was a TypeError
    ("got multiple values for argument 'fn'") and the agent saw an error where the tool would have answered."""

    @tr.tool
    def join(fn: str, self: str) -> str:
        """Join two names."""
        return fn + self

    async def arun(timeout_s: float | None) -> str:
        return await join.run({"fn": "a", "self": "b"}, timeout_s=timeout_s)

    for timeout_s in (5.0, None):
        assert asyncio.run(arun(timeout_s)) == "ab"
        assert join.run_sync({"fn": "a", "self": "b"}, timeout_s=timeout_s) == "ab"


@pytest.fixture
def shell(tmp_path: Path) -> dict[str, tr.Tool]:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "sub").mkdir()
    # A time limit far off: these tests are not about it (a python3 start alone can take a second on a loaded box).
    return {tool.name: tool for tool in tr.shell_tools(tmp_path, timeout_s=60, max_output=200)}


def test_shell_tools_happy_paths(shell: dict[str, tr.Tool], tmp_path: Path) -> None:
    assert run_tool(shell["read_file"], path="notes.txt") == "hello\n"
    assert run_tool(shell["write_file"], path="sub/new.txt", content="abc") == "wrote 3 characters to sub/new.txt"
    assert (tmp_path / "sub" / "new.txt").read_text() == "abc"
    assert run_tool(shell["list_dir"]) == "notes.txt\nsub/"
    assert run_tool(shell["read_file"], path=str(tmp_path / "notes.txt")) == "hello\n"  # absolute inside root is fine
    assert run_tool(shell["run_command"], command="cat notes.txt; exit 3") == "exit code: 3\nhello\n"


def test_run_command_caps_output_and_says_what_was_cut(shell: dict[str, tr.Tool]) -> None:
    out = run_tool(shell["run_command"], command="python3 -c \"print('x' * 5000)\"")
    assert out.startswith("exit code: 0\nxxx") and "characters cut; output was 5001 characters" in out
    assert len(out) < 400


def test_run_command_timeout(tmp_path: Path) -> None:
    run_command = {tool.name: tool for tool in tr.shell_tools(tmp_path, timeout_s=1)}["run_command"]
    with pytest.raises(tr.ToolError, match="command timed out after 1s"):
        run_tool(run_command, command="sleep 5")


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "sub/../../x", "escape/secret.txt", ""])
def test_paths_are_confined_to_the_root(shell: dict[str, tr.Tool], tmp_path: Path, path: str) -> None:
    os.symlink("/etc", tmp_path / "escape")
    with pytest.raises(tr.ToolError, match="outside the workspace|non-empty"):
        run_tool(shell["read_file"], path=path)
    with pytest.raises(tr.ToolError, match="outside the workspace|non-empty"):
        run_tool(shell["write_file"], path=path, content="x")


def test_missing_files_are_clear_errors(shell: dict[str, tr.Tool]) -> None:
    with pytest.raises(tr.ToolError, match="no such file: nope.txt"):
        run_tool(shell["read_file"], path="nope.txt")
    with pytest.raises(tr.ToolError, match="no such folder: nope"):
        run_tool(shell["list_dir"], path="nope")


def test_shell_tools_needs_a_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="is not a directory"):
        tr.shell_tools(tmp_path / "missing")
    assert [t.name for t in tr.shell_tools(tmp_path, writable=False)] == ["run_command", "read_file", "list_dir"]


@pytest.mark.parametrize(
    "model, price",
    [
        ("gpt-4.1-mini", Price(0.40, 1.60, 0.10)),
        ("gpt-4.1-mini-2025-04-14", Price(0.40, 1.60, 0.10)),
        ("gpt-4.1", Price(2.00, 8.00, 0.50)),
        ("gpt-4o-mini-2024-07-18", Price(0.15, 0.60, 0.075)),
        ("gpt-4o", Price(2.50, 10.00, 1.25)),
        ("gpt-5-mini", Price(0.25, 2.00, 0.025)),
        ("gpt-5", Price(1.25, 10.00, 0.125)),
        ("claude-sonnet-4-20250514", Price(3.00, 15.00, 0.30, 3.75)),
        ("claude-sonnet-4-5", Price(3.00, 15.00, 0.30, 3.75)),
        ("claude-haiku-4-5-20251001", Price(1.00, 5.00, 0.10, 1.25)),
        ("claude-opus-4-1-20250805", Price(15.00, 75.00, 1.50, 18.75)),
        ("claude-opus-4-5", Price(5.00, 25.00, 0.50, 6.25)),
        ("claude-3-5-haiku-latest", Price(0.80, 4.00, 0.08, 1.00)),
        ("openai/gpt-4.1-mini", Price(0.40, 1.60, 0.10)),
        ("gpt-4.1-minimal", None),
        ("acme-1", None),
    ],
)
def test_price_lookup(model: str, price: Price | None) -> None:
    assert tr.prices.get(model) == price


def test_cost_counts_cached_input_at_its_own_rate() -> None:
    price = Price(input=2.0, output=8.0, cached_input=0.5)
    assert price.cost(tr.Usage(1_000_000, 100_000, cached_input_tokens=400_000)) == pytest.approx(1.2 + 0.2 + 0.8)


def test_prices_can_be_set_and_loaded(tmp_path: Path) -> None:
    table = PriceTable()
    table.set("acme-1", input=1.0, output=2.0)
    assert table.cost("acme-1-20260101", tr.Usage(1_000_000, 1_000_000)) == pytest.approx(3.0)
    for name, text in [
        ("p.toml", '[prices."acme-2"]\ninput = 1\noutput = 4\ncached_input = 0.1\n'),
        ("p.json", '{"acme-2": {"input": 1, "output": 4, "cached_input": 0.1}}'),
        ("p.yaml", "acme-2: {input: 1, output: 4, cached_input: 0.1}\n"),
    ]:
        (tmp_path / name).write_text(text)
        table = PriceTable()
        table.load(tmp_path / name)
        assert table.get("acme-2") == Price(1.0, 4.0, 0.1)
    (tmp_path / "bad.json").write_text('{"acme": {"input": 1}}')
    with pytest.raises(ValueError, match="bad.json: model 'acme': expected"):
        PriceTable().load(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="must be a non-negative number"):
        PriceTable().set("x", input=-1, output=1)


def test_cost_of_trajectory_is_none_when_any_turn_is_unpriced() -> None:
    priced = tr.Turn(usage=tr.Usage(1_000_000, 0), model="gpt-4.1-mini")
    assert cost_of_trajectory(tr.Trajectory(turns=[priced])) == pytest.approx(0.40)
    assert cost_of_trajectory(tr.Trajectory(turns=[priced, tr.Turn(usage=tr.Usage(1, 1), model="acme")])) is None
    assert cost_of_trajectory(tr.Trajectory(turns=[tr.Turn(text="no usage")])) is None
