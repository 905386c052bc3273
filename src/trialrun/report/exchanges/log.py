"""Writing the exchanges sidecar (its format and the data flow: `report.exchanges`): the run's log, a merge of a
pytest session's parts, a copy for `trialrun regrade`."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ..._scrub import scrub_text, secrets_version
from ..._util import safe_read as _safe_read
from ..._util.files import hold_lock
from ..._util.safe_read import UnreadableFile
from .._line_log import LineAppender
from .format import (
    _TRIAL_HEAD,
    BODY_MAX_BYTES,
    BODY_MIN_BYTES,
    DEFAULT_MAX_TRIAL_BYTES,
    EXCHANGES_VERSION,
    LINE_MAX_BYTES,
    MAX_BYTES,
    SUFFIX,
    _dumps,
    _head_of,
    _line_prefix,
    _start_record,
    sidecar_path,
)
from .lines import TrialLine, trial_line, trial_record
from .read import SidecarIndex, TrialExchanges, read_trial_exchanges

__all__ = ["SUFFIX", "EXCHANGES_VERSION", "DEFAULT_MAX_TRIAL_BYTES", "BODY_MAX_BYTES", "BODY_MIN_BYTES",
           "ExchangeLog", "TrialLine", "TrialExchanges", "sidecar_path", "trial_record", "trial_line",
           "read_trial_exchanges", "merge_parts", "copy_sidecar", "SidecarIndex"]


class ExchangeLog(LineAppender):
    """Appends each finished trial's exchanges to a run's sidecar. Writing never stops a run: a write that fails
    (a full disk) is remembered in `problem`, and the log stops."""

    def __init__(self, path: Path, *, max_trial_bytes: int = DEFAULT_MAX_TRIAL_BYTES) -> None:
        super().__init__(None)
        self.path = path
        self.max_trial_bytes = max_trial_bytes
        self.trials = 0

    @classmethod
    def open(cls, path: Path, *, run_id: str | None, max_trial_bytes: int = DEFAULT_MAX_TRIAL_BYTES,
             lock: bool = False) -> ExchangeLog:
        """Create the sidecar and write its start line (`kept` is always true now: the sidecars of the first
        version said `"kept": false` with a `why` for trials run on Ray, and a reader still says so). `lock`: hold a
        lock on it while open (a temp part, `merge_parts`, that `_files.remove_stale_temps` must leave alone while
        its writer lives)."""
        log = cls(path, max_trial_bytes=max_trial_bytes)
        try:
            log._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_BINARY", 0),
                              0o666)
            if lock:
                log._hold_lock()
        except OSError as exc:
            if log._fd is not None:
                os.close(log._fd)
                log._fd = None
            log.problem = f"{path}: {exc.strerror or exc} (no raw exchanges are kept for this run)"
            return log
        version = secrets_version()
        log._append(scrub_text(_dumps(_start_record(run_id, max_trial_bytes))), version=version)
        return log

    def __call__(self, case: Any, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes]) -> None:
        """The runner's `on_exchanges`: a finished trial of `case` (a Case) to the sidecar."""
        self.write(case.name, trial, exchanges, credentials)

    def write(self, case: str, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes] = frozenset()) -> None:
        """One finished trial's exchanges, scrubbed and capped, in one write."""
        if self._fd is None or self.problem is not None:
            return
        version = secrets_version()  # before the scrub (see _line_log: a secret registered meanwhile is looked for)
        self._add(*trial_line(case, trial, exchanges, credentials, max_trial_bytes=self.max_trial_bytes),
                  version=version)

    def add(self, line: str | None, problem: str | None = None) -> None:
        """A trial's line as `trial_line` made it, here or where the trial ran (a Ray worker, which sends it back
        with the trial's result); or why it could not be made, which stops the log. Scrubbed where it was made with
        what that process knew, it is scrubbed again here with what this one knows (the other workers' credentials,
        this environment's) before it is written."""
        version = secrets_version()
        self._add(None if line is None else scrub_text(line), problem, version=version)

    def _add(self, line: str | None, problem: str | None = None, *, version: object) -> None:
        if self._fd is None or self.problem is not None:
            return
        if line is None:
            self.problem = f"{self.path}: {problem}; raw exchanges stopped after {self.trials} trial(s)"
            return
        if self._append(line, version=version):
            self.trials += 1

    def rename(self, path: Path) -> None:
        """Follow the result file to another name (the reserved one was taken meanwhile)."""
        try:
            os.replace(self.path, path)
            self.path = path
        except OSError:
            pass

    def close(self) -> None:
        self._close_fd()

    def remove(self) -> None:
        self._going = True  # nothing to scrub again
        self.close()
        try:
            self.path.unlink()
        except OSError:
            pass

    def _failed(self, exc: OSError) -> str:
        return f"{self.path}: {exc.strerror or exc} (raw exchanges stopped after {self.trials} trial(s))"



