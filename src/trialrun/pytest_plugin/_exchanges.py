"""The raw exchanges of a pytest session's trials (the plugin's `--trialrun-save`), for `trialrun view`.

The plugin names its result file only when the session ends, and under pytest-xdist its trials run in several
worker processes. So each process that runs trials (the session itself, or each worker) appends every finished
trial's exchanges, scrubbed and capped (`report.exchanges.ExchangeLog`), to a part of its own, keyed by the item's
position in the session (a worker knows no final case name: two modules' cases of one name are renamed by their
node id only when the report is built). The session that saves the result file merges the parts into that file's
sidecar (`report.exchanges.merge_parts`) and removes them; a session that saves none removes them. Parts are named as
`_files`' temp files (`.pytest-exchanges-<who>.<token>.tmp`) and locked while written: the plugin keeps no journal,
so a killed session leaves no result file for them to belong to, and the next run in that folder removes them.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..report.exchanges import ExchangeLog, merge_parts, sidecar_path

__all__ = ["SessionExchanges", "item_key"]

_PART_PREFIX = ".pytest-exchanges-"


def item_key(position: int) -> str:
    """A part line's key: the item's position in the session (the same in every xdist worker, and never scrubbed)."""
    return f"item {position}"


class SessionExchanges:
    """One process's part of a session's exchanges; `finish` (in the saving session) merges every process's."""

    def __init__(self, directory: Path, token: str, who: str, max_trial_bytes: int) -> None:
        self.directory = directory
        self.token = token
        self.max_trial_bytes = max_trial_bytes
        self.part = directory / f"{_PART_PREFIX}{who}.{token}.tmp"
        self.problem: str | None = None
        self._log: ExchangeLog | None = None
        self._lock = threading.Lock()

    @classmethod
    def new(cls, directory: Path, max_trial_bytes: int) -> SessionExchanges:
        return cls(directory, secrets.token_hex(6), "main", max_trial_bytes)

    def worker_input(self) -> dict[str, Any]:
        """What an xdist worker needs to write its own part of this session's exchanges."""
        return {"directory": str(self.directory), "token": self.token, "max_trial_bytes": self.max_trial_bytes}

    @classmethod
    def for_worker(cls, data: dict[str, Any], worker: str) -> SessionExchanges:
        return cls(Path(data["directory"]), str(data["token"]), worker, int(data["max_trial_bytes"]))

    def write(self, key: str, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes]) -> None:
        """A finished trial's exchanges, appended to this process's part (created with its first trial, so a
        session whose trials send nothing leaves nothing)."""
        with self._lock:
            if self._log is None:
                try:
                    self.directory.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    self.problem = f"{self.directory}: {exc.strerror or exc}"
                self._log = ExchangeLog.open(self.part, run_id=None, max_trial_bytes=self.max_trial_bytes, lock=True)
        self._log.write(key, trial, exchanges, credentials)

    def close(self) -> None:
        with self._lock:
            if self._log is not None:
                self._log.close()
                if self._log.problem and not self.problem:
                    self.problem = self._log.problem

    def parts(self) -> list[Path]:
        """Every process's part of this session (its own first), those that exist."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.directory)
                           if entry.name.startswith(_PART_PREFIX) and entry.name.endswith(f".{self.token}.tmp"))
        except OSError:
            return []
        paths = [self.directory / name for name in names]
        return sorted(paths, key=lambda path: path != self.part)

    def finish(self, saved: Path, names: dict[str, str], run_id: str | None) -> Path | None:
        """Merge the parts into `saved`'s sidecar, under the case names `names` gives their keys; remove the parts.
        The sidecar, or None when no trial kept an exchange (or the merge failed: `problem` says why)."""
        self.close()
        parts = self.parts()
        try:
            if not parts:
                return None
            target = sidecar_path(saved)
            merge_parts(parts, target, names, run_id=run_id, max_trial_bytes=self.max_trial_bytes)
            return target
        except OSError as exc:
            self.problem = f"{sidecar_path(saved)}: {exc.strerror or exc}"
            return None
        finally:
            _remove(parts)

    def discard(self) -> None:
        """No result file was saved: its exchanges go too."""
        self.close()
        _remove(self.parts())


def _remove(paths: list[Path]) -> None:
    for path in paths:
        try:
            path.unlink()
        except OSError:
            pass
