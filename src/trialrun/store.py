"""The results store: `results_<YYYYMMDD_HHMMSS>.json` files and the `latest.json` pointer (the eval skill's).

Writes are atomic (a temp file in the same folder, fsync, rename), and `latest.json` is written only after the
result file is complete, so it never names a half-written run. A corrupt, truncated or newer-schema file is an
error that names the file; the other runs in the folder stay usable.
"""

from __future__ import annotations

import json
import os
import re
from datetime import timezone
from pathlib import Path

from pydantic import ValidationError

from ._files import read_text, write_atomic
from .results import SCHEMA_VERSION, RunReport

__all__ = ["ResultsStore", "ResultFileError", "load_report"]

_FILE = re.compile(r"^results_(\d{8}_\d{6})(?:_(\d+))?\.json$")
LATEST = "latest.json"


class ResultFileError(ValueError):
    """A result file that cannot be used; the message names it and says why."""


def _major(version: str) -> int:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return -1


def load_report(path: str | os.PathLike[str]) -> RunReport:
    """Load one result file, with an error that names the file for every way it can be wrong."""
    path = Path(path)
    text = read_text(path, "result file", ResultFileError, missing="no such result file")
    if not text.strip():
        raise ResultFileError(f"{path}: the file is empty (an interrupted write?)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultFileError(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); the file may be truncated"
        ) from None
    if not isinstance(data, dict):
        raise ResultFileError(f"{path}: not a trialrun result file (expected a JSON object)")
    version = data.get("schema_version")
    if version is None:
        raise ResultFileError(f"{path}: not a trialrun result file (no schema_version)")
    if _major(version) > _major(SCHEMA_VERSION):
        raise ResultFileError(
            f"{path}: written by a newer trialrun (schema {version}; this one reads {SCHEMA_VERSION}); upgrade trialrun"
        )
    try:
        return RunReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ResultFileError(f"{path}: invalid result file: {where}: {first['msg']} ({exc.error_count()} problem(s))") from None


class ResultsStore:
    """A folder of result files (by default the suite's folder, `state/eval/`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def files(self) -> list[Path]:
        """Result files, oldest first (by the timestamp in the name, then the suffix)."""
        if not self.directory.is_dir():
            return []
        found = []
        for path in self.directory.iterdir():
            match = _FILE.match(path.name)
            if match:
                found.append((match.group(1), int(match.group(2) or 0), path))
        return [path for _, _, path in sorted(found)]

    def save(self, report: RunReport) -> Path:
        """Write the report as results_<YYYYMMDD_HHMMSS>.json (of its start, UTC; `_2`, `_3`... when taken), then
        point latest.json at it. A report without a run_id gets `eval_<same stamp and suffix>`."""
        stamp = report.started_at.astimezone(timezone.utc).strftime("%Y%m%d_%H%M%S")
        suffix, n = "", 1
        while (self.directory / f"results_{stamp}{suffix}.json").exists():
            n += 1
            suffix = f"_{n}"
        path = self.directory / f"results_{stamp}{suffix}.json"
        if report.run_id is None:
            report.run_id = f"eval_{stamp}{suffix}"
        write_atomic(path, report.model_dump_json(indent=2) + "\n")
        self._point_latest(path)
        return path

    def rewrite(self, path: Path, report: RunReport) -> None:
        """Replace an existing result file (e.g. after a manual grade), atomically; a copied latest.json follows."""
        text = report.model_dump_json(indent=2) + "\n"
        write_atomic(path, text)
        latest = self.directory / LATEST
        if latest.is_file() and not latest.is_symlink():
            try:
                same = json.loads(latest.read_text(encoding="utf-8")).get("run_id") == report.run_id
            except (ValueError, OSError):
                same = False
            if same:
                write_atomic(latest, text)

    def _point_latest(self, path: Path) -> None:
        """latest.json becomes a symlink to the new file (renamed into place, so atomic), or a copy where the file
        system has no symlinks."""
        link = self.directory / LATEST
        tmp = self.directory / f".{LATEST}.{os.getpid()}.tmp"
        try:
            tmp.unlink(missing_ok=True)
            os.symlink(path.name, tmp)
            os.replace(tmp, link)
        except OSError:
            tmp.unlink(missing_ok=True)
            write_atomic(link, path.read_text(encoding="utf-8"))

    def latest_path(self) -> Path:
        """The most recent run: the file latest.json links to (or latest.json itself when it is a copy), else the
        newest result file."""
        link = self.directory / LATEST
        if link.is_symlink():
            target = link.resolve()
            if target.is_file():
                return target
        elif link.is_file():
            return link
        files = self.files()
        if not files:
            raise ResultFileError(f"{self.directory}: no result files yet; run `trialrun run` first")
        return files[-1]

    def resolve(self, ref: str | None) -> Path:
        """A run by id (eval_20260731_140000), by file name or path, or the latest when ref is None."""
        if ref is None:
            return self.latest_path()
        candidate = Path(ref)
        if candidate.suffix == ".json" and candidate.exists():
            return candidate
        stem = ref.removeprefix("eval_")
        for path in self.files():
            if path.stem == f"results_{stem}" or path.name == ref:
                return path
        raise ResultFileError(f"no run {ref!r} in {self.directory} (known: {', '.join(p.stem for p in self.files()[-5:]) or 'none'})")

    def recent(self, count: int = 2) -> list[Path]:
        """The `count` most recent result files that load, oldest first; unreadable ones are skipped."""
        usable = []
        for path in reversed(self.files()):
            try:
                load_report(path)
            except ResultFileError:
                continue
            usable.append(path)
            if len(usable) == count:
                break
        return list(reversed(usable))
