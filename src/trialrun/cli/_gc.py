"""The garbage collector around a `trialrun run` process: what may be left out of the collector's last passes.

The CLI freezes what is alive before the run (`gc.freeze`: modules, classes, the built cases), so the run's many
small objects are not walked together with them. At exit the interpreter collects everything once more and tears the
modules down; with the frozen objects back in the collector (`gc.unfreeze`) that last full pass over every module's
objects costs 0.1-0.3 s of a 1.3 s run. Left frozen, they are not walked, and a cycle among them is not collected
(its memory goes with the process): harmless, unless something in such a cycle still had work to do when it was
finalised, such as a file with buffered writes (last session's finding: a tool module's file in a cycle lost its
unflushed text). So the frozen objects stay frozen only when nothing in the process has a finalizer left to run:
no object of a class with `__del__` (files, sockets, subprocesses, a user's own) is alive, other than the standard
streams (flushed by the interpreter itself), files already closed, and generators (closed when their `with` ends).
"""

from __future__ import annotations

import gc
import sys
import types
import weakref
from itertools import compress
from typing import Any

__all__ = ["finalizers", "nothing_to_finalize"]


def _standard_streams() -> set[int]:
    found: set[int] = set()
    for stream in (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__):
        while stream is not None and id(stream) not in found:
            found.add(id(stream))
            stream = getattr(stream, "buffer", None) or getattr(stream, "raw", None)
    return found


def _alive_with_finalizers() -> list[Any]:
    """The objects the collector tracks (not the frozen ones) whose class has a finalizer still to matter: in C
    loops (`map`, `compress`), about 5 ms for 100,000 objects."""
    objects = gc.get_objects()
    kinds = {kind for kind in set(map(type, objects))
             if kind is not types.GeneratorType and getattr(kind, "__del__", None) is not None}
    if not kinds:
        return []
    streams = _standard_streams()
    return [o for o in compress(objects, map(kinds.__contains__, map(type, objects)))
            if id(o) not in streams and not getattr(o, "closed", False)]


def finalizers() -> list[weakref.ref[Any]] | None:
    """Weak references to what has a finalizer among the objects about to be frozen (call it before `gc.freeze`:
    frozen objects are no longer listed by the collector); None when one of them cannot be referred to weakly."""
    try:
        return [weakref.ref(o) for o in _alive_with_finalizers()]
    except TypeError:
        return None


def nothing_to_finalize(before: list[weakref.ref[Any]] | None) -> bool:
    """Whether no object with a finalizer to run is alive: neither of those found before the freeze (`before`),
    nor among what the collector tracks now."""
    if before is None:
        return False
    for ref in before:
        held = ref()
        if held is not None and not getattr(held, "closed", False):
            return False
    return not _alive_with_finalizers()
