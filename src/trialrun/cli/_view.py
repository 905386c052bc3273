"""`trialrun view`: the local web app over a results dir (`trialrun.view`)."""

from __future__ import annotations

import sys

import click

from ._common import EXIT_USAGE, _fail_cleanly, _say, _store


@click.command()
@click.argument("results_dir", required=False, type=click.Path(file_okay=False))
@click.option("--port", type=click.IntRange(min=1, max=65535), default=8765, show_default=True, help="Port to listen on.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address or name to bind. Unless every address it resolves to is loopback, it is reachable from "
                   "other machines: a warning is printed and every page then needs the session token in the printed URL.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser once it is served.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Configuration file.")
@_fail_cleanly
def view(results_dir: str | None, port: int, open_browser: bool, config_path: str | None,
         host: str = "127.0.0.1") -> None:
    """Browse the runs of RESULTS_DIR (default: the suite's folder) in a local web app on 127.0.0.1: runs list,
    trends, each test's history, two runs compared, trajectory diffs, trials with their verdicts, runs in progress,
    search, and output quality graded by hand. Needs `trialrun[view]`."""
    try:
        from ..view import serve
    except ImportError as exc:  # pragma: no cover - view.py imports nothing optional at its top
        raise click.ClickException(str(exc)) from None
    store = _store(results_dir, config_path, runs=0)  # (a folder without runs yet is fine: new runs appear)
    from ..view import HostUnresolved, PortBusy

    try:
        serve(store.directory, port=port, host=host, open_browser=open_browser)
    except (ImportError, PortBusy, HostUnresolved) as exc:
        _say(f"error: {exc.strerror if isinstance(exc, OSError) else exc}")
        sys.exit(EXIT_USAGE)
    except KeyboardInterrupt:
        pass
