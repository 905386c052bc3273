"""How xdist shares the suite among its workers (tests/conftest.py's `pytest_xdist_make_scheduler`).

pyproject's addopts say `--dist loadfile`: a test file is one unit of work, so a module-scoped fixture (the real
agents' results, mypy over the README's examples, a browser) runs once. The Ray tests are one unit of work across
their files: one worker runs them all, on one local cluster (tests/ray/conftest.py's `ray_cluster`, started for the
folder and stopped when it is done), where loadfile alone started a cluster (Ray's daemons, about 6 s of CPU, idle
until the run ended) on every worker that got one of their files.

xdist's own answer, `--dist loadgroup` with an `xdist_group` mark, groups nothing on pytest 9.2 with xdist 3.8: xdist
writes the group into `item._nodeid`, which pytest 9.2 no longer reads (the node id is `item._id` there), so every
file stayed a unit of its own (seen: a module marked `xdist_group` ran on three workers). The scheduler below is
what xdist's loadfile and loadgroup schedulers themselves are: its scope scheduler with `_split_scope` (the one
method they override) saying what a unit is. It is test code only; the suite still runs without xdist."""

from __future__ import annotations

# folders whose tests are one unit of work, whichever of their files they are in
ONE_UNIT = ("tests/ray/",)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its folder for a folder in ONE_UNIT, else its file."""
    path = nodeid.split("::", 1)[0]
    for folder in ONE_UNIT:
        if path.startswith(folder):
            return folder.rstrip("/")
    return path


def scheduler_class() -> type:
    """xdist's file scheduler, with a folder in ONE_UNIT as one unit."""
    from xdist.scheduler import LoadFileScheduling

    class OneUnitFolders(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return OneUnitFolders
