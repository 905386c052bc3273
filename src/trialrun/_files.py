"""Reading and writing the files users hand trialrun, with one error style and one atomic write."""

from __future__ import annotations

import gc
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["read_text", "MAX_BYTES", "gc_paused", "write_atomic", "unencodable_text", "TOO_DEEP"]

#: The largest file trialrun reads by default (suites, configurations, cassettes, scripted model files, price
#: files): 100,000 tests are about 20 MiB; a file far larger is a mistake (or an attack), not something to parse.
MAX_BYTES = 64 * 2**20

#: The message for a file nested so deeply the parser gives up (`[[[[...]]]]`): a mistake to name, not a crash.
TOO_DEEP = "nested too deeply to read (thousands of levels of lists or mappings)"


def read_text(path: Path, what: str, error: type[Exception], *, missing: str | None = None,
              limit: int | None = None) -> str:
    """A file's text, or `error` with a message naming the file: "<path>: <what> not found" (or `missing`).

    Only a regular file is read (a FIFO would block forever, /dev/zero never end), and at most `limit` bytes
    (MAX_BYTES by default): the file is opened without blocking, then checked, so nothing can swap in between.
    """
    limit = MAX_BYTES if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise error(f"{path}: {missing or what + ' not found'}") from None
    except IsADirectoryError:
        raise error(f"{path}: is a folder, not a {what}") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error(f"{path}: is a folder, not a {what}")
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{path}: is {_kind_of_file(info.st_mode)}, not a regular file; a {what} must be a file")
        if info.st_size > limit:
            raise error(f"{path}: {what} too large ({_size(info.st_size)}; the limit is {_size(limit)})")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # it grew while being read
        raise error(f"{path}: {what} too large (more than {_size(limit)}, the limit)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _kind_of_file(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


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
    fd, tmp = _create_temp(path)
    try:
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
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
