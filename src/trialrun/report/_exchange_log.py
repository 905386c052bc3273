"""The exchanges sidecar: each trial's raw HTTP exchanges with the model, scrubbed and capped, beside its result file.

A result file keeps the trajectory read from the traffic; `results_<stamp>.exchanges.ndjson` keeps the traffic
itself, for `trialrun view` to show under each turn (`.ndjson`, not `.jsonl`: `results_*.jsonl` is a run's
journal, and what looks for unfinished runs looks for those). JSON Lines (UTF-8), one object a line, each written in one
`write` as its trial finishes, so a run killed outright keeps every finished trial's exchanges (as the journal
keeps its results); nothing is held for the whole run:

    {"event": "start", "exchanges_version": 1, "run_id": "eval_...", "max_trial_bytes": 4194304, "kept": true}
    {"event": "trial", "case": "read-file", "trial": 1, "exchanges": [
        {"n": 1, "request": {"method": "POST", "url": ..., "headers": {...}, "body": {...}},
         "response": {"status": 200, "headers": {...}, "stream": "event: ...\\n\\n"},
         "cut": {"request": "... bytes cut ..."}}]}

Requests and responses use the cassette layout (`_cassette_io.exchange_to_dict`: `body` for JSON, `stream` for
server-sent events, `body_text`, `body_base64`). `n` is the number `Turn.exchange` refers to. Every line is scrubbed
whole as it is made, as the journal's are (a JSON body is stored as data, so a key its text wrote with escapes,
`\\u0073k-...`, is plain only in the line), with credential headers REDACTED and response headers cut to an
allow-list before. A trial with a body that may be cut has every exchange scrubbed first
(`models.cassette.scrub_exchange`, a stream after reassembly) BEFORE anything is cut, so a cut never leaves half a
key behind; one whose bodies all fit (the common case) has only its streams and text bodies scrubbed first (the line
escapes them once more than they were sent), its JSON bodies by the line's scrub alone. The line is made where the
trial ran (`trial_line`): a trial on a Ray worker sends back its line, never its raw exchanges.

Caps (real coding agents send 100 KB+ requests, 50 times a trial): a body above `BODY_MAX_BYTES` is shortened,
JSON by cutting its long strings (the model, the tool schemas and the message structure stay readable), anything
else after its first bytes; once a trial's bodies reach `max_trial_bytes`, each further body keeps its first
`BODY_MIN_BYTES`. Every cut says how much was cut and why (`cut`), never silently.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._util import safe_read as _safe_read
from ._file_models import SidecarExchange, SidecarStart, SidecarTrial, validated
from .._util.files import hold_lock
from ._line_log import LineAppender
from .._util.safe_read import UnreadableFile
from .._scrub import credential_values, scrub_body, scrub_headers, scrub_text, scrub_url, secrets_version

__all__ = ["SUFFIX", "EXCHANGES_VERSION", "DEFAULT_MAX_TRIAL_BYTES", "BODY_MAX_BYTES", "BODY_MIN_BYTES",
           "ExchangeLog", "TrialLine", "TrialExchanges", "sidecar_path", "trial_record", "trial_line",
           "read_trial_exchanges", "merge_parts", "copy_sidecar", "SidecarIndex"]

#: A sidecar's name is its result file's stem with this suffix.
SUFFIX = ".exchanges.ndjson"
EXCHANGES_VERSION = 1
#: The default cap on one trial's stored bodies (`exchanges_max_bytes` in trialrun.toml).
DEFAULT_MAX_TRIAL_BYTES = 4 * 2**20
#: A body above this is shortened even when the trial has room.
BODY_MAX_BYTES = 256 * 2**10
#: What a body keeps once its trial's cap is reached (enough to see what the request was).
BODY_MIN_BYTES = 1024

#: What a sidecar read may hold: a line is one trial's exchanges (its bodies capped by `max_trial_bytes`, 4 MiB by
#: default, then escaped once more as JSON); the file is read a line at a time, so its own size only bounds the scan.
MAX_BYTES = 64 * 2**30
LINE_MAX_BYTES = 256 * 2**20

_BODY_FIELDS = ("body", "stream", "body_text", "body_base64")
_STRING_KEEPS = (4096, 1024, 256, 64)  # the lengths long JSON strings are cut to, tried in turn


def sidecar_path(result: str | os.PathLike[str]) -> Path:
    """The sidecar of a result file (or journal, or stem): `results_<stamp>.exchanges.ndjson` beside it."""
    path = Path(result)
    return path.with_name(path.name.split(".", 1)[0] + SUFFIX)


# -- writing ------------------------------------------------------------------------------------------------
def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _shorten_strings(data: Any, keep: int) -> tuple[Any, int]:
    """`data` with every string longer than `keep` (+ room for the marker) cut to `keep` characters and a marker
    saying how many were cut; and the number of characters cut in all."""
    cut = 0

    def walk(value: Any) -> Any:
        nonlocal cut
        if isinstance(value, str):
            if len(value) > keep + 40:
                cut += len(value) - keep
                return f"{value[:keep]}… [{len(value) - keep:,} characters cut]"
            return value
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return value

    return walk(data), cut


def _cap_body(part: dict[str, Any], limit: int, why: str, raw_size: int) -> tuple[int, str | None]:
    """Shorten the body stored in `part` (a cassette-layout request or response; `raw_size` bytes as recorded) to
    about `limit` bytes, in place: (bytes it now takes, the cut's description or None when it fit)."""
    if raw_size <= limit:  # the common case: nothing to measure again
        return raw_size, None
    name = next((key for key in _BODY_FIELDS if key in part), None)
    if name is None:
        return 0, None
    value = part[name]
    text = value if isinstance(value, str) else _dumps(value)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return size, None
    if name == "body":  # JSON: cut its long strings, keeping the structure (and so the model, tools, messages)
        for keep in _STRING_KEEPS:
            shorter, cut_chars = _shorten_strings(value, keep)
            shorter_text = _dumps(shorter)
            kept = len(shorter_text.encode("utf-8", "surrogatepass"))
            if kept <= limit:
                part[name] = shorter
                return kept, (f"{size - kept:,} of {size:,} bytes cut ({why}): strings longer than {keep:,} "
                              f"characters were shortened, {cut_chars:,} characters in all")
        del part[name]
        name, text = "body_text", text
    if name == "body_base64":
        raw = base64.b64decode(text)
        part[name] = base64.b64encode(raw[:limit]).decode("ascii")
        return limit, f"{len(raw) - limit:,} of {len(raw):,} bytes cut ({why}): only the first {limit:,} bytes are kept"
    head = text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    part[name] = head
    kept = len(head.encode("utf-8", "surrogatepass"))
    return kept, f"{size - kept:,} of {size:,} bytes cut ({why}): only the first {kept:,} bytes are kept"


def trial_record(case: str, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes] = frozenset(), *,
                 max_trial_bytes: int = DEFAULT_MAX_TRIAL_BYTES) -> dict[str, Any]:
    """One trial's sidecar line (as data): its exchanges scrubbed (`credentials`: values its requests carried in
    credential headers, removed wherever else they appear), numbered from 1, and capped."""
    from ..models._cassette_io import exchange_to_dict
    from ..models.cassette import scrub_exchange

    records: list[dict[str, Any]] = []
    used = 0
    for number, exchange in enumerate(exchanges, start=1):
        scrubbed = scrub_exchange(exchange, credentials)
        record: dict[str, Any] = {"n": number, **exchange_to_dict(scrubbed)}
        cuts: dict[str, str] = {}
        for side in ("request", "response"):
            room = max_trial_bytes - used
            if room >= BODY_MIN_BYTES:
                limit, why = min(BODY_MAX_BYTES, room), (
                    f"a body above {BODY_MAX_BYTES:,} bytes" if room >= BODY_MAX_BYTES
                    else f"the trial's exchanges reached {max_trial_bytes:,} bytes")
            else:
                limit, why = BODY_MIN_BYTES, f"the trial's exchanges reached {max_trial_bytes:,} bytes"
            kept, cut = _cap_body(record[side], limit, why, len(getattr(scrubbed, f"{side}_body")))
            used += kept
            if cut is not None:
                cuts[side] = cut
        if cuts:
            record["cut"] = cuts
        records.append(record)
    return {"event": "trial", "case": case, "trial": trial, "exchanges": records}


