"""One trial's sidecar line: its exchanges scrubbed, numbered and capped (the format is described in
`log`). Made where the trial ran: by the run's `ExchangeLog`, or on a Ray worker (`TrialLine`), which sends
back the line and never the raw exchanges.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from ..._scrub import credential_values, scrub_body, scrub_headers, scrub_text, scrub_url
from .format import BODY_MAX_BYTES, BODY_MIN_BYTES, DEFAULT_MAX_TRIAL_BYTES, _dumps

__all__ = ["TrialLine", "trial_record", "trial_line"]

_BODY_FIELDS = ("body", "stream", "body_text", "body_base64")
_STRING_KEEPS = (4096, 1024, 256, 64)  # the lengths long JSON strings are cut to, tried in turn


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
    from ...models._cassette_io import exchange_to_dict
    from ...models.cassette import scrub_exchange

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
    from ...models._cassette_io import _body_field

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

