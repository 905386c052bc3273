"""The common base of every model transport: one object for sync and async httpx clients, recording each exchange.

Why one class for both: an agent may build `httpx.Client(transport=model)` in one place and
`httpx.AsyncClient(transport=model)` in another (or the SDKs' `httpx2` clients); the trajectory must be read from
all of its traffic in arrival order, so the exchanges live in one list guarded by one lock.

Responses are built with the httpx flavour of the request (`httpx` or its successor `httpx2`, which the official
SDKs use internally): an `httpx2.Client` insists on `httpx2` byte streams, an `httpx.Client` on `httpx` ones.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from types import ModuleType
from typing import Any, Literal

import httpx

from .._scrub import REDACTED, SENSITIVE_HEADERS, add_header_credentials, credential_values
from ..trajectory import Trajectory
from ..wire import decode_trajectory
from ..wire._encoding import undo_content_encoding
from ..wire._types import Exchange, WireError

__all__ = [
    "ModelTransport",
    "ModelKind",
    "MODEL_KINDS",
    "DETERMINISTIC_KINDS",
    "kind_of",
    "SENSITIVE_HEADERS",
    "REDACTED",
    "flavour",
    "build_response",
    "redact_headers",
    "forward",
    "aforward",
    "transport_errors",
]


# Bodies are recorded decoded, so the headers that describe the bytes on the wire no longer apply. A body that could
# not be decoded keeps its content-encoding (see wire/_encoding.py): encoded bytes never lose the header saying so.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})


def flavour(request: Any) -> ModuleType:
    """The httpx package (`httpx` or `httpx2`) whose classes the request, and so its response, must use."""
    if type(request).__module__.startswith("httpx2"):
        return sys.modules["httpx2"]
    return httpx


def build_response(request: Any, status: int, headers: dict[str, str], body: bytes) -> Any:
    """A complete in-memory response of the request's flavour."""
    return flavour(request).Response(status, headers=headers, content=body, request=request)


def redact_headers(headers: Any, found: set[tuple[str, str]] | None = None) -> dict[str, str]:
    """Request headers (httpx `Headers`) as a plain dict with credential values replaced, for anything kept;
    the replaced (name, value) pairs go to `found` when given (to scrub them wherever else they turn up).

    Reads the raw byte pairs (much cheaper than `Headers.items()`); repeated headers are joined with ", ".
    """
    out: dict[str, str] = {}
    for raw_name, raw_value in headers.raw:
        name = raw_name.decode("latin-1")
        if name.lower() in SENSITIVE_HEADERS:
            value = REDACTED
            if found is not None:
                found.add((name, raw_value.decode("latin-1")))
        else:
            value = raw_value.decode("latin-1")
        out[name] = f"{out[name]}, {value}" if name in out else value
    return out


def _transport_flavour(transport: Any) -> ModuleType | None:
    """The httpx package a transport's requests and responses belong to; None when it takes either (trialrun's)."""
    if isinstance(transport, ModelTransport):
        return None
    for cls in type(transport).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("httpx", "httpx2"):
            return sys.modules[root]
    return None


def _convert_request(request: Any, module: ModuleType) -> Any:
    return module.Request(
        request.method, str(request.url), headers=request.headers.multi_items(), content=request.content,
        extensions=request.extensions,
    )


def _convert_response(response: Any, request: Any, asynchronous: bool) -> Any:
    """The same response in the request's flavour, its stream bridged unread (so live streams stay live)."""
    module = flavour(request)
    sync_tee, async_tee = _tee_classes(module)
    stream = (async_tee if asynchronous else sync_tee)(response.stream, None)
    return module.Response(
        response.status_code, headers=response.headers.multi_items(), stream=stream,
        extensions=response.extensions, request=request,
    )


def transport_errors() -> tuple[type[Exception], ...]:
    """Connection-level errors of both httpx flavours (a bridged transport raises its own flavour's)."""
    errors: list[type[Exception]] = [httpx.TransportError]
    if "httpx2" in sys.modules:
        errors.append(sys.modules["httpx2"].TransportError)
    return tuple(errors)


