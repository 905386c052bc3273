"""The results store: `results_<YYYYMMDD_HHMMSS>.json` files and the `latest.json` pointer (the eval skill's).

Writes are atomic (a temp file in the same folder, fsync, rename), and `latest.json` is written only after the
result file is complete, so it never names a half-written run. A corrupt, truncated or newer-schema file is an
error that names the file; the other runs in the folder stay usable.

A run's name is reserved when it starts, by creating its journal (`results_<stamp>.jsonl`, see `journal`)
exclusively, and a result file is never replaced: two runs started in the same second get `_2`, `_3`... A journal
left without its result file (the run was killed) is read as an interrupted run, and `recover` saves it.

Every read-modify-write of the folder's result files (a hand grade from the CLI or the viewer, a regrade, a recover)
holds the folder's write lock (`ResultsStore.write_lock`: an flock on `.trialrun.lock`, across processes), so no
edit is lost to another one's rewrite. A result file is rewritten only in place: never one that is a symbolic link,
nor one whose real folder is not the store's. A write that fails (a full disk) says which file in which folder.
"""

from __future__ import annotations

import errno
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._scrub import scrub_text, secrets_version
from .._util.files import TOO_DEEP, read_text, remove_stale_temps, unencodable_text, write_atomic, write_new
from .._util.safe_read import UnreadableFile, opened, regular
from .journal import SUFFIX as JOURNAL_SUFFIX, Journal, JournalError, is_live, read_journal
from .results import SCHEMA_VERSION, CaseResult, RunReport

__all__ = ["ResultsStore", "ResultFileError", "ResultWriteError", "StoreBusy", "LatestNotUpdated", "load_report",
           "has_finished", "NOTHING_FINISHED"]

_FILE = re.compile(r"^results_(\d{8}_\d{6})(?:_(\d+))?\.json(l?)$")
LATEST = "latest.json"
#: The folder's write lock (`ResultsStore.write_lock`).
LOCK = ".trialrun.lock"


def report_text(report: RunReport, trial_texts: Mapping[int, tuple[Any, str, object]] | None = None) -> str:
    """A result file's text: the report as JSON, with secrets scrubbed (`_scrub`) as it is serialised.

    `trial_texts`: trials serialised and scrubbed already (the journal's, by the id of the TrialResult, held with
    it, and the `secrets_version` they were scrubbed under: a text scrubbed before a secret was registered, e.g. a
    credential a later trial's transport first saw, is scrubbed again): put in as they are (one line each) instead of being serialised and scrubbed again, which is most of a big
    report's cost. Scrubbed in parts, the text is the one scrubbed whole only while no part held a secret (a rule such
    as AWS's secret key looks at the whole text): when REDACTED appears anywhere it is made whole the usual way."""
    if trial_texts:
        text = _assembled(report, trial_texts)
        if "REDACTED" not in text:
            return text
    return scrub_text(report.model_dump_json(indent=2)) + "\n"


_TRIALS_AT = list(CaseResult.model_fields).index("trials")


def _assembled(report: RunReport, trial_texts: Mapping[int, tuple[Any, str, object]]) -> str:
    """The report with each case's trials in place as their JSON texts (a trial without one is serialised and
    scrubbed here), around the rest of the report serialised and scrubbed on its own."""
    import secrets

    data = report.model_dump(mode="json", exclude={"cases": {"__all__": {"trials"}}})
    mark = "\x00" + secrets.token_hex(8) + "-"  # no text of a user's can end up spelled as a slot
    texts: list[str] = []
    version = secrets_version()
    for case, dumped in zip(report.cases, data["cases"]):
        slots = []
        for trial in case.trials:
            known = trial_texts.get(id(trial))
            if known is not None and known[0] is trial and known[2] is version:
                texts.append(known[1])
            else:
                texts.append(scrub_text(trial.model_dump_json()))
            slots.append(f"{mark}{len(texts) - 1}")
        items = list(dumped.items())
        items.insert(_TRIALS_AT, ("trials", slots))
        dumped.clear()
        dumped.update(items)
    envelope = scrub_text(json.dumps(data, indent=2, ensure_ascii=False))
    slot = re.compile('"' + re.escape(json.dumps(mark)[1:-1]) + r'(\d+)"')
    return slot.sub(lambda match: texts[int(match.group(1))], envelope) + "\n"


