"""Paths beneath a workspace root, resolved without a gap between checking a path and using it.

A check on a path string (resolve it, see that it is under the root, then open it) can be beaten: between the check
and the open, the agent's own background command swaps a parent folder for a symlink to `/`. So nothing here
resolves a name twice. The parent folder of the target is reached from a descriptor of the root, and everything
after that is done relative to descriptors held open, never by path:

- with `openat2(RESOLVE_BENEATH)` (Linux 5.6+): the kernel walks the parent path and refuses any step out of the
  root (`..` above it, an absolute symlink, a symlink leading out), atomically;
- elsewhere: the same walk in Python, one component at a time with `O_NOFOLLOW` from the folder descriptor before
  it; a symlink met on the way is read (`readlinkat`) and followed by the same rules (relative and staying
  beneath: followed; absolute or leading out: refused), and `..` returns to the descriptor already held.

The last component is then looked at (`fstatat` without following) and opened with `O_NOFOLLOW | O_NONBLOCK`
relative to the parent's descriptor, and the opened file is checked to be the one looked at.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Outside", "parent_of", "split", "have_openat2"]

_MAX_LINKS = 40  # as the kernel: more symlinks than this on one path is a loop
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_O_PATH = getattr(os, "O_PATH", 0)
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437  # the same number on every Linux architecture (the unified syscall table)


class Outside(Exception):
    """The path leads out of the root (the message says how)."""


_SYSCALL: object | None = None
_LOADED = False
#: Tests set this to False to exercise the walk on a kernel that has openat2 (None: use it when there).
use_openat2: bool | None = None


def have_openat2() -> bool:
    """Whether this kernel resolves paths beneath a folder itself (`openat2`); loaded on first use (ctypes is not
    imported with trialrun)."""
    global _SYSCALL, _LOADED
    if not _LOADED:
        _SYSCALL, _LOADED = _load_openat2(), True
    return _SYSCALL is not None


@functools.cache
def _open_how() -> Any:
    """`struct open_how` (made on first use)."""
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

    return OpenHow


def _how(flags: int, resolve: int) -> Any:
    return _open_how()(flags, 0, resolve)


def _load_openat2() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    how = _how(_DIR_FLAGS | _O_PATH, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    fd = syscall(_SYS_OPENAT2, -100, b".", ctypes.byref(how), ctypes.sizeof(how))  # AT_FDCWD: does it exist?
    if fd < 0:
        return None  # ENOSYS (older kernel) or a seccomp filter that refuses it: walk instead
    os.close(fd)
    return syscall



def split(root: str, path: str) -> list[str]:
    """The components of `path` (relative to `root`, or absolute and lexically under it); `Outside` otherwise.

    `.` and empty components are dropped; `..` is kept (what it means depends on symlinks, so the walk decides).
    """
    if os.path.isabs(path):
        relative = os.path.relpath(os.path.normpath(path), root)
        if relative == ".." or relative.startswith("../") or os.path.isabs(relative):
            raise Outside("an absolute path outside the workspace")
        path = relative
    return [part for part in path.split("/") if part not in ("", ".")]


def _openat2_dir(root_fd: int, parts: list[str]) -> int:
    """A descriptor of the folder `parts` names beneath `root_fd`, resolved by the kernel."""
    import ctypes

    assert _SYSCALL is not None
    # The folder's own last component may be a symlink inside the root: follow it (no O_NOFOLLOW); beneath still holds.
    how: Any = _how((_DIR_FLAGS | _O_PATH) & ~os.O_NOFOLLOW, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    path = "/".join(parts).encode("utf-8", "surrogateescape")
    for _ in range(8):  # EAGAIN: a rename raced a `..` and the kernel could not be sure; trying again is safe
        fd = _SYSCALL(_SYS_OPENAT2, root_fd, path, ctypes.byref(how), ctypes.sizeof(how))  # type: ignore[operator]
        if fd >= 0:
            return int(fd)
        code = ctypes.get_errno()
        if code != errno.EAGAIN:
            break
    if code == errno.EXDEV:
        raise Outside("it leads out of the workspace (a `..` above it, or a symlink)")
    raise OSError(code, os.strerror(code))


def _walk(root_fd: int, parts: list[str], *, create: bool, follow_last: bool) -> tuple[int, str]:
    """(descriptor of the real parent folder, last name), walking `parts` from `root_fd`; see the module text."""
    stack = [os.dup(root_fd)]
    todo = list(reversed(parts))
    links = 0
    try:
        while todo:
            name = todo.pop()
            last = not todo
            if name == "..":
                if len(stack) == 1:
                    raise Outside("it leads out of the workspace (a `..` above it, or a symlink)")
                os.close(stack.pop())
                if last:
                    name = "."
                else:
                    continue
            try:
                info = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            except FileNotFoundError:
                if last:
                    return stack.pop(), name
                if not create:
                    raise
                try:
                    os.mkdir(name, dir_fd=stack[-1])
                except FileExistsError:
                    pass
                info = os.stat(name, dir_fd=stack[-1], follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode) and (follow_last or not last):
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, "too many levels of symbolic links")
                target = os.readlink(name, dir_fd=stack[-1])
                if target.startswith("/"):
                    raise Outside("it goes through a symlink to an absolute path")
                todo.extend(reversed([p for p in target.split("/") if p not in ("", ".")] or ["."]))
                continue
            if last:
                return stack.pop(), name
            if name == ".":
                continue
            stack.append(os.open(name, _DIR_FLAGS, dir_fd=stack[-1]))  # O_NOFOLLOW: a symlink swapped in fails
        return stack.pop(), "."
    finally:
        for fd in stack:
            os.close(fd)


@contextmanager
def parent_of(root: str, parts: list[str], *, create: bool = False, follow_last: bool = True) -> Iterator[tuple[int, str]]:
    """(descriptor of the folder holding the last component, its name), confined to `root`; closed on exit.

    `create`: make missing folders on the way (write_file). `follow_last`: follow a symlink in the last place
    (read_file does, within the root; list_dir and write_file do not). No parts means the root itself (".").
    """
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        fd: int | None = None
        wanted = have_openat2() if use_openat2 is None else use_openat2 and have_openat2()
        if wanted and not create and len(parts) >= 1 and ".." not in parts[-1:]:
            fd = _openat2_dir(root_fd, parts[:-1]) if len(parts) > 1 else os.dup(root_fd)
            name = parts[-1]
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
            except FileNotFoundError:
                is_link = False
            if is_link and follow_last:  # rare: resolve the symlink by the walk, from the root again
                os.close(fd)
                fd = None
        if fd is None:
            fd, name = _walk(root_fd, parts, create=create, follow_last=follow_last)
        try:
            yield fd, name
        finally:
            os.close(fd)
    finally:
        os.close(root_fd)
