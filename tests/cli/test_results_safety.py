"""Result files under faults: simultaneous runs never share a name or overwrite each other, temp files a killed
writer left are cleaned up by the next run, the user's report paths are written through symlinks and plainly to
devices and pipes, and a results folder that fills up or turns read-only mid-run still leaves the run findable."""

from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from trialrun.report.journal import Journal
from trialrun.report.store import ResultsStore, load_report

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX files and signals")


def _folder(project: Path) -> Path:
    return project / "state" / "eval"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


# -- simultaneous runs ----------------------------------------------------------------------------------------
def test_simultaneous_trialrun_runs_each_keep_their_own_result_file(project: Path) -> None:
    count = 6
    procs = [subprocess.Popen([sys.executable, "-m", "trialrun", "run", "read-file", "--label", f"who={i}"], cwd=project,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
             for i in range(count)]
    errors = [proc.communicate(timeout=120)[1] for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * count, errors
    files = sorted(_folder(project).glob("results_*.json"))
    reports = [load_report(path) for path in files]
    assert len(files) == count  # none vanished
    assert sorted(r.config_snapshot["labels"]["who"] for r in reports) == [str(i) for i in range(count)]
    assert len({r.run_id for r in reports}) == count
    assert not list(_folder(project).glob("*.jsonl")) and not list(_folder(project).glob(".*.tmp"))


RACER = textwrap.dedent('''
    import sys, time
    from datetime import datetime, timezone
    from pathlib import Path
    import trialrun as tr
    from trialrun.report.store import ResultsStore
    folder, who, go = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    report = tr.evaluate([tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[tr.expect.equals("x")])],
                         config_snapshot={"who": who})
    report.started_at = datetime(2026, 7, 31, 14, 0, 0, tzinfo=timezone.utc)  # the same second, every process
    store = ResultsStore(folder)
    while not go.exists():
        time.sleep(0.005)
    if int(who) % 2:  # half reserve their name at the start, as `trialrun run` does; half only save
        stem, journal = store.reserve(report.started_at)
        journal.close("completed")
        path = store.save(report, stem=stem)
        journal.remove()
    else:
        path = store.save(report)
    print(path.name)
''')


def test_runs_of_the_same_second_in_real_processes_get_distinct_names_and_none_is_overwritten(tmp_path: Path) -> None:
    go = tmp_path / "go"
    count = 8
    procs = [subprocess.Popen([sys.executable, "-c", RACER, str(tmp_path / "results"), str(i), str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(count)]
    time.sleep(1.5)  # every process imported trialrun and waits at the line
    go.touch()
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * count, outputs
    names = [out.strip() for out, _ in outputs]
    expected = ["results_20260731_140000.json"] + [f"results_20260731_140000_{n}.json" for n in range(2, count + 1)]
    assert sorted(names) == sorted(expected)
    whos = {load_report(tmp_path / "results" / name).config_snapshot["who"] for name in names}
    assert whos == {str(i) for i in range(count)}  # every run's own file: none overwritten


def test_a_result_file_is_never_replaced_even_under_a_reserved_name(tmp_path: Path) -> None:
    import trialrun as tr

    store = ResultsStore(tmp_path)
    report = tr.evaluate([tr.Case(name="a", invoke=lambda ctx: "x", expect_outcome=[tr.expect.equals("x")])])
    stem, journal = store.reserve(report.started_at)
    (tmp_path / f"{stem}.json").write_text("somebody else's run")  # an older trialrun took the name meanwhile
    saved = store.save(report, stem=stem)
    journal.remove()
    assert saved.name != f"{stem}.json" and (tmp_path / f"{stem}.json").read_text() == "somebody else's run"
    assert load_report(saved).run_id == "eval_" + saved.stem.removeprefix("results_")


# -- temp files a kill left -----------------------------------------------------------------------------------
KILLED_WRITER = textwrap.dedent('''
    import os, signal, sys
    from pathlib import Path
    from trialrun._util.files import write_atomic
    os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)  # killed in the middle of the write
    write_atomic(Path(sys.argv[1]) / "results_20260731_140000.json", "{" * 100_000)
''')

LOCK_HOLDER = textwrap.dedent('''
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o666)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(60)
''')


@posix
def test_temp_files_left_by_a_killed_write_are_removed_by_the_next_run(project: Path, cli) -> None:
    folder = _folder(project)
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(folder)], capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    left = list(folder.glob(".results_*.tmp"))
    assert len(left) == 1 and left[0].stat().st_size > 0
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    link = folder / f".latest.json.{dead.stdout.strip()}.tmp"  # a kill between the symlink and its rename
    os.symlink("results_20260731_140000.json", link)
    beside_junit = project / ".junit.xml.00112233aabb.tmp"  # a kill while writing --junit junit.xml
    beside_junit.write_text("<?xml")
    unrelated = project / ".notes.txt.00112233aabb.tmp"  # the user's, or another tool's: not trialrun's to remove
    unrelated.write_text("x")
    busy = folder / ".results_20260731_150000.json.0123456789ab.tmp"  # another run is writing this one now
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(busy)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        old = time.time() - 60
        for path in (*left, busy, beside_junit, unrelated):
            os.utime(path, (old, old))
        os.utime(link, (old, old), follow_symlinks=False)
        result = cli("run", "read-file", "--junit", "junit.xml")
        assert result.exit_code == 0
        assert f"note: removed 2 temp file(s) a killed run left in {folder}" in result.stderr
        assert not left[0].exists() and not os.path.lexists(link)
        assert busy.exists()  # locked by a live writer: kept
        assert not beside_junit.exists() and unrelated.exists()
    finally:
        holder.kill()
        holder.wait()


# -- the user's paths ---------------------------------------------------------------------------------------
@posix
def test_junit_through_a_symlink_writes_its_target_and_keeps_the_link(project: Path, cli) -> None:
    reports = project / "reports"
    reports.mkdir()
    target = reports / "junit.xml"
    target.write_text("old")
    target.chmod(0o640)
    link = project / "junit-link.xml"
    link.symlink_to(target)
    dangling = project / "md-link.md"
    dangling.symlink_to(reports / "new.md")  # its target does not exist yet
    assert cli("run", "read-file", "--junit", str(link), "--markdown", str(dangling)).exit_code == 0
    assert link.is_symlink() and dangling.is_symlink()
    assert target.read_text().startswith("<?xml") and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert (reports / "new.md").read_text().startswith("#")
    assert not list(reports.glob(".*.tmp")) and not list(project.glob(".*.tmp"))


@posix
def test_markdown_to_dev_stdout_and_to_a_pipe_is_written_plainly(project: Path) -> None:
    before = os.lstat("/dev/stdout")
    args = [sys.executable, "-m", "trialrun", "run", "read-file", "--markdown", "/dev/stdout"]
    piped = subprocess.run(args, cwd=project, capture_output=True, text=True, env=_env(), timeout=60)
    assert piped.returncode == 0, piped.stderr
    assert "1/1 passed" in piped.stdout  # the table, then the Markdown after it
    assert piped.stdout.index("1/1 passed") < piped.stdout.index("| read-file | ✅ passed")
    out_file = project / "out.txt"  # stdout redirected to a file: appended to, never replaced
    with out_file.open("w") as handle:
        inode = os.fstat(handle.fileno()).st_ino
        done = subprocess.run(args, cwd=project, stdout=handle, stderr=subprocess.PIPE, text=True, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    text = out_file.read_text()
    assert out_file.stat().st_ino == inode
    assert "1/1 passed" in text and "| read-file | ✅ passed" in text  # the table and the Markdown, both kept
    after = os.lstat("/dev/stdout")
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)  # /dev/stdout itself untouched

    fifo = project / "summary.fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    to_fifo = subprocess.run([*args[:-1], str(fifo)], cwd=project, capture_output=True, text=True, env=_env(), timeout=60)
    reader.join(30)
    assert to_fifo.returncode == 0, to_fifo.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and "read-file" in received[0]


# -- a results folder that fills up or turns read-only mid-run --------------------------------------------------
@posix
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS], ids=["full", "read-only"])
def test_a_results_dir_that_fails_mid_run_leaves_a_fallback_file_named_in_the_message(
        project: Path, cli, monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    folder = str(_folder(project).resolve())
    failing = threading.Event()

    def inside(path: object) -> bool:
        return failing.is_set() and os.path.abspath(os.fsdecode(path)).startswith(folder)  # type: ignore[arg-type]

    def refuse(path: object) -> OSError:
        return OSError(code, os.strerror(code), os.fsdecode(path))  # type: ignore[arg-type]

    real_open, real_write, real_link, real_replace, real_symlink = os.open, os.write, os.link, os.replace, os.symlink

    def fake_open(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if inside(path) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def fake_write(fd: int, data: bytes) -> int:
        try:
            where = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            where = ""
        if inside(where):
            raise refuse(where)
        return real_write(fd, data)

    def two_paths(real):  # type: ignore[no-untyped-def]
        def fake(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
            if inside(dst):
                raise refuse(dst)
            return real(src, dst, *args, **kwargs)
        return fake

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "write", fake_write)
    monkeypatch.setattr(os, "link", two_paths(real_link))
    monkeypatch.setattr(os, "replace", two_paths(real_replace))
    monkeypatch.setattr(os, "symlink", two_paths(real_symlink))
    real_append = Journal.append

    def append_then_fail(self: Journal, case: str, result: object) -> None:
        real_append(self, case, result)  # type: ignore[arg-type]
        failing.set()  # from the first finished trial on, the folder takes nothing more

    monkeypatch.setattr(Journal, "append", append_then_fail)
    result = cli("run", "all", "-k", "2")
    assert result.exit_code == 2
    reason = os.strerror(code)
    assert "warning: the journal stopped: " in result.stderr and reason in result.stderr
    message = next(line for line in result.stderr.splitlines() if line.startswith("error: the run was not saved"))
    assert reason in message and "it was saved to " in message
    fallback = Path(message.split("it was saved to ", 1)[1].split(" instead", 1)[0])
    try:
        report = load_report(fallback)
        assert fallback.parent == Path(__import__("tempfile").gettempdir())
        assert sum(len(c.trials) for c in report.cases) == 10 and report.status == "completed"  # every trial
        monkeypatch.undo()
        shown = cli("report", str(fallback), "--json")
        assert json.loads(shown.stdout)["run_id"] == report.run_id
    finally:
        fallback.unlink(missing_ok=True)


@posix
def test_schema_to_dev_stdout_is_written_plainly(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "trialrun", "schema", "-o", "/dev/stdout"], cwd=tmp_path,
                          capture_output=True, text=True, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["title"] == "trialrun suite (tests.json)"
    assert os.path.islink("/dev/stdout") or not stat.S_ISREG(os.lstat("/dev/stdout").st_mode)  # not replaced
