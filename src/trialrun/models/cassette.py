"""Cassettes: replay recorded provider traffic with no network, or record it (credentials scrubbed) from a live model.

Replay matches a request on method + path + canonical JSON body (sorted keys, some top-level fields ignored), taking
the next unused matching recording in recorded order, so a loop that sends the same request twice gets the two
recorded answers in turn. Both sides are scrubbed with the rules recording uses before they are compared: the file
stores "my key is REDACTED", and the agent that sends "my key is sk-..." again must still match it. A request that
matches nothing is answered with an error AND recorded as a problem that names the cassette, the request number and
the first differing field, so the trial fails with a reason a person can act on.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from .._scrub import credential_values, scrub_body, scrub_headers, scrub_url
from ..trajectory import Trajectory
from ..wire import codec_for, decode_trajectory
from ..wire._codec import json_body
from ..wire._types import Exchange, ProviderError
from ._base import ModelKind, ModelTransport, aforward, build_response, forward, kind_of
from ._cassette_io import CassetteFileError, load_exchanges, save_exchanges
from .live import LiveModel

__all__ = ["Cassette", "read_trajectory", "scrub_exchange", "credential_values", "CassetteFileError"]

Mode = Literal["replay", "record", "live"]
_MODES = ("replay", "record", "live")

# The loader undoes Content-Encoding and drops the header with it; a body it could not decode (br without `brotli`)
# keeps its Content-Encoding, so replay serves the recorded bytes WITH it (the client decodes them, or says why not).
# Lengths and framing are recomputed for the in-memory response.
_DROP_ON_REPLAY = frozenset({"content-length", "transfer-encoding"})
_NO_RETRY = {"x-should-retry": "false"}



def read_trajectory(path: str | os.PathLike[str]) -> Trajectory:
    """The trajectory held in a cassette file (trialrun's format or vcrpy's), read without replaying it."""
    return decode_trajectory(load_exchanges(path))


def scrub_exchange(exchange: Exchange, secrets: frozenset[bytes] | set[bytes] = frozenset()) -> Exchange:
    """A copy with credentials removed, by the one scrubber every artefact goes through (`trialrun._scrub`):
    credential headers REDACTED, response headers cut to an allow-list, key shapes and the environment's secret
    values removed from URLs, queries and bodies (a streamed body after its stream is reassembled).

    `secrets` are credential values seen in request headers (see `credential_values`); they are removed wherever
    else they appear (an agent that echoes its key into a prompt must not leak it into a cassette).
    """
    values = secrets | credential_values(exchange.request_headers)
    extra = tuple(value.decode("utf-8", "replace") for value in values)
    return replace(
        exchange,
        url=scrub_url(exchange.url, extra),
        request_headers=scrub_headers(exchange.request_headers, extra),
        request_body=scrub_body(exchange.request_body, extra),
        response_headers=scrub_headers(exchange.response_headers, extra, response=True),
        response_body=scrub_body(exchange.response_body, extra, streamed=exchange.streamed),
    )


def _scrubbed_request_body(body: bytes, headers: Any) -> bytes:
    """A request body as recording would store it: what replay compares, so a scrubbed recording still matches."""
    values = credential_values(headers)
    return scrub_body(body, tuple(value.decode("utf-8", "replace") for value in values))


def _canonical(body: bytes, ignore: frozenset[str]) -> tuple[Any, str]:
    """(parsed body without ignored fields, canonical text) — equal texts mean the requests match."""
    if not body:
        return None, ""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        text = body.decode("utf-8", "replace")
        return text, "raw:" + text
    if isinstance(data, dict) and ignore:
        data = {key: value for key, value in data.items() if key not in ignore}
    return data, json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _first_difference(recorded: Any, sent: Any, where: str) -> str | None:
    """The first place two JSON values differ, as `where.field[i]: recorded X != sent Y`."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        for key in list(recorded) + [k for k in sent if k not in recorded]:
            if key not in sent:
                return f"{where}.{key}: recorded {_show(recorded[key])}, not sent"
            if key not in recorded:
                return f"{where}.{key}: not recorded, sent {_show(sent[key])}"
            found = _first_difference(recorded[key], sent[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(sent, list):
        for index, (a, b) in enumerate(zip(recorded, sent)):
            found = _first_difference(a, b, f"{where}[{index}]")
            if found:
                return found
        if len(recorded) != len(sent):
            return f"{where}: recorded {len(recorded)} items != sent {len(sent)} items"
        return None
    if recorded != sent or type(recorded) is not type(sent):
        return f"{where}: recorded {_show(recorded)} != sent {_show(sent)}"
    return None


class _Recording:
    __slots__ = ("exchange", "parsed", "key", "used")

    def __init__(self, exchange: Exchange, ignore: frozenset[str]) -> None:
        self.exchange = exchange
        body = _scrubbed_request_body(exchange.request_body, exchange.request_headers)
        self.parsed, canonical = _canonical(body, ignore)
        # httpx gives a request's path percent-decoded (`v1:0`); a recorded URL may keep it encoded (`v1%3A0`).
        self.key = (exchange.method.upper(), unquote(exchange.path), canonical)
        self.used = False


class Cassette(ModelTransport):
    """A transport backed by a cassette file: `mode="replay"` (no network), `"record"` or `"live"`.

    - replay: answers from the file's recordings (trialrun's format or vcrpy's YAML); a miss is an HTTP 500 error
      and a problem naming the file, the request number and the first differing field.
    - record: passes each request to `upstream`, and rewrites the file atomically after every exchange (replacing any
      earlier recording), credentials scrubbed.
    - live: passes through to `upstream` without writing the file (the exchanges are still observed).

    `upstream` defaults to `LiveModel()`: the request's own URL and key, with LiveModel's timeout and its retries of
    rate limits and server errors honouring Retry-After (only the final answer of a retried request is recorded).

    `ignore_fields`: top-level request body fields left out of matching (they vary between runs).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        mode: Mode = "replay",
        *,
        ignore_fields: tuple[str, ...] | list[str] = ("metadata", "user"),
        upstream: Any = None,
    ) -> None:
        super().__init__()
        if mode not in _MODES:
            raise ValueError(f"Cassette({str(path)!r}): mode must be one of {', '.join(_MODES)}, got {mode!r}")
        self.path = Path(path)
        self.mode: Mode = mode
        self.ignore_fields = frozenset(ignore_fields)
        self._owns_upstream = upstream is None and mode != "replay"
        self.upstream = LiveModel() if self._owns_upstream else upstream
        self._requests_seen = 0
        self._secrets: set[bytes] = set()
        self._recordings: list[_Recording] = []
        if mode == "replay":
            try:
                exchanges = load_exchanges(self.path)
            except CassetteFileError as exc:
                if not self.path.exists():
                    raise CassetteFileError(
                        f"{exc}; record it first: Cassette({str(self.path)!r}, mode=\"record\") "
                        "or the CLI's --model record:DIR"
                    ) from None
                raise
            self._recordings = [_Recording(exchange, self.ignore_fields) for exchange in exchanges]

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r}, mode={self.mode!r})"

    @property
    def model_kind(self) -> ModelKind:
        """A replay answers from the recording; a recording answers from its upstream (the live model)."""
        return "replay" if self.mode == "replay" else kind_of(self.upstream)

    @property
    def unused(self) -> int:
        """Recordings not (yet) replayed."""
        with self._lock:
            return sum(1 for recording in self._recordings if not recording.used)

    # -- replay ---------------------------------------------------------------------------------------------------

    def _handle(self, request: Any) -> Any:
        if self.mode != "replay":
            return self._forward_sync(request)
        parsed, canonical = _canonical(_scrubbed_request_body(request.content, request.headers), self.ignore_fields)
        key = (request.method.upper(), request.url.path, canonical)
        with self._lock:
            self._requests_seen += 1
            number = self._requests_seen
            match = next((r for r in self._recordings if not r.used and r.key == key), None)
            if match is not None:
                match.used = True
            slot = self._reserve_locked()
        if match is None:
            return self._miss(slot, request, number, parsed)
        recorded = match.exchange
        headers = {k: v for k, v in recorded.response_headers.items() if k.lower() not in _DROP_ON_REPLAY}
        self._record(slot, request, recorded.status, headers, recorded.response_body)
        return build_response(request, recorded.status, headers, recorded.response_body)

    def _miss(self, slot: int, request: Any, number: int, parsed: Any) -> Any:
        method, path = request.method.upper(), request.url.path
        with self._lock:
            unused = [r for r in self._recordings if not r.used]
        same_route = [r for r in unused if r.key[:2] == (method, path)]
        if not self._recordings:
            detail = "the cassette holds no recordings"
        elif not unused:
            detail = f"all {len(self._recordings)} recordings were already replayed (the agent sent more requests)"
        elif same_route:
            candidate = same_route[0]
            number_in_file = self._recordings.index(candidate) + 1
            difference = _first_difference(candidate.parsed, parsed, "body") or "body: differs"
            detail = f"nearest unused recording is exchange {number_in_file}: {difference}"
        else:
            candidate = unused[0]
            number_in_file = self._recordings.index(candidate) + 1
            recorded = candidate.exchange
            if recorded.method.upper() != method:
                detail = f"next unused recording is exchange {number_in_file}: method: recorded {recorded.method!r} != sent {method!r}"
            else:
                detail = f"next unused recording is exchange {number_in_file}: path: recorded {recorded.path!r} != sent {path!r}"
        message = (
            f"cassette {self.path}: request {number} ({method} {path}) matches no recording: {detail}. "
            f"If the agent's requests changed on purpose, re-record: Cassette({str(self.path)!r}, mode=\"record\"), "
            "or run the CLI with --model record:DIR"
        )
        self._problem(message)
        codec = codec_for(path)
        if codec is not None:
            encoded = codec.encode_error(ProviderError(status=500, message=message, type="cassette_miss"))
            status, headers, body = encoded.status, {**encoded.headers, **_NO_RETRY}, encoded.body
        else:
            status, headers = 500, {"content-type": "application/json", **_NO_RETRY}
            body = json_body({"error": {"message": message, "type": "cassette_miss"}})
        self._record(slot, request, status, headers, body)
        return build_response(request, status, headers, body)

    # -- record / live ----------------------------------------------------------------------------------------------

    def _forward_sync(self, request: Any) -> Any:
        slot = self._reserve()
        response = forward(self.upstream, request)
        return self._observe(slot, request, response)

    async def _ahandle(self, request: Any) -> Any:
        if self.mode == "replay":
            return self._handle(request)
        slot = self._reserve()
        response = await aforward(self.upstream, request)
        return self._observe(slot, request, response)

    def _request_part(self, request: Any) -> Exchange:
        if self.mode == "record":
            values = credential_values(request.headers)
            if values:
                with self._lock:
                    self._secrets |= values
        return super()._request_part(request)

    def _finish_exchange(self, exchange: Exchange) -> Exchange:
        if self.mode != "record":
            return exchange
        with self._lock:
            secrets = frozenset(self._secrets)
        return scrub_exchange(exchange, secrets)

    def _after_fill(self) -> None:
        if self.mode != "record":
            return
        with self._lock:  # one writer at a time, always the full list: the file never goes backwards
            save_exchanges(self.path, [exchange for exchange in self._slots if exchange is not None])

    def close(self) -> None:
        """Close the default upstream this cassette made (a given `upstream` belongs to its owner)."""
        if self._owns_upstream:
            self.upstream.close()

    async def aclose(self) -> None:
        if self._owns_upstream:
            await self.upstream.aclose()
