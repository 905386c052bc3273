"""A full disk while grading (issue 33.6): `trialrun grade`, `trialrun regrade` and the viewer's form say which file
in which folder could not be written (before: only "No space left on device"), exit 2, and lose nothing: the result
file is byte for byte what it was and no temp file is left. The disk is filled by making the write's fsync fail
with ENOSPC (where a real full disk reports it for a file system that delays its writes), and, where this process
may mount one, by a real 64 KiB tmpfs."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from trialrun.cli import main
from trialrun.view import create_app

RESULTS = Path("state") / "eval"


def _no_space(fd: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture
def run(project: Path, cli) -> Path:
    assert cli("run", "all").exit_code == 1
    (path,) = sorted((project / RESULTS).glob("results_*.json"))
    return path


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and p.name != ".trialrun.lock"}


def test_grade_on_a_full_disk_names_the_file_and_folder_and_changes_nothing(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(run.parent)
    monkeypatch.setattr(os, "fsync", _no_space)
    result = CliRunner().invoke(main, ["grade", "latest", "read-file", "0.25"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: could not write the result file {run.name} in the folder {run.parent}: "
                                    "No space left on device (the disk is full"), result.output
    assert "it is as it was" in result.output and "Traceback" not in result.output
    assert _snapshot(run.parent) == before  # the file as it was, no temp file left behind


def test_regrade_on_a_full_disk_names_the_file_and_folder_and_writes_nothing(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(run.parent)
    monkeypatch.setattr(os, "fsync", _no_space)
    result = CliRunner().invoke(main, ["regrade"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: could not write the result file results_"), result.output
    assert f"in the folder {run.parent}: No space left on device" in result.output
    assert "nothing was written" in result.output
    assert _snapshot(run.parent) == before


def test_the_viewers_grade_on_a_full_disk_says_the_file_and_folder(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _snapshot(run.parent)
    client = TestClient(create_app(run.parent, token="t0ken"), base_url="http://127.0.0.1")
    monkeypatch.setattr(os, "fsync", _no_space)
    posted = client.post("/grade", data={"token": "t0ken", "run": run.stem, "test": "read-file", "quality": "0.25",
                                         "trial": "all", "back": "/"}, follow_redirects=False)
    assert posted.status_code == 507
    assert f"could not write the result file {run.name} in the folder {run.parent}" in posted.text.replace("&#x27;", "'")
    assert _snapshot(run.parent) == before


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(["unshare", "--mount", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt && umount /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs root and a private mount namespace (unshare) for a tmpfs")
def test_grade_on_a_real_full_tmpfs(run: Path, tmp_path: Path) -> None:
    """The result file on a 64 KiB tmpfs with its space taken: the real ENOSPC, from the real write."""
    mount = tmp_path / "small"
    mount.mkdir()
    script = f"""
mount -t tmpfs -o size=64k tmpfs {mount} || exit 9
cp {run} {mount}/
dd if=/dev/zero of={mount}/filler bs=4k count=1000 2>/dev/null || true
{sys.executable} -m trialrun grade {run.name} read-file 0.25 --results-dir {mount}; echo "exit $?"
cmp {run} {mount}/{run.name} && echo unchanged
ls -a {mount}
"""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run(["unshare", "--mount", "sh", "-c", script], capture_output=True, text=True, env=env,
                          timeout=120)
    out = done.stdout + done.stderr
    assert f"error: could not write the result file {run.name} in the folder {mount}: No space left on device" in out, out
    assert "exit 2" in out and "unchanged" in out
    assert not [line for line in out.splitlines() if line.endswith(".tmp")], out  # no temp file left
    assert json.loads(run.read_text())["cases"]  # (the original, outside the tmpfs, untouched too)
