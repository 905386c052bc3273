"""Results folders for the viewer's hostile-input tests, and `trialrun view` run as a real process.

A folder is made by the real `trialrun run` (the bundled quickstart, twice, 2 trials per test): two result files,
their exchanges sidecars and latest.json, exactly as a user's folder holds them. The hostile files are put in by
each test. The viewer under test is the real `trialrun view` command in a process of its own, with an address-
space limit, so a file that would take it to MemoryError (or hang it) does so there, not in the test process."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "examples" / "quickstart"
#: A test of the quickstart, run in both runs (its trial 1 has turns, each linked to its exchange).
TEST = "read-file"
#: The address space the viewer process may take (a /dev/zero read runs into it at once).
MEMORY_LIMIT = 1536 * 2**20


def make_runs(folder: Path, runs: int = 2) -> Path:
    """Copy the quickstart into `folder`, run it `runs` times (2 trials per test) and return its results folder."""
    from trialrun.cli import main

    project = folder / "quickstart"
    shutil.copytree(QUICKSTART, project, ignore=shutil.ignore_patterns("results_*", "latest.json"))
    cwd = os.getcwd()
    os.chdir(project)
    try:
        for _ in range(runs):
            result = CliRunner().invoke(main, ["run", "all", "--trials", "2"])
            assert result.exit_code in (0, 1), result.output
            time.sleep(1.05)  # a result file's name is its second: the next run gets its own
    finally:
        os.chdir(cwd)
    results = project / "state" / "eval"
    assert len(list(results.glob("results_*.json"))) == runs
    return results


def stems(results: Path) -> list[str]:
    """The stems of the (regular) result files, oldest first."""
    return sorted(p.stem for p in results.glob("results_*.json") if p.is_file())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _limited() -> None:  # pragma: no cover - runs in the child
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@contextmanager
def view_process(results: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`trialrun view RESULTS --port N` (the real command, of the trialrun under test) until the block ends;
    yields its base URL and the process."""
    port = _free_port()
    import trialrun

    source = Path(trialrun.__file__).resolve().parents[1]  # the trialrun this test process tests
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "trialrun", "view", str(results), "--port", str(port)],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_limited)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"trialrun view exited ({process.returncode}): {process.stderr.read().decode()}")
            try:
                httpx.get(base + "/api/live/none", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise RuntimeError("trialrun view did not answer within 30 s") from None
                time.sleep(0.1)
        yield base, process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def release_fifo(path: Path) -> None:
    """Give every reader blocked opening the FIFO at `path` its end of file (a writer opens it and closes it), so
    a viewer that did block on it (before the fix) can be stopped."""
    for _ in range(50):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody has it open for reading
            return
        os.close(fd)
        time.sleep(0.02)
