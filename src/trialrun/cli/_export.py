"""`trialrun export`: a run's trajectories for other tools (OpenTelemetry spans, ATIF)."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import _check_output_file, _fail_cleanly, _say, _store


@click.command()
@click.argument("run_ref", metavar="RUN")
@click.option("--format", "fmt", type=click.Choice(["otel", "atif"]), required=True,
              help="otel: OpenTelemetry GenAI spans (OTLP JSON); atif: Harbor's Agent Trajectory Interchange Format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write to a file instead of stdout.")
@click.option("--results-dir", type=click.Path(file_okay=False), help="Where result files are (default: the suite's folder).")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@_fail_cleanly
def export(run_ref: str, fmt: str, output: str | None, results_dir: str | None, config_path: str | None) -> None:
    """Write RUN's trajectories for other tools: OpenTelemetry GenAI spans as OTLP JSON (--format otel), or one
    ATIF trajectory per trial (--format atif)."""
    from ..report._export import export_text
    from ..report.exchanges import sidecar_path
    from ..report.store import load_report

    _check_output_file(output, "--output")
    path = Path(run_ref) if Path(run_ref).is_file() else _store(results_dir, config_path).resolve(run_ref)
    path = path.resolve() if path.is_symlink() else path  # latest.json: the run it links (its exchanges beside it)
    text, count = export_text(load_report(path), fmt, sidecar_path(path))
    if output:
        from .._util.files import write_user_file

        write_user_file(Path(output), text)
        _say(f"wrote {output}: {count} trial(s) of {path} as {fmt}")
    else:
        click.echo(text, nl=False)

