"""The one reader of files trialrun did not just write itself: suites, configurations, cassettes, and everything
the CLI and `trialrun view` read from a results folder (result files, journals, exchanges sidecars, latest.json).

A results folder is shared: a CI step, a teammate or an attacker may have put anything there under a name trialrun
reads. So a file is read only when it is a regular file (a FIFO would block the reader forever, /dev/zero would
never end, a terminal device could take input), and only up to a size limit:

- the path is looked at (`os.stat`, through symlinks: latest.json is one) BEFORE it is opened, so a FIFO or a
  device is never opened at all;
- it is opened with `O_NONBLOCK` (and `O_NOCTTY`), the backstop for a FIFO swapped in between: opening one
  without blocking returns at once;
- the open file is looked at again (`fstat`): it must be a regular file, and the same one that was looked at;
- at most `limit` bytes are read (`limit + 1`, so a file that grew while read is refused too), and a file read by
  lines (`lines`) holds at most one line of at most `line_limit` bytes in memory.

Every way of failing is an `UnreadableFile` whose message names the file and says why.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

__all__ = ["UnreadableFile", "MAX_BYTES", "read_bytes", "read_text", "lines", "Line", "opened", "open_regular",
           "regular", "kind_of_file", "size_text"]

#: The default limit (suites, configurations, cassettes, scripted model files, price files): 100,000 tests are
#: about 20 MiB; a file far larger is a mistake (or an attack), not something to parse.
MAX_BYTES = 64 * 2**20

_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
          | getattr(os, "O_BINARY", 0))
_CHUNK = 2**20


class UnreadableFile(ValueError):
    """A file that cannot be read; `reason` says why without the path, `str()` is "<path>: <reason>"."""

    def __init__(self, path: str | os.PathLike[str], reason: str, *, missing: bool = False) -> None:
        self.path = Path(path)
        self.reason = reason
        self.missing = missing
        super().__init__(f"{path}: {reason}")


def kind_of_file(mode: int) -> str:
    """What a file that is not a regular file is, in words ("a FIFO (named pipe)")."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"


def size_text(count: int) -> str:
    return f"{count / 2**20:.1f} MiB" if count >= 2**20 else f"{count:,} bytes"


def _not_regular(path: str | os.PathLike[str], mode: int, what: str) -> UnreadableFile:
    if stat.S_ISDIR(mode):
        return UnreadableFile(path, "is a folder, not a file")
    return UnreadableFile(path, f"is {kind_of_file(mode)}, not a regular file (only regular files are read as {what}s)")


def _looked_at(path: str | os.PathLike[str], what: str, missing: str | None, nofollow: bool) -> os.stat_result:
    try:
        info = os.lstat(path) if nofollow else os.stat(path)
    except FileNotFoundError:
        raise UnreadableFile(path, missing or f"{what} not found", missing=True) from None
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read {what} ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise _not_regular(path, info.st_mode, what)
    return info