def forward(transport: Any, request: Any) -> Any:
    """`transport.handle_request(request)`, bridging httpx and httpx2 when the transport is of the other flavour
    (an `httpx.MockTransport` upstream behind the anthropic SDK's httpx2 client, for instance)."""
    target = _transport_flavour(transport)
    if target is None or target is flavour(request):
        return transport.handle_request(request)
    response = transport.handle_request(_convert_request(request, target))
    return _convert_response(response, request, asynchronous=False)


async def aforward(transport: Any, request: Any) -> Any:
    """The async `forward`."""
    target = _transport_flavour(transport)
    if target is None or target is flavour(request):
        return await transport.handle_async_request(request)
    response = await transport.handle_async_request(_convert_request(request, target))
    return _convert_response(response, request, asynchronous=True)


def _recorded_response_headers(headers: Any, *, decoded: bool = True) -> dict[str, str]:
    """Response headers as kept in a recording; `decoded=False` when the body is kept exactly as served (its
    content-encoding, if any, still applies)."""
    drop = _WIRE_HEADERS if decoded else _FRAMING_HEADERS
    return {
        name: (REDACTED if name.lower() in SENSITIVE_HEADERS else value)
        for name, value in headers.items()
        if name.lower() not in drop
    }


def _decode_content(headers: Any, raw: bytes) -> tuple[bytes, dict[str, str]]:
    """Bytes teed off the wire with their content-encoding undone -> (body, headers to keep): the encoding header
    when it could not be undone (br without `brotli`), so the recording never holds encoded bytes unlabelled."""
    encoding = headers.get("content-encoding", "").strip()
    try:
        return undo_content_encoding(raw, encoding), {}
    except WireError:
        return raw, {"content-encoding": encoding}


def _left_encoded(module: ModuleType, headers: Any) -> dict[str, str]:
    """The content-encoding to keep for a body httpx has already read: httpx passes codings it has no decoder for
    (br without `brotli`) through undecoded, so those bytes keep the header that says what they are."""
    encoding = headers.get("content-encoding", "").strip()
    decoders = getattr(getattr(module, "_decoders", None), "SUPPORTED_DECODERS", ("identity", "gzip", "deflate"))
    left = [c.strip() for c in encoding.split(",") if c.strip() and c.strip().lower() not in decoders]
    return {"content-encoding": ", ".join(left)} if left else {}


_log = logging.getLogger("trialrun.models")

#: What kind of model a transport is, as a trial records it (`TrialResult.models`) and compare reads it: a script
#: (`ScriptedModel`), a recording replayed (`Cassette` in replay mode), the real provider (`LiveModel`, a cassette
#: recording from it, any transport that reaches the network), or a transport trialrun cannot name ("other").
ModelKind = Literal["scripted", "replay", "live", "other"]
MODEL_KINDS: tuple[ModelKind, ...] = ("scripted", "replay", "live", "other")
#: The kinds that answer the same request the same way every time: between runs on them every change is real.
DETERMINISTIC_KINDS: frozenset[str] = frozenset({"scripted", "replay"})


def kind_of(transport: Any) -> ModelKind:
    """The `ModelKind` of any httpx transport: a trialrun model says its own; httpx's (or httpx2's) network
    transport is "live"; a transport of your own may say what it is with a `model_kind` attribute (a mock that
    answers from a table: "scripted"); anything else is "other" (compare treats it as live)."""
    declared = getattr(transport, "model_kind", None)
    if declared in MODEL_KINDS:
        return declared  # type: ignore[no-any-return]
    for cls in type(transport).__mro__:
        if cls.__module__.partition(".")[0] in ("httpx", "httpx2") and cls.__name__ in ("HTTPTransport",
                                                                                        "AsyncHTTPTransport"):
            return "live"
    return "other"


def _logged(transport: Any, request: Any, response: Any) -> Any:
    """Each model request at debug level: transport, method, path (never the query, where a key may travel, nor a
    header) and status."""
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug("%s: %s %s -> %s", type(transport).__name__, request.method, request.url.path,
                   getattr(response, "status_code", "?"))
    return response


class ModelTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """An httpx transport (sync and async) that records every exchange passing through it.

    - `exchanges`: the recorded `Exchange`s in arrival order (a copy; streamed ones appear when their stream closes).
    - `trajectory()`: the `Trajectory` the wire codecs read from them.
    - `problems`: what must fail a trial even if the agent swallowed the HTTP error (script exhausted, cassette
      miss, unknown API path).

    Subclasses implement `_handle(request)` (the request body is already read); the async entry point runs the same
    code unless a subclass does real I/O and overrides `_ahandle`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._slots: list[Exchange | None] = []
        self._problems: list[str] = []
        self._notes: list[str] = []
        self._credentials: set[tuple[str, str]] = set()

    # -- public ---------------------------------------------------------------------------------------------------

    @property
    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return [exchange for exchange in self._slots if exchange is not None]

    @property
    def model_kind(self) -> ModelKind:
        """What kind of model this is (`ModelKind`); a transport of another kind says "other"."""
        return "other"

    @property
    def problems(self) -> list[str]:
        with self._lock:
            return list(self._problems)

    @property
    def credentials(self) -> frozenset[bytes]:
        """The credential values the requests carried in their (redacted) credential headers, without a `Bearer `
        prefix: what a writer of the exchanges also removes from bodies and URLs (an agent that echoes its key)."""
        return frozenset(credential_values(list(self._credentials)))

    def trajectory(self) -> Trajectory:
        """The trajectory read from the exchanges recorded so far (and the notes no exchange shows)."""
        trajectory = decode_trajectory(self.exchanges)
        if self._notes:
            with self._lock:
                trajectory.notes.extend(self._notes)
        return trajectory

    def note(self, message: str) -> None:
        """Something the trajectory must say that no recorded exchange shows (the endpoint refused a request)."""
        with self._lock:
            self._notes.append(message)

    # -- httpx entry points ---------------------------------------------------------------------------------------

    def handle_request(self, request: Any) -> Any:
        request.read()
        return _logged(self, request, self._handle(request))

    async def handle_async_request(self, request: Any) -> Any:
        await request.aread()
        return _logged(self, request, await self._ahandle(request))

    def _handle(self, request: Any) -> Any:
        raise NotImplementedError

    async def _ahandle(self, request: Any) -> Any:
        return self._handle(request)

    # -- recording ------------------------------------------------------------------------------------------------

    def _problem(self, message: str) -> None:
        with self._lock:
            self._problems.append(message)

    def _reserve_locked(self) -> int:
        """Reserve the next slot (caller holds the lock): the exchange keeps its arrival position."""
        self._slots.append(None)
        return len(self._slots) - 1

    def _reserve(self) -> int:
        with self._lock:
            return self._reserve_locked()

    def _finish_exchange(self, exchange: Exchange) -> Exchange:
        """Hook: what is stored for a completed exchange (a recording cassette scrubs and saves here)."""
        return exchange

    def _fill(self, slot: int, exchange: Exchange) -> None:
        exchange = self._finish_exchange(exchange)
        with self._lock:
            self._slots[slot] = exchange
        self._after_fill()

    def _after_fill(self) -> None:
        """Hook called after an exchange is stored (outside the lock)."""

    def _redacted(self, headers: Any) -> dict[str, str]:
        found: set[tuple[str, str]] = set()
        kept = redact_headers(headers, found)
        if found and not found <= self._credentials:
            self._credentials.update(found)  # one C call: atomic under the GIL
            # Process-wide from now on: every writer removes them wherever the agent or the model echoes them.
            add_header_credentials(found, source=f"a request header seen by {type(self).__name__}")
        return kept

    def _request_part(self, request: Any) -> Exchange:
        return Exchange(
            method=request.method,
            url=str(request.url),
            request_headers=self._redacted(request.headers),
            request_body=request.content,
        )

    def _record(self, slot: int, request: Any, status: int, headers: dict[str, str], body: bytes) -> None:
        """Record an exchange whose response this transport built itself."""
        exchange = self._request_part(request)
        exchange.status = status
        exchange.response_headers = _recorded_response_headers(headers, decoded=False)
        exchange.response_body = body
        self._fill(slot, exchange)

    def _observe(self, slot: int, request: Any, response: Any) -> Any:
        """Record a response that came from elsewhere, teeing its body when it is still a live stream.

        A streamed body is not buffered before the caller gets it: chunks are copied as the caller reads them, and
        the exchange is recorded when the stream ends or is closed.
        """
        exchange = self._request_part(request)
        exchange.status = response.status_code
        exchange.response_headers = _recorded_response_headers(response.headers)
        module = flavour(response)
        try:
            body = response.content
        except module.ResponseNotRead:
            pass
        else:
            exchange.response_body = body
            exchange.response_headers.update(_left_encoded(module, response.headers))
            self._fill(slot, exchange)
            return response

        def done(raw: bytes) -> None:
            exchange.response_body, kept = _decode_content(response.headers, raw)
            exchange.response_headers.update(kept)
            self._fill(slot, exchange)

        sync_tee, async_tee = _tee_classes(module)
        if isinstance(response.stream, module.AsyncByteStream) and not isinstance(response.stream, module.SyncByteStream):
            response.stream = async_tee(response.stream, done)
        elif isinstance(response.stream, module.SyncByteStream) and not isinstance(response.stream, module.AsyncByteStream):
            response.stream = sync_tee(response.stream, done)
        else:  # a stream usable both ways (rare for a live response): tee whichever way it is read
            response.stream = _both_tee(module)(response.stream, done)
        return response


# -- teeing streams -----------------------------------------------------------------------------------------------

_TEES: dict[str, tuple[type, type]] = {}
_BOTH_TEES: dict[str, type] = {}


class _TeeState:
    """Chunks seen so far, and a once-only completion callback."""

    __slots__ = ("chunks", "done", "finished")

    def __init__(self, done: Callable[[bytes], None] | None) -> None:
        self.chunks: list[bytes] | None = [] if done is not None else None
        self.done = done
        self.finished = False

    def finish(self) -> None:
        if not self.finished and self.done is not None:
            self.finished = True
            self.done(b"".join(self.chunks or ()))


def _tee_classes(module: ModuleType) -> tuple[type, type]:
    """Sync and async tee stream classes deriving from `module`'s byte stream bases (httpx and httpx2 differ).

    A tee without a `done` callback only bridges: it passes chunks through without keeping them.
    """
    cached = _TEES.get(module.__name__)
    if cached is not None:
        return cached

    class SyncTee(module.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, done: Callable[[bytes], None] | None) -> None:
            self._inner = inner
            self._state = _TeeState(done)

        def __iter__(self) -> Iterator[bytes]:
            chunks = self._state.chunks
            for chunk in self._inner:
                if chunks is not None:
                    chunks.append(chunk)
                yield chunk
            self._state.finish()

        def close(self) -> None:
            try:
                self._inner.close()
            finally:
                self._state.finish()

    class AsyncTee(module.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, inner: Any, done: Callable[[bytes], None] | None) -> None:
            self._inner = inner
            self._state = _TeeState(done)

        async def __aiter__(self) -> AsyncIterator[bytes]:
            chunks = self._state.chunks
            async for chunk in self._inner:
                if chunks is not None:
                    chunks.append(chunk)
                yield chunk
            self._state.finish()

        async def aclose(self) -> None:
            try:
                await self._inner.aclose()
            finally:
                self._state.finish()

    _TEES[module.__name__] = (SyncTee, AsyncTee)
    return SyncTee, AsyncTee


def _both_tee(module: ModuleType) -> type:
    cached = _BOTH_TEES.get(module.__name__)
    if cached is not None:
        return cached
    sync_tee, async_tee = _tee_classes(module)

    class BothTee(sync_tee, async_tee):  # type: ignore[valid-type,misc]
        pass

    _BOTH_TEES[module.__name__] = BothTee
    return BothTee


class NetworkClient:
    """A mixin for transports that reach the real network: one real httpx(2) transport per flavour and mode,
    created on first use and closed with this one."""

    _lock: Any

    def _init_network(self) -> None:
        self._defaults: dict[tuple[str, bool], Any] = {}

    def _default_network(self, request: Any, asynchronous: bool) -> Any:
        module = flavour(request)
        key = (module.__name__, asynchronous)
        with self._lock:
            transport = self._defaults.get(key)
            if transport is None:
                transport = module.AsyncHTTPTransport() if asynchronous else module.HTTPTransport()
                self._defaults[key] = transport
        return transport

    def close(self) -> None:
        for transport in list(self._defaults.values()):
            if hasattr(transport, "close"):
                transport.close()

    async def aclose(self) -> None:
        for transport in list(self._defaults.values()):
            if hasattr(transport, "aclose"):
                await transport.aclose()
            elif hasattr(transport, "close"):
                transport.close()
