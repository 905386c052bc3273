"""`trialrun schema`: the JSON Schema of suite files, or of result files."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._common import _check_output_file, _fail_cleanly


@click.command()
@click.option("--results", is_flag=True, help="Print the result file's schema instead of the suite's.")
@click.option("--mcp", is_flag=True, help="Print the schema of a scripted MCP server's file instead.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
@_fail_cleanly
def schema(results: bool, mcp: bool, output: str | None) -> None:
    """Print the JSON Schema of suite files (tests.json), of result files with --results, or of scripted MCP server
    files with --mcp."""
    if mcp:
        from ..mcp._file import script_json_schema

        data = script_json_schema()
    elif results:
        from ..report.results import RunReport

        data = RunReport.model_json_schema(mode="serialization")
    else:
        from ..suite._tests_file import suite_json_schema

        data = suite_json_schema()
    text = json.dumps(data, indent=2) + "\n"
    _check_output_file(output, "--output")
    if output:
        from .._util.files import write_user_file

        write_user_file(Path(output), text)
    else:
        click.echo(text, nl=False)
