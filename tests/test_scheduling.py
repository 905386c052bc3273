"""The suite's xdist scheduling (tests/_scheduling.py): the Ray tests are one unit of work, every other file its own."""

from __future__ import annotations

from pathlib import Path

import _scheduling

TESTS = Path(__file__).resolve().parent


def test_every_ray_test_file_is_in_one_unit() -> None:
    files = sorted(p.relative_to(TESTS.parent).as_posix() for p in (TESTS / "ray").glob("test_*.py"))
    assert len(files) >= 5
    assert {_scheduling.unit_of(f"{f}::test_x[a::b]") for f in files} == {"tests/ray"}


def test_any_other_test_is_its_files_unit() -> None:
    assert _scheduling.unit_of("tests/cli/test_run_options.py::test_x[tests/ray/]") == "tests/cli/test_run_options.py"
    assert _scheduling.unit_of("tests/test_scheduling.py::Test::test_y") == "tests/test_scheduling.py"
    assert _scheduling.unit_of("tests/raytheon/test_a.py::t") == "tests/raytheon/test_a.py"


def test_the_scheduler_xdist_uses_splits_by_unit() -> None:
    """The hook's scheduler is xdist's scope scheduler asking unit_of: a change in xdist that renames the overridden
    method shows here, not as a silently ungrouped run."""
    from xdist.scheduler import LoadScopeScheduling

    cls = _scheduling.scheduler_class()
    assert issubclass(cls, LoadScopeScheduling)
    assert "_split_scope" in vars(LoadScopeScheduling)  # the method xdist's scope scheduler calls for a unit
    assert cls._split_scope(None, "tests/ray/test_ray_cli.py::t") == "tests/ray"
    assert cls._split_scope(None, "tests/cli/test_x.py::t") == "tests/cli/test_x.py"
