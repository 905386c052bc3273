"""Reading the exchanges sidecar (the format is described in `log`): one trial's exchanges for a viewer
(`read_trial_exchanges`), or many of one file's trials after a single scan (`SidecarIndex`). The safe reader reads
it a line at a time; nothing here raises on a file that is missing, cut short or corrupt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._util import safe_read as _safe_read
from ..._util.safe_read import UnreadableFile
from .._file_models import SidecarExchange, SidecarStart, SidecarTrial, validated
from .format import _TRIAL_HEAD, EXCHANGES_VERSION, LINE_MAX_BYTES, MAX_BYTES, _head_of, _line_prefix

__all__ = ["TrialExchanges", "read_trial_exchanges", "SidecarIndex"]


@dataclass
class TrialExchanges:
    """One trial's exchanges as a viewer gets them: `exchanges` (sidecar records, by `n`), and `problem`, what is
    missing and why (None when the trial's line was read whole)."""

    path: Path
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None
    found: bool = False
    #: Exchanges of the trial's line left out, each with why ("... line 3: exchanges.1.request.status must be a
    #: whole number; that exchange is not shown")
    notes: list[str] = field(default_factory=list)
    started: bool = False  # the start line was read

    def by_number(self) -> dict[int, dict[str, Any]]:
        return {int(e["n"]): e for e in self.exchanges if isinstance(e, dict) and isinstance(e.get("n"), int)}


_NOT_KEPT = ("this run kept no raw exchanges: {name} is not there. Runs keep them from this trialrun version on, "
             "when run by `trialrun run` with `exchanges = true` (the default; off with `exchanges = false` or "
             "--no-exchanges) or by pytest with --trialrun-save (off with --trialrun-no-exchanges); the Python API "
             "does not write them")


def read_trial_exchanges(path: Path, case: str, trial: int) -> TrialExchanges:
    """The exchanges of trial `trial` of `case` from a sidecar, read by the safe reader a line at a time (holding
    only the trial's own line) and typed by `_file_models`. Never raises: a missing file, one that is not a regular
    file (a FIFO, /dev/zero), a start line that says none were kept, no line for the trial, a line cut short (a
    killed run), one that is not JSON or holds fields of the wrong type all come back as `problem`, saying which
    and why; an exchange of the wrong shape is left out with a note in `notes` naming its line and field."""
    result = TrialExchanges(path)
    try:
        found = _find_trial(path, case, trial, result)
    except UnreadableFile as exc:
        result.problem = _NOT_KEPT.format(name=path.name) if exc.missing else f"{path.name}: {exc.reason}"
        return result
    if not found and result.problem is None and not result.started:
        result.problem = f"{path.name} is empty (the run was killed as it started)"
    elif not found and result.problem is None:
        result.problem = (f"{path.name} has no exchanges for trial {trial} of {case!r}: the run stopped before the "
                          "trial finished, or the file was cut short")
    return result


def _find_trial(path: Path, case: str, trial: int, result: TrialExchanges) -> bool:
    """Fill `result` from the sidecar's line for the trial; False when there is none (or a problem stops the read)."""
    prefix = _line_prefix(case, trial)
    for line in _safe_read.lines(path, "exchanges file", limit=MAX_BYTES, line_limit=LINE_MAX_BYTES, wanted=prefix):
        where = f"{path.name} line {line.number}"
        if line.number == 1:
            if not _started(line, path, result):
                return False
            continue
        if line.too_long and line.matched:
            result.problem = (f"{where}: the exchanges of trial {trial} of {case!r} take more than "
                              f"{_safe_read.size_text(LINE_MAX_BYTES)}; they are not shown")
            return False
        if not line.matched or not line.data:
            continue
        return _take_line(line, path, case, trial, result)
    return False


def _take_line(line: _safe_read.Line, path: Path, case: str, trial: int, result: TrialExchanges) -> bool:
    """Fill `result` from the trial's own line (whole, not too long); False with `result.problem` said when it
    cannot be read."""
    where = f"{path.name} line {line.number}"
    if not line.whole:
        result.problem = (f"{where}: the exchanges of trial {trial} of {case!r} were cut short (the run was "
                          "killed while writing them); nothing of them can be shown")
        return False
    try:
        record = json.loads(line.data)
    except (ValueError, RecursionError):
        result.problem = f"{where}: not valid JSON (the file is corrupt)"
        return False
    typed = validated(SidecarTrial, record)
    if isinstance(typed, str):
        result.problem = f"{where}: {typed}"
        return False
    for index, exchange in enumerate(typed.exchanges):
        checked = validated(SidecarExchange, exchange, prefix=f"exchanges.{index}")
        if isinstance(checked, str):
            result.notes.append(f"{where}: {checked}; that exchange is not shown")
        else:
            result.exchanges.append(exchange)
    result.found = True
    if not typed.exchanges:
        result.problem = "the trial sent no request through an observed model transport"
    return True


class SidecarIndex:
    """A sidecar read once, for a reader of many of its trials (`trialrun regrade`): `scan` notes where each
    trial's line starts (holding one line at a time), then `read` seeks to a trial's line and reads it alone, as
    `read_trial_exchanges` would have found it (the first line of a trial; every problem said the same way), instead
    of searching the whole file again for every trial."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.start = TrialExchanges(path)  # the start line's problem, if any
        self.where: dict[tuple[str, int], tuple[int, int]] = {}  # (case, trial) -> (offset, line number)

    @classmethod
    def scan(cls, path: Path) -> SidecarIndex:
        index = cls(path)
        try:
            with _safe_read.opened(path, "exchanges file", limit=MAX_BYTES) as handle:
                index._scan(handle)
        except UnreadableFile as exc:
            index.start.problem = _NOT_KEPT.format(name=path.name) if exc.missing else f"{path.name}: {exc.reason}"
        return index

    def _scan(self, handle: Any) -> None:
        first = handle.readline(LINE_MAX_BYTES + 1)
        line = _safe_read.Line(1, first.rstrip(b"\n"), first.endswith(b"\n"), too_long=len(first) > LINE_MAX_BYTES)
        if not first or not _started(line, self.path, self.start):
            if not first:
                self.start.problem = f"{self.path.name} is empty (the run was killed as it started)"
            return
        number, offset = 1, len(first)
        while head := handle.readline(_HEAD_BYTES):
            number += 1
            start, ended = offset, head.endswith(b"\n")
            offset += len(head)
            while not ended and (more := handle.readline(2**20)):  # the rest of a long line, not held
                offset += len(more)
                ended = more.endswith(b"\n")
            key = _trial_key(head)
            if key is not None:
                self.where.setdefault(key, (start, number))

    def read(self, case: str, trial: int) -> TrialExchanges:
        """The exchanges of trial `trial` of `case`, as `read_trial_exchanges` gives them."""
        result = TrialExchanges(self.path, started=self.start.problem is None)
        if self.start.problem is not None:
            result.problem = self.start.problem
            return result
        place = self.where.get((case, trial))
        if place is None:
            result.problem = (f"{self.path.name} has no exchanges for trial {trial} of {case!r}: the run stopped "
                              "before the trial finished, or the file was cut short")
            return result
        offset, number = place
        try:
            with _safe_read.opened(self.path, "exchanges file", limit=MAX_BYTES) as handle:
                handle.seek(offset)
                data = handle.readline(LINE_MAX_BYTES + 1)
        except UnreadableFile as exc:
            result.problem = f"{self.path.name}: {exc.reason}"
            return result
        if len(data.rstrip(b"\n")) > LINE_MAX_BYTES:
            result.problem = (f"{self.path.name} line {number}: the exchanges of trial {trial} of {case!r} take more "
                              f"than {_safe_read.size_text(LINE_MAX_BYTES)}; they are not shown")
            return result
        line = _safe_read.Line(number, data[:-1] if data.endswith(b"\n") else data, data.endswith(b"\n"))
        _take_line(line, self.path, case, trial, result)
        return result


#: What the scan reads of a line to know whose it is (the case's name comes first; a longer one is read on).
_HEAD_BYTES = 64 * 2**10


def _trial_key(head: bytes) -> tuple[str, int] | None:
    """(case, trial) of a trial line, from its first bytes; None for any other line."""
    if not head.startswith(_TRIAL_HEAD):
        return None
    found = _head_of(head.decode("utf-8", "ignore"))
    return None if found is None else (found[0], int(found[1].group(1)))


def _started(line: _safe_read.Line, path: Path, result: TrialExchanges) -> bool:
    """Check the sidecar's start line; False (with `result.problem` said) when nothing after it can be shown."""
    where = f"{path.name} line 1"
    if line.too_long or not line.data.strip():
        result.problem = (f"{where}: longer than {_safe_read.size_text(LINE_MAX_BYTES)}; not a trialrun exchanges "
                          "file" if line.too_long else f"{path.name} is empty (the run was killed as it started)")
        return False
    try:
        start = json.loads(line.data)
    except (ValueError, RecursionError):
        start = None
    if not isinstance(start, dict) or start.get("event") != "start":
        result.problem = f"{path.name} is not a trialrun exchanges file (its first line is not a start line)"
        return False
    version = start.get("exchanges_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > EXCHANGES_VERSION:
        result.problem = f"{path.name} was written by a newer trialrun; upgrade trialrun to read it"
        return False
    typed = validated(SidecarStart, start)
    if isinstance(typed, str):
        result.problem = f"{where}: {typed}"
        return False
    if not typed.kept:
        result.problem = f"this run kept no raw exchanges: {typed.why or 'they were not recorded'}"
        return False
    result.started = True
    return True