def trial_line(case: str, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes] = frozenset(), *,
               max_trial_bytes: int = DEFAULT_MAX_TRIAL_BYTES) -> tuple[str | None, str | None]:
    """One trial's sidecar line as written, scrubbed as a whole (`credentials` and the values of every exchange's
    credential headers included), or None and why it could not be made. Where the trial ran: on a Ray worker it is
    made there, so neither the raw exchanges nor the credentials leave the worker.

    The line scrub is the one every string goes through: a JSON body is stored as data, so a key its text wrote
    with escapes, \\u0073k-..., is plain only in the line. When no body can be cut (`_uncut`: the common case) that
    is the only scrub of a JSON body (`_light_record`); a trial with a body that may be cut is scrubbed before it is
    cut (`trial_record`), so a cut never leaves half a key behind, and then as a line."""
    try:
        record = (_light_record(case, trial, exchanges, credentials) if _uncut(exchanges, max_trial_bytes)
                  else trial_record(case, trial, exchanges, credentials, max_trial_bytes=max_trial_bytes))
        line = _dumps(record)
    except Exception as exc:  # noqa: BLE001 - a body nobody foresaw must not stop the run: say so at its end
        return None, f"the exchanges of trial {trial} of {case!r} could not be written ({type(exc).__name__}: {exc})"
    return scrub_text(line, _line_extra(exchanges, credentials)), None


