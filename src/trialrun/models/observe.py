"""Observing any httpx transport: record its exchanges (streams included) without changing what the agent sees.

This is how the trajectory of an agent that talks to some other transport (a real provider, a local server, a
custom mock) is read: wrap the transport, hand the wrapper to the agent's httpx client.
"""

from __future__ import annotations

from typing import Any

from ._base import ModelKind, ModelTransport, aforward, forward, kind_of

__all__ = ["ObservedTransport", "observe"]


class ObservedTransport(ModelTransport):
    """Wraps a sync and/or async httpx transport and records every exchange that passes through it.

    A streamed response is handed to the caller unbuffered; its chunks are copied as they are read and the exchange
    is recorded when the stream ends or is closed.
    """

    def __init__(self, inner: Any) -> None:
        super().__init__()
        if not (hasattr(inner, "handle_request") or hasattr(inner, "handle_async_request")):
            raise TypeError(f"ObservedTransport wraps an httpx transport, got {type(inner).__name__}")
        self.inner = inner

    def __repr__(self) -> str:
        return f"ObservedTransport({self.inner!r})"

    @property
    def model_kind(self) -> ModelKind:
        """The kind of the transport it observes."""
        return kind_of(self.inner)

    def _handle(self, request: Any) -> Any:
        if not hasattr(self.inner, "handle_request"):
            raise TypeError(f"{type(self.inner).__name__} is an async-only transport; use it with httpx.AsyncClient")
        response = forward(self.inner, request)
        return self._observe(self._reserve(), request, response)

    async def _ahandle(self, request: Any) -> Any:
        if not hasattr(self.inner, "handle_async_request"):
            raise TypeError(f"{type(self.inner).__name__} is a sync-only transport; use it with httpx.Client")
        response = await aforward(self.inner, request)
        return self._observe(self._reserve(), request, response)

    def close(self) -> None:
        if hasattr(self.inner, "close"):
            self.inner.close()

    async def aclose(self) -> None:
        if hasattr(self.inner, "aclose"):
            await self.inner.aclose()
        elif hasattr(self.inner, "close"):
            self.inner.close()


def observe(transport: Any) -> ModelTransport:
    """`transport` itself when it already records (every trialrun model does), else an `ObservedTransport` of it."""
    if isinstance(transport, ModelTransport):
        return transport
    return ObservedTransport(transport)
