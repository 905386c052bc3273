"""`.ci/run` runs the suite on 3.10 and the newest CPython where they are installed; where one is absent it says so
and does not fail (nothing is downloaded)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(sys.platform == "win32" or shutil.which("bash") is None, reason="a bash script")
def test_absent_interpreters_are_named_and_do_not_fail_ci(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with the tools the script uses and only the default python3
    bin_dir.mkdir()
    for tool in ("bash", "ls", "grep", "sort", "sed", "tail", "dirname", "cat"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path), "PYENV_ROOT": str(tmp_path / "no-pyenv"), "CI_EXTRA_ONLY": "1"}
    done = subprocess.run(["bash", str(ROOT / ".ci" / "run")], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"note: no Python 3.10 here (looked in {tmp_path / 'no-pyenv' / 'versions'} and on PATH)" in done.stderr
    default = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert "the suite did not run on it" in done.stderr or default == "3.10"
    assert f"no CPython newer than the default {default} here" in done.stderr
    assert "== the suite on" not in done.stdout  # nothing ran, nothing was installed