def _uncut(exchanges: Sequence[Any], max_trial_bytes: int) -> bool:
    """Whether `trial_record` would cut none of these bodies, whatever the scrub does to their sizes: its budget
    walked with every body counted twice (a redaction grows a text by at most 8/6: REDACTED for 6 characters)."""
    used = 0
    for exchange in exchanges:
        for size in (len(exchange.request_body), len(exchange.response_body)):
            room = max_trial_bytes - used
            limit = min(BODY_MAX_BYTES, room) if room >= BODY_MIN_BYTES else BODY_MIN_BYTES
            if 2 * size > limit:
                return False
            used += 2 * size
    return True


def _line_extra(exchanges: Sequence[Any], credentials: frozenset[bytes]) -> tuple[str, ...]:
    """The values the line scrub removes besides the scrubber's own: the trial's credentials and those its requests
    carried in headers, each as it is and as written inside a JSON string (a quote or backslash escaped)."""
    values = set(credentials)
    for exchange in exchanges:
        values |= credential_values(exchange.request_headers)
    found: set[str] = set()
    for value in values:
        text = value.decode("utf-8", "replace")
        found |= {text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]}
    return tuple(sorted(found, key=len, reverse=True))


def _light_record(case: str, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes]) -> dict[str, Any]:
    """`trial_record` of bodies none of which is cut, for a line that is scrubbed as a whole next: what is not text
    is done here (credential headers REDACTED, response headers cut to the allow-list, keys of URL queries), and a
    body is scrubbed here only when the line would hold it escaped once more than it was sent (a stream, which is
    also reassembled to find a key split across events; other text): a JSON body is data, written as it was sent."""
    from ..models._cassette_io import _body_field

    def stored(exchange: Any, body: bytes, streamed: bool) -> dict[str, Any]:
        field = _body_field(body, streamed=streamed)
        if "body" in field:
            return field
        return _body_field(scrub_body(body, _line_extra((exchange,), credentials), streamed=streamed), streamed=streamed)

    records: list[dict[str, Any]] = []
    for number, exchange in enumerate(exchanges, start=1):
        records.append({"n": number,
                        "request": {"method": exchange.method, "url": scrub_url(exchange.url, text=False),
                                    "headers": scrub_headers(exchange.request_headers, text=False),
                                    **stored(exchange, exchange.request_body, False)},
                        "response": {"status": exchange.status,
                                     "headers": scrub_headers(exchange.response_headers, response=True, text=False),
                                     **stored(exchange, exchange.response_body, exchange.streamed)}})
    return {"event": "trial", "case": case, "trial": trial, "exchanges": records}