def has_finished(report: RunReport) -> bool:
    """Whether the run has anything to show: False only for a run interrupted before any of its tests finished (no
    case but skipped ones), which is never made `latest` nor picked as one of "the last two runs" (it stays in the
    folder, and `recover` saves it). A completed run that graded nothing is a result (`compare`'s gate fails on it)."""
    return report.status != "interrupted" or any(not case.skipped for case in report.cases)


#: Why such a run is passed over (in `ResultsStore.skipped`, which the commands say).
NOTHING_FINISHED = "interrupted before any test finished (nothing to show or compare)"


class ResultFileError(ValueError):
    """A result file that cannot be used; the message names it and says why (`path` and `reason` apart, for
    callers that list unusable files)."""

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path
        prefix = f"{path}: " if path is not None else ""
        self.reason = message[len(prefix):] if prefix and message.startswith(prefix) else message


class ResultWriteError(ResultFileError):
    """A result file that could not be written (a full disk, a read-only folder): the message names the file and
    its folder, and says that the file is as it was (writes are atomic)."""

    def __init__(self, path: Path, cause: OSError, what: str = "result file") -> None:
        why = cause.strerror or str(cause)
        full = " (the disk is full: free some space and try again)" if cause.errno == errno.ENOSPC else ""
        state = "it is as it was" if os.path.lexists(path) else "nothing was written"
        super().__init__(f"could not write the {what} {path.name} in the folder {path.parent}: {why}{full}; {state}",
                         path=path)
        self.errno = cause.errno


class StoreBusy(ResultFileError):
    """Another process held the folder's write lock for longer than a writer waits."""


@contextmanager
def writing(path: Path, what: str = "result file") -> Iterator[None]:
    """Turn an OSError of a write of `path` (a full disk, no permission) into a ResultWriteError naming the file and
    its folder: "No space left on device" alone does not say what was lost."""
    try:
        yield
    except (ResultFileError, FileExistsError, LatestNotUpdated):  # (the caller's to handle: another name, a warning)
        raise
    except OSError as exc:
        raise ResultWriteError(path, exc, what) from exc


def _bad(path: Path, reason: str) -> ResultFileError:
    return ResultFileError(f"{path}: {reason}", path=path)


def _major(version: str) -> int:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return -1


#: Result files are trialrun's own output and grow with cases x trials (10,000 trials with trajectories are about
#: 30 MiB), so they may be larger than the files a user writes by hand.
RESULT_MAX_BYTES = 2**30


