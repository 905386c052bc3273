"""The tests `.ci/run` runs on 3.10 and the newest CPython (tests/_by_version.py) cover every module whose
behaviour may differ by Python version: a module that shows a version sign and is not listed, or a listed one with
no test file, fails here (and so does a test that would let either pass unseen)."""

from __future__ import annotations

import ast

import pytest
from _by_version import (
    BY_VERSION,
    NOT_MODULES,
    SRC,
    TESTS,
    by_version_files,
    listed,
    modules_with_version_signs,
    version_signs,
)


def test_every_module_that_shows_a_version_sign_has_tests_run_on_every_interpreter() -> None:
    unlisted = {module: signs for module, signs in modules_with_version_signs().items() if not listed(module)}
    assert unlisted == {}, ("these modules differ by Python version: add them to tests/_by_version.py with the tests "
                            "that exercise them")


@pytest.mark.parametrize("entry", sorted(BY_VERSION))
def test_each_entry_names_a_module_that_exists_and_test_files_with_tests(entry: str) -> None:
    why, tests = BY_VERSION[entry]
    assert why and tests, entry
    if entry not in NOT_MODULES:
        assert (SRC / entry).is_dir() if entry.endswith("/") else (SRC / entry).is_file(), entry
    for test in tests:
        path = TESTS / test
        assert path.is_file(), f"{entry}: {test} does not exist"
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_")
                   for node in tree.body), f"{entry}: {test} has no test"


def test_the_marker_is_given_to_exactly_the_listed_files(request: pytest.FixtureRequest) -> None:
    """What `pytest -m by_version` selects: every test of the listed files and nothing else, among the tests of
    this session (this file is not listed: its tests do not carry the marker)."""
    files = by_version_files()
    assert "test_by_version.py" not in files
    for item in request.session.items:
        relative = item.path.relative_to(TESTS).as_posix()
        assert (item.get_closest_marker("by_version") is not None) == (relative in files), item.nodeid


def test_the_signs_are_seen() -> None:
    """The first test passes because the modules are listed, not because the search is blind."""
    assert version_signs("if sys.version_info >= (3, 11):") == ["sys.version_info"]
    assert version_signs("Python 3.10's fromisoformat does not read the `Z`") == ["Python 3.10"]
    assert version_signs("a comprehension with await is one more coroutine before 3.12") == ["before 3.12"]
    assert version_signs("python3.12 -c 'print(1)'; version 3.4.1") == []
    found = modules_with_version_signs()
    assert "_util/toml_read.py" in found and "run/runner.py" in found
    assert not listed("trajectory.py") and listed("_contain/keeper.py")