def regular(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a regular file (through symlinks), without opening it; never raises."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def open_regular(path: str | os.PathLike[str], what: str, *, limit: int | None = MAX_BYTES,
                 missing: str | None = None, nofollow: bool = False) -> int:
    """A file descriptor of `path` open for reading, once it is known to be a regular file of at most `limit`
    bytes (None: any size); `nofollow`: never through a symlink. The checks, in order, are the module's docstring's.
    UnreadableFile for anything else."""
    before = _looked_at(path, what, missing, nofollow)
    if limit is not None and before.st_size > limit:
        raise UnreadableFile(path, f"{what} too large ({size_text(before.st_size)}; the limit is {size_text(limit)})")
    try:
        fd = os.open(path, _FLAGS | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0))
    except FileNotFoundError:
        raise UnreadableFile(path, missing or f"{what} not found", missing=True) from None
    except OSError as exc:
        raise UnreadableFile(path, f"cannot read {what} ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode, what)
        if (info.st_dev, info.st_ino) != (before.st_dev, before.st_ino):
            raise UnreadableFile(path, f"cannot read {what} (it was replaced while being opened)")
        if limit is not None and info.st_size > limit:
            raise UnreadableFile(path, f"{what} too large ({size_text(info.st_size)}; the limit is {size_text(limit)})")
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def opened(path: str | os.PathLike[str], what: str, *, limit: int = MAX_BYTES,
           missing: str | None = None) -> Iterator[BinaryIO]:
    """`path` open for reading in binary (`open_regular`). UnreadableFile for anything else, reading included."""
    fd = open_regular(path, what, limit=limit, missing=missing)
    try:
        handle = os.fdopen(fd, "rb", buffering=_CHUNK)
    except BaseException:
        os.close(fd)
        raise
    with handle:
        try:
            yield handle
        except OSError as exc:
            raise UnreadableFile(path, f"cannot read {what} ({exc.strerror or exc})") from None


def read_bytes(path: str | os.PathLike[str], what: str, *, limit: int = MAX_BYTES, missing: str | None = None) -> bytes:
    """All of a regular file of at most `limit` bytes."""
    with opened(path, what, limit=limit, missing=missing) as handle:
        # read(n) sets aside n bytes first: ask for the file's size (a 1 GiB limit asked of every read made eight
        # viewer requests at once run out of a 1.5 GiB address space), and for the rest only if it grew meanwhile
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(min(size, limit) + 1)
        if len(data) > size:
            data += handle.read(limit + 1 - len(data))
    if len(data) > limit:  # it grew while being read
        raise UnreadableFile(path, f"{what} too large (more than {size_text(limit)}, the limit)")
    return data


def read_text(path: str | os.PathLike[str], what: str, *, limit: int = MAX_BYTES, missing: str | None = None) -> str:
    """All of a regular file of at most `limit` bytes, as UTF-8 text."""
    data = read_bytes(path, what, limit=limit, missing=missing)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableFile(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


@dataclass(frozen=True)
class Line:
    """One line of a file read by `lines`: its number (from 1), its bytes without the newline, `whole` (False for
    a last line with no newline after it: one being written, or cut short by a kill), `too_long` (longer than
    the line limit: `data` is empty, the line was skipped without being held) and `matched`."""

    number: int
    data: bytes
    whole: bool = True
    too_long: bool = False
    #: The line starts with the `wanted` bytes (always True without them): said of a line too long to give too.
    matched: bool = True


def lines(path: str | os.PathLike[str], what: str, *, limit: int = MAX_BYTES, line_limit: int = MAX_BYTES,
          missing: str | None = None, wanted: bytes | None = None) -> Iterator[Line]:
    """The lines of a regular file of at most `limit` bytes, one at a time, none held longer than `line_limit`.
    `wanted`: only lines that start with these bytes are given whole (others come back with empty `data`), so a
    large file is searched without holding its other lines; the first line is always given."""
    read = 0
    with opened(path, what, limit=limit, missing=missing) as handle:
        number = 0
        while True:
            head = handle.readline(line_limit + 1)
            if not head:
                return
            number += 1
            read += len(head)
            size = len(head)
            ended = head.endswith(b"\n")
            while not ended and size > line_limit:  # longer than the limit: read on to its end, holding nothing
                more = handle.readline(_CHUNK)
                if not more:
                    break
                read += len(more)
                size += len(more)
                ended = more.endswith(b"\n")
                if read > limit:
                    break
            if read > limit:  # it grew while being read
                raise UnreadableFile(path, f"{what} too large (more than {size_text(limit)}, the limit)")
            matched = wanted is None or head.startswith(wanted)
            if size - ended > line_limit:
                yield Line(number, b"", ended, too_long=True, matched=matched)
            elif matched or number == 1:
                yield Line(number, head[:-1] if ended else head, ended, matched=matched)
            else:
                yield Line(number, b"", ended, matched=False)