def load_report(path: str | os.PathLike[str]) -> RunReport:
    """Load one result file, with an error that names the file for every way it can be wrong."""
    path = Path(path)
    if path.suffix == JOURNAL_SUFFIX:
        try:
            return read_journal(path)
        except JournalError as exc:
            raise ResultFileError(str(exc), path=path) from None
    try:
        text = read_text(path, "result file", ResultFileError, missing="no such result file", limit=RESULT_MAX_BYTES)
    except ResultFileError as exc:
        raise ResultFileError(str(exc), path=path) from None
    if not text.strip():
        raise _bad(path, "the file is empty (an interrupted write?)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(path, f"not valid JSON at line {exc.lineno}, column {exc.colno} ({exc.msg}); the file may be truncated") from None
    except RecursionError:
        raise _bad(path, TOO_DEEP) from None
    if (where := unencodable_text(data)) is not None:
        raise _bad(path, f"{where}: text that is not valid Unicode (a lone surrogate escape such as \\ud800)")
    if not isinstance(data, dict):
        raise _bad(path, "not a trialrun result file (expected a JSON object)")
    version = data.get("schema_version")
    if version is None:
        from ._skill_results import from_skill_result, is_skill_result  # the eval skill's own format

        if is_skill_result(data):
            return from_skill_result(data, path, lambda reason: _bad(path, reason))
        raise _bad(path, "not a trialrun result file (no schema_version)")
    if not isinstance(version, str):
        raise _bad(path, f'schema_version must be text, such as "{SCHEMA_VERSION}" (got {json.dumps(version)})')
    if _major(version) > _major(SCHEMA_VERSION):
        raise _bad(path, f"written by a newer trialrun (schema {version}; this one reads {SCHEMA_VERSION}); upgrade trialrun")
    try:
        return RunReport.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise _bad(path, f"invalid result file: {_where(data, first['loc'])}: {first['msg']} ({exc.error_count()} problem(s))") from None


def _where(data: dict[str, Any], loc: tuple[int | str, ...]) -> str:
    """A validation error's location, naming the test when it is inside one: `cases.2.trials.0.passed` becomes
    "case 'list-dir' (cases.2), trials.0.passed", so a hand-edited file can be fixed without counting entries."""
    where = ".".join(str(part) for part in loc)
    if len(loc) < 2 or loc[0] not in ("cases", "tests") or not isinstance(loc[1], int):
        return where
    entries = data.get(str(loc[0]))
    entry = entries[loc[1]] if isinstance(entries, list) and 0 <= loc[1] < len(entries) else None
    label = (entry.get("name") or entry.get("id")) if isinstance(entry, dict) else None
    if not isinstance(label, str):
        return where
    rest = ".".join(str(part) for part in loc[2:])
    kind = "case" if loc[0] == "cases" else "test"
    return f"{kind} {label!r} ({loc[0]}.{loc[1]})" + (f", {rest}" if rest else "")


def _run_id(path: Path) -> object:
    """The run id a result file (or a copied latest.json) says it holds, read by the safe reader; None when it
    cannot be read or says none."""
    try:
        data = json.loads(read_text(path, "result file", ResultFileError, limit=RESULT_MAX_BYTES))
    except (ResultFileError, ValueError, RecursionError):
        return None
    return data.get("run_id") if isinstance(data, dict) else None


def _unusable(path: Path) -> str:
    """Why `path` (not a regular file) is not read as a result file, in the safe reader's words."""
    try:
        with opened(path, "result file", limit=RESULT_MAX_BYTES):
            return "not used"  # pragma: no cover - it became a regular file meanwhile
    except UnreadableFile as exc:
        return exc.reason


def _key(path: Path) -> tuple[str, int]:
    """A result file's (or journal's) place in time: its stamp, then its suffix number."""
    match = _FILE.match(path.name)
    return (match.group(1), int(match.group(2) or 0)) if match else ("", 0)


def _take(fd: int, lock: Path, timeout_s: float) -> None:
    """flock `fd` exclusively, waiting up to `timeout_s` for whoever holds it (a grade takes milliseconds)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: this process's writers only
        return
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise StoreBusy(f"{lock.parent}: another trialrun has been writing here for over {timeout_s:g}s "
                                f"(it holds {lock.name}); nothing was changed, try again when it has finished",
                                path=lock) from None
            time.sleep(0.02)


class LatestNotUpdated(OSError):
    """The run was saved, but latest.json could not be pointed at it (a folder in its place, a read-only file)."""

    def __init__(self, saved: Path, latest: Path, cause: OSError) -> None:
        self.saved = saved
        super().__init__(f"saved {saved.name}, but could not update {latest}: {cause.strerror or cause}")


class ResultsStore:
    """A folder of result files (by default the suite's folder, `state/eval/`)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        #: Result files passed over while choosing runs (latest, recent), with why: callers warn about them, so a
        #: corrupt newest run is never silently replaced by an older one.
        self.skipped: dict[Path, str] = {}

    def _usable(self, path: Path) -> bool:
        """`path` loads, and some trial of it finished (else it is in `skipped`, with why)."""
        try:
            report = load_report(path)
        except ResultFileError as exc:
            self.skipped[path] = exc.reason
            return False
        if not has_finished(report):
            self.skipped[path] = NOTHING_FINISHED
            return False
        return True

    def files(self) -> list[Path]:
        """Result files, oldest first (by the timestamp in the name, then the suffix), with the journals of runs
        that did not finish (no result file of their name, and no process writing them) in their place."""
        if not self.directory.is_dir():
            return []
        found = []
        names = {path.name for path in self.directory.iterdir()}
        for name in names:
            match = _FILE.match(name)
            if match and (not match.group(3) or self._dead_journal(name, names)):
                found.append((match.group(1), int(match.group(2) or 0), self.directory / name))
        return [path for _, _, path in sorted(found)]

    def _dead_journal(self, name: str, names: set[str]) -> bool:
        return name.removesuffix("l") not in names and not is_live(self.directory / name)

    def unfinished(self) -> list[Path]:
        """Journals of runs that did not finish (killed), oldest first: `recover` saves them as result files. Only
        regular files: a FIFO or a device named like a journal is no run (`files` lists it, and loading it says why)."""
        return [path for path in self.files() if path.suffix == JOURNAL_SUFFIX and regular(path)]

    def reserve(self, started_at: datetime) -> tuple[str, Journal]:
        """A run's name (`results_<stamp>[_n]`, of `started_at` in UTC), taken by creating its journal exclusively
        (O_EXCL), so no other run, started in the same second or not, can pick it; and the journal, open."""
        self.directory.mkdir(parents=True, exist_ok=True)
        stamp = started_at.astimezone(timezone.utc).strftime("%Y%m%d_%H%M%S")
        n = 1
        while True:
            stem = f"results_{stamp}" + (f"_{n}" if n > 1 else "")
            n += 1
            if (self.directory / f"{stem}.json").exists():
                continue
            try:
                fd = os.open(self.directory / f"{stem}{JOURNAL_SUFFIX}", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
            except FileExistsError:
                continue
            return stem, Journal(self.directory / f"{stem}{JOURNAL_SUFFIX}", fd)

    def remove_stale_temps(self) -> list[Path]:
        """Remove temp files a run killed while writing left here (other runs' files being written are kept)."""
        return remove_stale_temps(self.directory)

    def save(self, report: RunReport, *, stem: str | None = None,
             trial_texts: Mapping[int, tuple[Any, str, object]] | None = None, point_latest: bool = True) -> Path:
        """Write the report as results_<YYYYMMDD_HHMMSS>.json (of its start, UTC; `_2`, `_3`... when taken), or as
        `<stem>.json` for a name `reserve` gave, then point latest.json at it. A result file is never replaced:
        a name taken meanwhile moves the report to the next free one. A report without a run_id gets
        `eval_<same stamp and suffix>`."""
        stamp = report.started_at.astimezone(timezone.utc).strftime("%Y%m%d_%H%M%S")
        candidates = [stem] if stem else []
        candidates += [f"results_{stamp}" + (f"_{n}" if n > 1 else "") for n in range(1, 10_000)]
        for name in candidates:
            path = self.directory / f"{name}.json"
            if name != stem and (path.exists() or (self.directory / f"{name}{JOURNAL_SUFFIX}").exists()):
                continue
            run_id = report.run_id
            if run_id is None or (stem and name != stem and run_id == f"eval_{stem.removeprefix('results_')}"):
                report.run_id = f"eval_{name.removeprefix('results_')}"
            try:
                write_new(path, report_text(report, trial_texts))
            except FileExistsError:
                report.run_id = run_id
                continue
            except OSError as exc:  # (a full disk: the error names the file it could not write)
                if exc.errno is None or exc.filename is not None:
                    raise
                raise type(exc)(exc.errno, exc.strerror, str(path)) from exc
            break
        else:  # pragma: no cover - ten thousand runs in one second
            raise FileExistsError(f"{self.directory}: no free result file name for {stamp}")
        if not point_latest:  # (a regrade: no agent ran, the run it regraded stays the latest)
            return path
        try:
            self._point_latest(path)
        except OSError as exc:
            raise LatestNotUpdated(path, self.directory / LATEST, exc) from exc
        return path

    @contextmanager
    def write_lock(self, timeout_s: float = 60.0) -> Iterator[None]:
        """Hold the folder's write lock (an flock on `.trialrun.lock`, created as needed) around a read-modify-write
        of its result files: two graders, a grader and a regrade, or two recovers, in any processes, then never
        lose each other's edit. StoreBusy after `timeout_s`; ResultWriteError when the lock cannot be made. Where
        there is no flock (Windows) the lock holds within this process only."""
        lock = self.directory / LOCK
        with writing(lock, "lock file"):
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o666)
        try:
            _take(fd, lock, timeout_s)
            yield
        finally:
            os.close(fd)  # releases the lock

    def writable(self, path: Path) -> Path:
        """`path`, checked to be a result file this store may rewrite in place: not a symbolic link (a grade through
        one would rewrite a file anywhere), in this store's folder (its real one), not a journal."""
        if path.suffix == JOURNAL_SUFFIX:
            raise ResultFileError(f"{path}: the journal of a run that did not finish; save it as a result file "
                                  f"first with `trialrun recover`", path=path)
        if os.path.islink(path):
            raise ResultFileError(f"{path}: is a symbolic link (to {os.readlink(path)}); a result file is rewritten "
                                  "only in place, never through a link: give the file it links to", path=path)
        if Path(os.path.realpath(path)).parent != Path(os.path.realpath(self.directory)):
            raise ResultFileError(f"{path}: is not in the results folder {self.directory} (a link on its way "
                                  "leads out of it); a result file is rewritten only in its own folder", path=path)
        return path

    def recover(self, journal: Path) -> Path:
        """Save the run a dead journal records as its result file (`"status": "interrupted"`), and remove the
        journal. latest.json follows when no newer run exists and some trial of it finished. Under the write lock:
        two recovers at once save it once."""
        with self.write_lock():
            stem = journal.name.removesuffix(JOURNAL_SUFFIX)
            path = self.directory / f"{stem}.json"
            if path.exists() and not os.path.lexists(journal):  # another process recovered it meanwhile
                return path
            report = load_report(journal)
            newer = [p for p in self.files() if p.suffix == ".json" and _key(p) > _key(journal)]
            with writing(path):
                write_new(path, report.model_dump_json(indent=2) + "\n")
            journal.unlink()
        if not newer and has_finished(report):
            try:
                self._point_latest(path)
            except OSError as exc:
                raise LatestNotUpdated(path, self.directory / LATEST, exc) from exc
        return path

    def rewrite(self, path: Path, report: RunReport) -> None:
        """Replace an existing result file of this folder (e.g. after a manual grade), atomically and in place
        (`writable`); a copied latest.json follows. The caller holds `write_lock` from its read to here."""
        self.writable(path)
        text = report_text(report)
        with writing(path):
            write_atomic(path, text)
        latest = self.directory / LATEST
        if report.run_id is not None and not latest.is_symlink() and _run_id(latest) == report.run_id:
            with writing(latest):
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
        newest result file that loads. Newer result files that do not load are recorded in `skipped`."""
        link = self.directory / LATEST
        chosen: Path | None = None
        if link.is_symlink():
            target = link.resolve()
            if target.is_file():
                chosen = target
        elif link.is_file():
            chosen = link
        if chosen is None and os.path.lexists(link):  # a FIFO, a device, a folder, a dangling link: never read
            self.skipped[link] = _unusable(link)
        files = self.files()
        if chosen is None:
            usable = self.recent(1)
            if usable:
                return usable[0]
            if not files:
                raise ResultFileError(f"{self.directory}: no result files yet; run `trialrun run` first")
            raise ResultFileError(f"{self.directory}: no usable result file ({self._skipped_text()})")
        match = _FILE.match(chosen.name)
        if match:  # newer files that do not load are worth a warning; newer good ones are not trusted as latest
            key = _key(chosen)
            for path in files:
                other = _FILE.match(path.name)
                if other and _key(path) > key:
                    if path.suffix == JOURNAL_SUFFIX and self._usable(path):
                        chosen, key = path, _key(path)  # a newer run that was killed: it is the most recent run
                    elif path.suffix != JOURNAL_SUFFIX:
                        self._usable(path)
        return chosen

    def _skipped_text(self) -> str:
        return "; ".join(f"{path.name}: {reason}" for path, reason in self.skipped.items()) or "none"

    def resolve(self, ref: str | None) -> Path:
        """A run by reference: None or "latest" (via latest.json), a run id (`eval_20260731_140000`), a result
        file's name or stem (`results_20260731_140000[.json]`), or a path to any result file."""
        if ref is None or ref in ("latest", LATEST):
            return self.latest_path()
        candidate = Path(ref)
        if candidate.is_file():
            return candidate
        stem = candidate.name.removesuffix(".json")
        wanted = {stem, f"results_{stem.removeprefix('eval_')}"}
        files = self.files()
        for path in files:
            if path.stem in wanted:
                return path
        for path in reversed(files):  # a run id given by the caller (evaluate(run_id=...)) is in the file only
            if _run_id(path) == ref:
                return path
        recent = ", ".join(p.stem for p in files[-5:]) or "none yet"
        raise ResultFileError(
            f"no run {ref!r} in {self.directory}; give a run id (eval_YYYYMMDD_HHMMSS), a result file's name or stem "
            f"(results_YYYYMMDD_HHMMSS[.json]), a path to a result file, or 'latest' (recent: {recent})"
        )

    def recent(self, count: int = 2) -> list[Path]:
        """The `count` most recent result files that load, oldest first; newer ones that do not load are passed
        over and recorded in `skipped` (file -> why)."""
        usable = []
        for path in reversed(self.files()):
            if not self._usable(path):
                continue
            usable.append(path)
            if len(usable) == count:
                break
        return list(reversed(usable))
