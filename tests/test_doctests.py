"""The examples in trialrun's docstrings run as tests (a doc example that no longer works is a bug)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import trialrun

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(trialrun.__path__, "trialrun.") if not info.name.endswith("__main__")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"


def test_there_are_docstring_examples() -> None:
    finder = doctest.DocTestFinder()
    total = sum(len(test.examples) for name in MODULES for test in finder.find(importlib.import_module(name)))
    assert total >= 10
