"""`trialrun run` pauses garbage collection while it imports and builds, and freezes what was alive before the run
(`gc.freeze`); called in-process (as tests and notebooks do), it leaves the collector as it found it, also when
the command fails before the run or the caller had collection disabled."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def collector() -> Iterator[None]:
    was = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_the_collector_is_as_it_was_after_a_run(project: Path, cli, collector: None, enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    result = cli("run", "all")
    assert result.exit_code == 1 and "3/5 passed" in result.output  # the quickstart: two tests fail
    assert gc.isenabled() is enabled and gc.get_freeze_count() == 0


def test_the_collector_is_back_when_the_command_fails_before_the_run(project: Path, cli, collector: None) -> None:
    gc.enable()
    result = cli("run", "no-such-test")
    assert result.exit_code == 2 and "no test 'no-such-test'" in result.output
    assert gc.isenabled() and gc.get_freeze_count() == 0
