"""src/trialrun type-checks under the project's mypy settings (pyproject.toml's [tool.mypy]: --strict, bare generics
allowed in the shell analyser's internals, Python 3.10): the package ships py.typed, so a wrong hint is a defect
its users' type checkers see.

One mypy run checks the package together with BAD, a user's module with a type error, to show the check can fail:
an error in any file that is not allow-listed fails the test."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "trialrun"
#: a user's module: compare() takes two RunReports, not their files' paths
BAD = "import trialrun as tr\n\n\ndef f() -> None:\n    tr.compare('before.json', 'after.json')\n"
#: kept between runs (cold, mypy reads pydantic's, httpx's and pytest's types: ~25 s; warm ~1 s); mypy checks it is
#: current. One per checkout: mypy repeats a fresh module's errors from its cache with the path they were found at
MYPY_CACHE = Path(tempfile.gettempdir()) / (f"trialrun-source-mypy-{sys.version_info[0]}.{sys.version_info[1]}-"
                                            + hashlib.sha1(str(ROOT).encode()).hexdigest()[:8])
_ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<line>\d+): error: (?P<message>.*)$", re.MULTILINE)
_CHECKED = re.compile(r"(?:in|checked) (\d+) source files?")


@pytest.fixture(scope="module")
def mypy_errors() -> dict[str, list[str]]:
    """mypy's errors by file (paths relative to the repository; BAD's as "bad_usage.py"), from one run."""
    bad = MYPY_CACHE.with_name(MYPY_CACHE.name + "-bad") / "bad_usage.py"  # one place, for the same reason
    bad.parent.mkdir(exist_ok=True)
    if not bad.is_file() or bad.read_text(encoding="utf-8") != BAD:
        bad.write_text(BAD, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(MYPY_CACHE),
         "--python-executable", sys.executable, "--show-absolute-path", str(PACKAGE), str(bad)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]  # 2: mypy itself failed
    checked = _CHECKED.search(done.stdout.strip().splitlines()[-1])
    assert checked and int(checked.group(1)) == len(list(PACKAGE.rglob("*.py"))) + 1, done.stdout[-2000:]
    found: dict[str, list[str]] = {}
    for m in _ERROR.finditer(done.stdout):
        path = Path(m.group("path"))
        where = "bad_usage.py" if path == bad else path.relative_to(ROOT).as_posix()
        found.setdefault(where, []).append(f"{where}:{m.group('line')}: {m.group('message')}")
    return found


def test_src_trialrun_type_checks(mypy_errors: dict[str, list[str]]) -> None:
    errors = [line for where, lines in sorted(mypy_errors.items()) if where != "bad_usage.py"
              for line in lines]
    assert not errors, f"mypy (pyproject.toml's settings) finds {len(errors)} error(s):\n" + "\n".join(errors)


def test_a_type_error_is_caught(mypy_errors: dict[str, list[str]]) -> None:
    errors = mypy_errors.get("bad_usage.py", [])
    assert len(errors) == 2 and all(":5: " in e and '"compare"' in e and "RunReport" in e for e in errors), errors

