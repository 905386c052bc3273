"""The files a run appends to as it goes (its journal, its exchanges sidecar), which never keep a credential the run
knows on disk, even one it learns after the lines that hold it were written.

Every line is scrubbed before it is written, with everything the run knows at that moment: its environment's secret
values, the credentials registered so far (`_scrub.add_secret`: a LiveModel's key, a process agent's `env`, the
headers of every request a model transport saw), and the shapes. What the run knows before its first trial is
therefore scrubbed from the first line on. A credential learned later (a later trial's transport is the first to
see it, a Ray worker hands it back, the environment changes) may already be in lines written before: the moment it
is registered (`_scrub.watch` tells the open files), each file is searched for it, and if it holds it the file is
rewritten at once, scrubbed under what is known now, before the call that registered it returns. Lines written
with an older view (scrubbed just before a registration, or before an environment change) are caught when they are
appended: the file is searched for what they may lack. So at any moment the file holds none of the credentials
registered or in the environment.

Chosen over the alternatives: scrubbing again only when the file closes (the old behaviour) leaves the credential on
disk for the rest of the run, where a crash or `kill -9` keeps it; holding lines back until the run ends would lose
them to a crash, which is what the journal is for. A rewrite replaces the file (same name, a new inode, locked
before it is renamed into place, so a reader never sees the run as dead): a reader that follows a live file by
offset re-opens it when its inode changes. Its cost is a search of the file per newly learned credential (a few
milliseconds for a few MB; a rewrite only when the file holds it).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .._util.files import _create_temp, hold_lock, write_all

__all__ = ["LineAppender"]


class LineAppender:
    """An append-only file of lines (a run's journal, its exchanges sidecar): each line written in one `write`
    under a lock, so a reader or a killed process sees whole lines only. Writing never raises: the first write that
    fails (a full disk) is remembered in `problem` (`_failed` words it) and every later one is skipped."""

    #: The file (set by the subclass).
    path: Path

    def __init__(self, fd: int | None) -> None:
        from .. import _scrub

        self._fd = fd
        self._lock = threading.RLock()
        self._dirty = False  # written since the last fsync
        self._locked = False  # whether the file is flocked (a rewrite locks its replacement too)
        self.problem: str | None = None
        self._lines = False  # whether a line was written
        self._going = False  # removed next: nothing to scrub again
        #: The `_scrub.secrets_version` the whole file is known to hold no value of, and that version's values
        #: (a line scrubbed under another version narrows them: `_note_line`).
        self._clean: object = None
        self._clean_values: frozenset[str] = frozenset()
        _scrub.watch(self)

    def _hold_lock(self) -> None:
        """flock the file while it is open (`hold_lock`); OSError when refused."""
        assert self._fd is not None
        hold_lock(self._fd)
        self._locked = True

    def _failed(self, exc: OSError) -> str:
        return str(exc.strerror or exc)

    def _append(self, line: str, *, sync: bool = False, version: object = None) -> bool:
        """`line` and a newline, then (`sync`) on disk; False when nothing was written. `version`: the
        `_scrub.secrets_version()` read before `line` was scrubbed (None: unknown, so every known value is looked
        for in the file afterwards)."""
        from .._scrub import secrets_version

        data = (line + "\n").encode("utf-8", "surrogatepass")
        with self._lock:
            if self._fd is None or self.problem is not None:
                return False
            try:
                write_all(self._fd, data)
                self._dirty = True
                if sync:
                    os.fsync(self._fd)
                    self._dirty = False
            except OSError as exc:
                self.problem = self._failed(exc)
                return False
            current = secrets_version()
            if not (version is current and self._clean is current and self._lines):  # else: nothing new to look for
                self._note_line(version)
                self._make_clean(current)
            self._lines = True
        return True

    def _note_line(self, version: object) -> None:
        """The file now also holds a line scrubbed under `version`: it is known clean only of the values both
        that version and the file's removed."""
        from .._scrub import variants_of

        values = variants_of(version)
        if not self._lines:
            self._clean, self._clean_values = version, values
        elif version is not self._clean:
            self._clean, self._clean_values = None, self._clean_values & values

    def secrets_learned(self, variants: frozenset[str]) -> None:
        """`_scrub.add_secret` registered a credential (`variants`: its forms): take it out of the file now."""
        from .._scrub import secrets_version

        with self._lock:
            if self._lines and not self._going:
                self._make_clean(secrets_version())

    def _make_clean(self, current: object) -> None:
        """Make the file hold none of `current`'s values: search it for those it is not known clean of, and
        rewrite it scrubbed if it holds one. Under the lock; a failure is said in `problem`, never raised."""
        from .._scrub import holds_any, variants_of

        if self._clean is current:
            return
        wanted = variants_of(current)
        missing = wanted - self._clean_values
        if missing:
            try:
                with open(self.path, encoding="utf-8", errors="surrogatepass", newline="") as source:
                    held = holds_any(source.read(), missing)
            except OSError as exc:
                self.problem = self.problem or self._failed(exc)
                return
            if held:
                self._rewrite()
        self._clean, self._clean_values = current, wanted

    def _sync(self) -> None:
        """fsync what was written since the last one (nothing when nothing was)."""
        with self._lock:
            if not self._dirty or self._fd is None or self.problem is not None:
                return
            try:
                os.fsync(self._fd)
                self._dirty = False
            except OSError as exc:
                self.problem = self._failed(exc)

    def _close_fd(self, *, rescrub: bool = True) -> None:
        """Close the file; then (`rescrub`, else later through `rescrub_if_stale`) make sure it holds no value
        known now (one registered while it closed; an environment changed since its last line)."""
        from .._scrub import unwatch

        with self._lock:
            fd = self._fd
            closing = fd is not None
            if fd is not None:
                os.close(fd)  # releases a lock held on it (`hold_lock`)
                self._fd = None
        unwatch(self)
        if closing and rescrub:
            self.rescrub_if_stale()

    def rescrub_if_stale(self) -> None:
        """Scrub the closed file again if it may hold a value learned since its lines were scrubbed."""
        from .._scrub import secrets_version

        with self._lock:
            if self._fd is None and self._lines and not self._going:
                self._make_clean(secrets_version())

    def _rewrite(self) -> None:
        """Every line through the scrubber once more, into a temp file that replaces the file (a reader of the old
        file sees it whole). An open file's replacement is opened for appending in its place, flocked before it
        is renamed into place when the file was (a reader never sees the run as dead), with the file's mode. A
        failure leaves the file as it was, said in `problem`. Under the lock."""
        from .._scrub import scrub_text

        try:
            fd, tmp = _create_temp(self.path)
        except OSError as exc:
            self.problem = self.problem or self._failed(exc)
            return
        try:
            if self._fd is not None:
                if hasattr(os, "fchmod"):
                    os.fchmod(fd, os.fstat(self._fd).st_mode & 0o7777)
                if self._locked:
                    hold_lock(fd)  # before it takes the file's name: a reader never finds the run's file unlocked
            changed = False
            with open(self.path, encoding="utf-8", errors="surrogatepass", newline="") as source:
                for line in source:
                    scrubbed = scrub_text(line)
                    changed = changed or scrubbed != line
                    write_all(fd, scrubbed.encode("utf-8", "surrogatepass"))
            os.fsync(fd)
            if changed:
                os.replace(tmp, self.path)
        except OSError as exc:
            changed = False
            self.problem = self.problem or self._failed(exc)
        if not changed:
            os.close(fd)
            Path(tmp).unlink(missing_ok=True)
        elif self._fd is not None:  # the run goes on writing to the replacement (the only writer: at its end)
            os.close(self._fd)
            self._fd = fd
            self._dirty = False
        else:
            os.close(fd)
