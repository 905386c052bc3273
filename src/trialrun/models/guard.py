"""The no-network guard: a deterministic run that tries to reach a real host fails loudly, never silently.

`install()` patches the socket functions every HTTP stack ends in (name resolution and connect). Whether a call is
blocked is decided per context: `no_network(label=...)` turns blocking on for the current thread or task (and the
threads and tasks started with a copy of its context) and collects each blocked attempt, because SDKs often swallow
the exception (the openai SDK turns it into "Connection error."); the runner fails the trial from the collected
attempts. `block_globally(True)` sets the default for contexts that never said (the test suite turns it on).
Loopback hosts and unix sockets are always allowed: the loopback model endpoint and local test servers use them.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NetworkBlockedError",
    "install",
    "uninstall",
    "no_network",
    "allow_network",
    "block_globally",
    "is_blocking",
]

_ADVICE = (
    "Deterministic cases must not reach the network: use a ScriptedModel or a Cassette, or mark the case "
    "mode='live_canary' and run it with include_live_canary=True (trialrun run --include-live-canary, "
    "pytest --trialrun-include-live-canary)."
)
_GLOBAL_LABEL = "code (trialrun's no-network guard is on for this whole process, e.g. in a test suite)"


class NetworkBlockedError(RuntimeError):
    """A connection to a non-loopback host was attempted while the no-network guard was on."""


@dataclass
class _Scope:
    block: bool
    label: str = ""
    attempts: list[str] = field(default_factory=list)


_scope: ContextVar[_Scope | None] = ContextVar("trialrun_network_scope", default=None)
_global = _Scope(block=False, label=_GLOBAL_LABEL)
_install_lock = threading.Lock()
_originals: dict[str, Any] = {}


def is_blocking() -> bool:
    """Whether a connection to a real host would be blocked in the current context."""
    scope = _scope.get()
    return (scope if scope is not None else _global).block


@contextlib.contextmanager
def no_network(label: str = "code") -> Iterator[list[str]]:
    """Block non-loopback connections in this context; yields the list that collects each blocked attempt's message.

    `label` says who tried, e.g. "case 'read_notes'": it appears as "... from deterministic case 'read_notes'"
    (a label that already starts with "deterministic " is used as is).
    """
    install()
    scope = _Scope(block=True, label=label)
    token = _scope.set(scope)
    try:
        yield scope.attempts
    finally:
        _scope.reset(token)


@contextlib.contextmanager
def allow_network() -> Iterator[None]:
    """Allow real connections in this context even when blocking is on globally (live canaries, recording)."""
    token = _scope.set(_Scope(block=False))
    try:
        yield
    finally:
        _scope.reset(token)


def block_globally(on: bool = True) -> None:
    """Set the process default: with True, every context that did not call no_network/allow_network is blocked."""
    install()
    _global.block = bool(on)
    if not on:
        _global.attempts.clear()


# -- the checks -----------------------------------------------------------------------------------------------------

_LOCAL_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost", "ip6-loopback"})


def _is_local(host: Any) -> bool:
    if host is None:
        return True  # getaddrinfo(None, port): the local/passive address
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).strip("[]").lower()
    if host in ("", "0.0.0.0", "::") or host in _LOCAL_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def _check(host: Any, port: Any) -> None:
    scope = _scope.get()
    if scope is None:
        scope = _global
    if not scope.block or _is_local(host):
        return
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    who = scope.label if scope.label.startswith("deterministic ") else f"deterministic {scope.label}"
    message = f"trialrun blocked a network connection to {host}:{port} from {who}. {_ADVICE}"
    scope.attempts.append(message)
    raise NetworkBlockedError(message)


def _check_address(family: Any, address: Any) -> None:
    if family == getattr(socket, "AF_UNIX", object()) or not isinstance(address, tuple) or len(address) < 2:
        return  # unix sockets and non-IP families are local by nature
    _check(address[0], address[1])


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    flags = kwargs.get("flags", args[3] if len(args) > 3 else 0)
    if not (flags & socket.AI_PASSIVE and host is None):
        _check(host, port)
    return _originals["getaddrinfo"](host, port, *args, **kwargs)


def _create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(address, tuple) and len(address) >= 2:
        _check(address[0], address[1])
    return _originals["create_connection"](address, *args, **kwargs)


def _connect(self: socket.socket, address: Any) -> Any:
    _check_address(self.family, address)
    return _originals["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> Any:
    _check_address(self.family, address)
    return _originals["connect_ex"](self, address)


async def _loop_getaddrinfo(self: Any, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    # asyncio resolves names in an executor thread, which does not see the task's context: check here, in the task.
    flags = kwargs.get("flags", 0)
    if not (flags & socket.AI_PASSIVE and host is None):
        _check(host, port)
    return await _originals["loop_getaddrinfo"](self, host, port, *args, **kwargs)


def install() -> None:
    """Patch the socket functions (once; calling again does nothing). Blocking stays off until asked for."""
    import asyncio.base_events

    with _install_lock:
        if _originals:
            return
        _originals["loop_getaddrinfo"] = asyncio.base_events.BaseEventLoop.getaddrinfo
        asyncio.base_events.BaseEventLoop.getaddrinfo = _loop_getaddrinfo  # type: ignore[method-assign]
        _originals["getaddrinfo"] = socket.getaddrinfo
        _originals["create_connection"] = socket.create_connection
        _originals["connect"] = socket.socket.connect
        _originals["connect_ex"] = socket.socket.connect_ex
        socket.getaddrinfo = _getaddrinfo  # type: ignore[assignment]
        socket.create_connection = _create_connection  # type: ignore[assignment]
        socket.socket.connect = _connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign]


def uninstall() -> None:
    """Restore the original socket functions (for tools that must leave the process as they found it)."""
    import asyncio.base_events

    with _install_lock:
        if not _originals:
            return
        asyncio.base_events.BaseEventLoop.getaddrinfo = _originals.pop("loop_getaddrinfo")  # type: ignore[method-assign]
        socket.getaddrinfo = _originals.pop("getaddrinfo")
        socket.create_connection = _originals.pop("create_connection")
        socket.socket.connect = _originals.pop("connect")  # type: ignore[method-assign]
        socket.socket.connect_ex = _originals.pop("connect_ex")  # type: ignore[method-assign]
