"""Reading and writing the files users hand trialrun, with one error style and one atomic write."""

from __future__ import annotations

import errno
import gc
import os
import re
import secrets
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import safe_read as _safe_read

__all__ = ["read_text", "MAX_BYTES", "gc_paused", "write_atomic", "write_new", "write_user_file", "remove_stale_temps",
           "unencodable_text", "TOO_DEEP", "hold_lock", "write_all"]

#: The largest file trialrun reads by default (the one reader's, `_safe_read`).
MAX_BYTES = _safe_read.MAX_BYTES

try:  # POSIX: a temp file being written is locked, so a cleaner can tell it from one a killed process left
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: What `link` says on a file system without hard links.
_NO_HARD_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.ENOSYS, errno.EMLINK}

#: The temp files `write_atomic` makes: `.<name>.<12 hex>.tmp`.
_TEMP = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")

#: The message for a file nested so deeply the parser gives up (`[[[[...]]]]`): a mistake to name, not a crash.
TOO_DEEP = "nested too deeply to read (thousands of levels of lists or mappings)"


def read_text(path: Path, what: str, error: type[Exception], *, missing: str | None = None,
              limit: int | None = None) -> str:
    """A file's text, or `error` with a message naming the file: "<path>: <what> not found" (or `missing`).

    Read by the one safe reader (`_safe_read`): only a regular file (a FIFO would block forever, /dev/zero never
    end), looked at before it is opened and again once open, and at most `limit` bytes (MAX_BYTES by default).
    """
    try:
        return _safe_read.read_text(path, what, limit=MAX_BYTES if limit is None else limit, missing=missing)
    except _safe_read.UnreadableFile as exc:
        raise error(str(exc)) from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a big file is parsed into plain data: the data holds no cycles
    (YAML aliases that would make one are refused), yet every collection walks all of it, which made loading 100,000
    tests spend about two thirds of its time collecting nothing. Reference counting still frees as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def unencodable_text(data: object) -> str | None:
    """Where `data` (parsed JSON) holds text that cannot be written back as UTF-8 (a lone surrogate such as
    "\\ud800", which JSON allows), as a dotted path (`3.name`); None when it has none. Such text would fail only
    later, when the finished run is saved or printed."""
    stack: list[tuple[str, object]] = [("", data)]
    while stack:
        where, value = stack.pop()
        items: list[tuple[str, object]] = []
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return where or "(the whole value)"
        elif isinstance(value, dict):
            items = [(f"{where}.{key}" if where else str(key), item) for key, item in value.items()]
            items += [(f"{where}.{key}" if where else str(key), key) for key in value if isinstance(key, str)]
        elif isinstance(value, list):
            items = [(f"{where}.{index}" if where else str(index), item) for index, item in enumerate(value)]
        stack.extend(reversed(items))
    return None


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the whole new one, never a part:
    a temp file in the same folder, flushed to disk, then renamed over the target.

    The file gets the permissions any new file would (0o666 less the umask), or keeps those of the file it
    replaces, so results stay readable by the team and CI steps that `mkstemp`'s private 0o600 would lock out.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _written_temp(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_new(path: Path, text: str) -> None:
    """Write `text` to `path` atomically, never replacing a file already there (FileExistsError then): the temp
    file is hard-linked into place, which fails if the name is taken. Where the file system has no hard links,
    `path` is created exclusively and written in place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _written_temp(path, text)
    try:
        os.link(tmp, path)
    except OSError as exc:
        if exc.errno not in _NO_HARD_LINKS:
            raise
        # no hard links here (FAT, some network file systems): create the name exclusively, write in place
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    finally:
        Path(tmp).unlink(missing_ok=True)


def hold_lock(fd: int) -> None:
    """Take an exclusive lock on `fd`, held until it is closed: "being written, not abandoned" to
    `remove_stale_temps` and to readers of journals (nothing where there is no flock, Windows). OSError when refused."""
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd` (os.write may write less than it is given: a pipe, a signal, a nearly full disk)."""
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])


def _written_temp(path: Path, text: str) -> str:
    """A temp file next to `path` holding `text`, on disk (fsync), with the permissions `path` has or would get."""
    fd, tmp = _create_temp(path)
    try:
        hold_lock(fd)
        try:
            keep = os.stat(path).st_mode & 0o7777
        except OSError:
            keep = None
        if keep is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, keep)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def remove_stale_temps(directory: Path, *, min_age_s: float = 2.0, only_for: str | None = None) -> list[Path]:
    """Remove the temp files a killed writer left in `directory` (`write_atomic`'s, `.latest.json.<pid>.tmp`);
    a temp file another process is writing right now (locked, of a live pid, or younger than `min_age_s`: the
    moments between creating and locking it) is left alone. `only_for`: only the temp files of that file name (in a
    folder of the user's, next to a --junit file)."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        latest = re.match(r"^\.latest\.json\.(\d+)\.tmp$", entry.name)
        if not (_TEMP.match(entry.name) or latest) or (only_for and not entry.name.startswith(f".{only_for}.")):
            continue
        if latest and _alive(int(latest.group(1))):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            if now - info.st_mtime < min_age_s or not _unlocked(entry.path, info):
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _alive(pid: int) -> bool:
    """Whether a process with this pid runs (on Windows, where os.kill would end it, assume it does)."""
    if pid == os.getpid() or os.name == "nt":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True
    return True


def _unlocked(path: str, info: os.stat_result) -> bool:
    """Nobody holds a lock on this temp file (a symlink, which cannot be locked, counts as unlocked)."""
    if fcntl is None or stat.S_ISLNK(info.st_mode):
        return True
    return not locked(path, nofollow=True)


def locked(path: str | os.PathLike[str], *, nofollow: bool = False) -> bool:
    """Whether a process holds a lock on the file (a writer that is still at work: a run's journal, a temp file
    being written). False without flock (Windows) or when the file cannot be opened."""
    if fcntl is None:  # pragma: no cover - Windows
        return False
    try:  # a regular file only, opened without blocking (a FIFO named like a journal must not hang its reader)
        fd = _safe_read.open_regular(path, "file", limit=None, nofollow=nofollow)
    except _safe_read.UnreadableFile:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def write_user_file(path: Path, text: str) -> None:
    """Write a file the user named (--junit, --markdown, --html, -o): through a symlink to its target (atomically
    there when the target is, or will be, a regular file), and plainly, in place, to a device, a pipe or anything
    else that is not a regular file (`/dev/stdout`, a FIFO), which must never be replaced by a regular file."""
    if _special(path):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_BINARY", 0))
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    write_atomic(Path(os.path.realpath(path)), text)


def _special(path: Path) -> bool:
    """Not (to be) a regular file: an existing non-regular file, or anything under /dev or /proc (/dev/stdout
    resolves, through /proc/self/fd/1, to whatever stdout is, a redirected file included)."""
    given = os.path.abspath(path)
    if given.startswith(("/dev/", "/proc/")) or os.path.realpath(path).startswith(("/dev/", "/proc/")):
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _create_temp(path: Path) -> tuple[int, str]:
    """A new, exclusive temp file next to `path`. Created with mode 0o666 so the process umask applies, without
    changing the umask itself (which would race with other threads creating files)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
