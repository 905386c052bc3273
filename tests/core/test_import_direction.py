"""Data flows one way, and the layout says so: every package of trialrun stands on a floor, a module imports only
from its own floor or lower ones, and no two modules import each other, not even lazily inside a function or for
type checkers only (suite files -> cases -> run -> report -> render, with the helpers underneath).

The contracts are import-linter's, in pyproject.toml (`[tool.importlinter]`); `lint-imports` checks them here. That
they can fail is shown on a copy of the source with imports against them written in."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import trialrun

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(trialrun.__file__).resolve().parent
REPO = Path(__file__).resolve().parents[2]
CONTRACTS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
#: The floors, lowest first, from the layers contract (written highest first): the members of each.
FLOORS: list[set[str]] = [{part.strip() for part in layer.split(":")}
                          for layer in reversed(next(c for c in CONTRACTS if c["type"] == "layers")["layers"])]


def _lint_imports(*args: str, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"PYTHONPATH": str(pythonpath)} if pythonpath else {})}
    return subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                           "--no-cache", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def test_the_contracts_hold() -> None:
    done = _lint_imports()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in done.stdout, done.stdout


def test_the_contracts_fail_on_imports_against_them(tmp_path: Path) -> None:
    """The contracts hold because the imports are absent, not because the checker is blind: in a copy of the
    source, an upward import made lazily inside a function, one made for type checkers only, and a circle between
    two modules of one package each break the contract that forbids them, and each is named."""
    copy = tmp_path / "src" / "trialrun"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    results = copy / "report" / "results.py"  # floor 11 importing the runner (12) and a renderer (15)
    results.write_text(results.read_text(encoding="utf-8") + "\n\ndef _lazy() -> None:\n    from ..run import runner\n\n\n"
                       "from typing import TYPE_CHECKING as _CHECKING\n\nif _CHECKING:\n    from ..render.text import render_text\n",
                       encoding="utf-8")
    metrics = copy / "report" / "metrics.py"  # results <-> metrics: a circle on one floor
    metrics.write_text(metrics.read_text(encoding="utf-8") + "\nfrom . import results as _results\n", encoding="utf-8")
    tests_file = copy / "suite" / "_tests_file.py"
    tests_file.write_text(tests_file.read_text(encoding="utf-8") + "\nfrom . import _build as _later\n",
                          encoding="utf-8")
    done = _lint_imports(pythonpath=tmp_path / "src")
    assert done.returncode == 1, done.stdout + done.stderr
    out = re.sub(r"\s+", " ", done.stdout)
    assert f"Contracts: 0 kept, {len(CONTRACTS)} broken." in out, done.stdout
    assert "trialrun.report.results -> trialrun.run.runner" in out, done.stdout
    assert "trialrun.report.results -> trialrun.render.text" in out, done.stdout
    assert "No cycles are allowed in trialrun.report." in out, done.stdout
    assert re.search(r"\.(results|metrics) -> \.(metrics|results)", out), done.stdout
    assert "trialrun.suite._tests_file -> trialrun.suite._build" in out, done.stdout


def test_every_package_stands_on_a_floor() -> None:
    """What `exhaustive` checks in the layers contract, said here too: the floors name exactly what is there."""
    stages = {path.stem if path.is_file() else path.name for path in ROOT.iterdir()
              if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()}
    assert set().union(*FLOORS) == stages


def test_every_package_says_its_job_and_what_it_may_import() -> None:
    packages = sorted(ROOT.glob("*/__init__.py"))
    assert len(packages) >= 15
    for path in packages:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert len(doc.split()) >= 20, f"{path.parent.name}/__init__.py: no docstring saying its job"
        assert "May import" in doc, f"{path.parent.name}/__init__.py does not say what it may import"


def test_the_layout_page_shows_every_floor_in_order() -> None:
    """docs/development.md's table of floors is the contract's: every package on its floor, in the same order."""
    page = (REPO / "docs" / "development.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| ") and line[2:3].isdigit()]
    assert len(rows) == len(FLOORS)
    for number, (row, stages) in enumerate(zip(rows, FLOORS)):
        cells = row.split("|")
        assert cells[1].strip() == str(number), row
        named = set(re.findall(r"`([\w.]+?)(?:/|\.py)`", cells[2]))
        assert named == {stage for stage in stages if stage not in ("_version", "__main__")}, row