@contextmanager
def _replacing(dest: Path, *, lock: bool = False) -> Iterator[BinaryIO]:
    """A new temp file beside `dest` to write, synced and renamed over `dest` when the block ends, and removed if it
    raises: `dest` is whole or absent. Named as `_files`' temp files, so what a killed writer leaves is removed
    later; `lock` holds a lock on it while it is written (what removes stale temps leaves a locked one alone)."""
    tmp = dest.with_name(f".{dest.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out:
            if lock:
                hold_lock(out.fileno())
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def merge_parts(parts: Sequence[Path], dest: Path, names: dict[str, str], *, run_id: str | None,
                max_trial_bytes: int = DEFAULT_MAX_TRIAL_BYTES) -> int:
    """Write the sidecar `dest` from parts that several processes wrote (a pytest session's, one per xdist worker,
    each line keyed by a name of the writer's): a start line, then every whole trial line of the parts whose key
    is in `names`, under the case name `names` gives it (the one the result file has). Line by line, so memory stays
    within one trial's line; written to a temp file and renamed, so `dest` is whole or absent. The number of
    trials written."""
    written = 0
    with _replacing(dest, lock=True) as out:
        out.write((scrub_text(_dumps(_start_record(run_id, max_trial_bytes))) + "\n").encode("utf-8"))
        for part in parts:
            try:  # the safe reader's lines: a part is in the results folder, where anything may be put
                for line in _safe_read.lines(part, "exchanges part", limit=MAX_BYTES, line_limit=LINE_MAX_BYTES):
                    renamed = _renamed(line.data + b"\n", names) if line.whole and line.data else None
                    if renamed is not None:
                        out.write(renamed)
                        written += 1
            except UnreadableFile:
                continue  # a worker that never wrote one, or a part removed meanwhile: nothing (more) of it
    return written


def _renamed(line: bytes, names: dict[str, str]) -> bytes | None:
    """A part's trial line under its case's final name; None for a start line, a line cut short (its writer was
    killed) or one of a key `names` does not have (a trial whose item was not reported)."""
    if not line.startswith(_TRIAL_HEAD) or not line.endswith(b"\n"):
        return None
    text = line.decode("utf-8", "surrogatepass")
    found = _head_of(text)
    if found is None or found[0] not in names:
        return None
    key, number = found
    head = scrub_text(_line_prefix(names[key], int(number.group(1))).decode("utf-8"))
    return head.encode("utf-8") + text[number.end():].encode("utf-8", "surrogatepass")



def copy_sidecar(source: Path, dest: Path, *, run_id: str | None) -> None:
    """A copy of a sidecar for another result file of the same trials (`trialrun regrade`'s), its start line naming
    `run_id`: streamed, to a temp file renamed into place, so `dest` is whole or absent."""
    import shutil

    with _replacing(dest) as out, open(source, "rb") as src:
        first = src.readline(LINE_MAX_BYTES)
        try:
            start = json.loads(first)
        except ValueError:
            start = None
        if isinstance(start, dict) and start.get("event") == "start":
            start["run_id"] = run_id
            first = (scrub_text(_dumps(start)) + "\n").encode("utf-8")
        out.write(first)
        shutil.copyfileobj(src, out, 2**20)
