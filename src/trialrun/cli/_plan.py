"""What a run will do, decided before anything runs, shared by a plain `trialrun run` (`_run`) and an A/B run
(`_arms`): the tests chosen, the plan, the results store made ready, and the exit code of a signal."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from ._common import EXIT_INTERRUPTED, _check_output_file, _check_results_dir

__all__ = ["Plan", "chosen", "ready_to_save", "signal_exit", "selection"]


@dataclass(frozen=True)
class Plan:
    """What the run will do, checked before anything runs: the suite, the tests chosen and their cases, whether live
    canaries run, and (case name, trials) of each case whose trials run (a live canary's only when they do)."""

    suite_file: Any
    chosen: list[str]
    cases: list[Any]
    include_live_canary: bool
    trials: list[tuple[str, int]]

    @property
    def count(self) -> int:
        return sum(n for _, n in self.trials)


def chosen(suite_file: Any, config: Any, test_ids: tuple[str, ...], names: tuple[str, ...],
            tags: tuple[str, ...]) -> list[str]:
    """The ids of the suite's tests that the TEST_IDs, --name and --tag select, in the suite's order; a usage error
    for an id the suite does not have, or a selection of none."""
    wanted = [t for t in test_ids if t != "all"] + list(names)
    known = [t.id for t in suite_file.tests]
    known_ids = set(known)
    unknown = [t for t in wanted if t not in known_ids]
    if unknown:
        shown = ", ".join(known[:20]) + (f", ... ({len(known) - 20:,} more)" if len(known) > 20 else "")
        raise click.UsageError(f"no test {', '.join(map(repr, unknown[:20]))} in {config.suite_path()} (tests: {shown})")
    known_tags = sorted({tag for test in suite_file.tests for tag in test.tags})
    unknown_tags = [tag for tag in tags if tag not in known_tags]
    if unknown_tags:
        import difflib

        close = [c for tag in unknown_tags for c in difflib.get_close_matches(tag, known_tags, n=1, cutoff=0.6)]
        raise click.UsageError(f"no test in {config.suite_path()} has the tag {', '.join(map(repr, unknown_tags))}"
                               + (f"; did you mean {', '.join(map(repr, close))}?" if close else "")
                               + f" (tags: {', '.join(known_tags) or 'none'})")
    wanted_ids = set(wanted)
    chosen = [t.id for t in suite_file.tests if (not wanted or t.id in wanted_ids) and (not tags or set(tags) & set(t.tags))]
    if not chosen:
        raise click.UsageError(f"no test matches the selection ({selection(test_ids, names, tags)})")
    return chosen


def ready_to_save(config: Any, junit_path: str | None, markdown_path: str | None) -> Any:
    """The results store, its folder made and writable, and the report files writable (the temp files a killed run
    left beside them removed), before anything runs."""
    from ..report.store import ResultsStore

    store = ResultsStore(config.results_path())
    _check_results_dir(store.directory)
    _check_output_file(junit_path, "--junit")
    _check_output_file(markdown_path, "--markdown")
    remove_stale_temps_of(junit_path, markdown_path)
    return store


def remove_stale_temps_of(*paths: str | None) -> None:
    """The temp files a killed run left next to the report files it was writing (`.junit.xml.<hex>.tmp`)."""
    from .._util.files import remove_stale_temps

    for value in paths:
        if value:
            target = Path(os.path.realpath(value))
            remove_stale_temps(target.parent, only_for=target.name)


def signal_exit(signum: int | None) -> int:
    """The exit code of a run a signal stopped: 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + signum if signum else EXIT_INTERRUPTED


def selection(test_ids: tuple[str, ...], names: tuple[str, ...], tags: tuple[str, ...]) -> str:
    """Every filter `run` was given, for a message about what it selected."""
    ids = [t for t in test_ids if t != "all"]
    parts = [f"{label}: {', '.join(values)}" for label, values in (("ids", ids), ("names", names), ("tags", tags)) if values]
    return "; ".join(parts) or "all tests"
