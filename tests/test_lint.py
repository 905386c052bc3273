"""ruff over the whole repository with pyproject.toml's settings (pyflakes, bugbear, import order, pyupgrade to
3.10) finds nothing; the same settings do find what they forbid; and no baseline waves findings through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]

def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_ruff_finds_nothing_in_the_repository() -> None:
    done = _ruff(".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_settings_find_what_they_forbid(tmp_path: Path) -> None:
    """The first test passes because the tree is clean, not because ruff looks at nothing: a file beside the
    project's settings with one of each rule family's findings fails."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "bad.py").write_text("import sys\nimport os\nfrom typing import Optional\n\n\n"
                                     "def f(x: Optional[int] = None, y: list = []) -> None:\n    pass\n")
    done = _ruff("bad.py", cwd=tmp_path)
    assert done.returncode == 1
    found = {line.split(": ")[1].split()[0] for line in done.stdout.splitlines() if ": " in line and "bad.py" in line}
    assert {"I001", "F401", "B006", "UP045"} <= found or {"I001", "F401", "B006", "UP007"} <= found, done.stdout


def test_no_finding_is_waved_through_by_a_baseline() -> None:
    """The baseline of what the tree held when ruff came in was fixed away once every branch was merged: the only
    ignores left are per-file ones, each with its reason beside it in pyproject.toml."""
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert "extend-per-file-ignores" not in lint
    assert all(set(rules) <= {"B023", "UP007"} for rules in lint.get("per-file-ignores", {}).values())