class TrialLine:
    """The runner's `on_exchanges` where a trial runs away from the run's sidecar (a Ray worker): makes the trial's
    line (`trial_line`, capped as the driver's log asked) and keeps it, to travel back with the trial's result."""

    def __init__(self, max_trial_bytes: int) -> None:
        self.max_trial_bytes = max_trial_bytes
        self.made: tuple[str | None, str | None] = (None, None)

    def __call__(self, case: Any, trial: int, exchanges: Sequence[Any], credentials: frozenset[bytes]) -> None:
        self.made = trial_line(case.name, trial, exchanges, credentials, max_trial_bytes=self.max_trial_bytes)


def _line_prefix(case: str, trial: int) -> bytes:
    """How a trial's line starts: a reader finds it without parsing the other trials' (possibly large) lines."""
    return ('{"event":"trial","case":' + _dumps(case) + ',"trial":' + str(int(trial)) + ",").encode("utf-8")


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
        start: dict[str, Any] = {"event": "start", "exchanges_version": EXCHANGES_VERSION, "run_id": run_id,
                                 "max_trial_bytes": max_trial_bytes, "kept": True}
        version = secrets_version()
        log._append(scrub_text(_dumps(start)), version=version)
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


_TRIAL_HEAD = b'{"event":"trial","case":'
_TRIAL_NUMBER = re.compile(r',"trial":(\d+),')


def merge_parts(parts: Sequence[Path], dest: Path, names: dict[str, str], *, run_id: str | None,
                max_trial_bytes: int = DEFAULT_MAX_TRIAL_BYTES) -> int:
    """Write the sidecar `dest` from parts that several processes wrote (a pytest session's, one per xdist worker,
    each line keyed by a name of the writer's): a start line, then every whole trial line of the parts whose key
    is in `names`, under the case name `names` gives it (the one the result file has). Line by line, so memory stays
    within one trial's line; written to a temp file and renamed, so `dest` is whole or absent. The number of
    trials written."""
    tmp = dest.with_name(f".{dest.name}.{secrets.token_hex(6)}.tmp")  # `_files`' temp pattern: a killed merge's is removed
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    written = 0
    try:
        hold_lock(fd)
        with os.fdopen(fd, "wb") as out:
            start = {"event": "start", "exchanges_version": EXCHANGES_VERSION, "run_id": run_id,
                     "max_trial_bytes": max_trial_bytes, "kept": True}
            out.write((scrub_text(_dumps(start)) + "\n").encode("utf-8"))
            for part in parts:
                try:  # the safe reader's lines: a part is in the results folder, where anything may be put
                    for line in _safe_read.lines(part, "exchanges part", limit=MAX_BYTES, line_limit=LINE_MAX_BYTES):
                        renamed = _renamed(line.data + b"\n", names) if line.whole and line.data else None
                        if renamed is not None:
                            out.write(renamed)
                            written += 1
                except UnreadableFile:
                    continue  # a worker that never wrote one, or a part removed meanwhile: nothing (more) of it
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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

    tmp = dest.with_name(f".{dest.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as out, open(source, "rb") as src:
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
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# -- reading ------------------------------------------------------------------------------------------------
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


def _head_of(text: str) -> tuple[str, re.Match[str]] | None:
    """The case key of a trial line's text and the match of its trial number (whose end is where the rest of the
    line starts); None when the text does not start as a trial line does."""
    try:
        key, end = json.JSONDecoder().raw_decode(text, len(_TRIAL_HEAD))
    except ValueError:
        return None
    number = _TRIAL_NUMBER.match(text, end)
    return (key, number) if isinstance(key, str) and number is not None else None


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
