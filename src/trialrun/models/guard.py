"""The no-network guard: a deterministic run that tries to reach a real host fails loudly, never silently.

The guard patches the socket functions every HTTP stack ends in (name resolution and connect), and puts them back
when nothing needs them any more: `no_network()` and `patched()` hold the patches while they are entered (the runner
holds them for a whole run, the pytest plugin for a test), `install()` holds them until `uninstall()` (the test
suite's whole session); when the last holder lets go, every patched function is the original again, so code that
runs after a trialrun run, or after a trialrun test in a user's pytest session, runs unpatched. Whether a call is
blocked is decided per context: `no_network(label=...)` turns blocking on for the current thread or task and
collects each blocked attempt, because SDKs often swallow the exception (the openai SDK turns it into "Connection
error."); the runner fails the trial from the collected attempts. `block_globally(True)` sets the default for
contexts that never said (the test suite turns it on).

Agents do not stay on one thread: they fan tool calls out to `threading.Thread`s, `ThreadPoolExecutor`s and
`loop.run_in_executor`, and a new thread starts with an empty context. So `install()` also makes a thread inherit
the guard state of the code that started it, and an executor job that of the code that submitted it (the job's
state wins over its worker thread's, since pooled workers outlive the trial that started them). A thread started
while the patches were held keeps its state after they are gone (it is its own context's).

Loopback hosts and unix sockets are allowed: the loopback model endpoint and local test servers use them. A proxy
set in the environment (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY) is not, even on loopback: it reaches real hosts for
its clients.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib
import ipaddress
import os
import socket
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "NetworkBlockedError",
    "install",
    "uninstall",
    "patched",
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
_PROXY_NOTE = (
    "a proxy set in the environment (HTTP_PROXY, HTTPS_PROXY or ALL_PROXY) reaches real hosts for its clients, so it "
    "is blocked even on loopback; unset it for deterministic runs"
)
#: Ports of proxy URLs that do not say: what the URL scheme implies.
_DEFAULT_PROXY_PORTS = {"http": 80, "https": 443, "socks4": 1080, "socks4a": 1080, "socks5": 1080, "socks5h": 1080}


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
#: The functions as they were before the guard patched them: kept after the patches are undone, so a call still
#: inside a patched function on another thread finds its original.
_originals: dict[str, Any] = {}
#: Whether the patches are in place, who holds them: `install()` until `uninstall()`, and how many scoped holders
#: (`no_network`, `patched`) are entered; all under `_install_lock`.
_patches_on = False
_installed = False
_holds = 0
#: Patched functions something else patched again over the guard's own (not restored: that would undo theirs).
_left_in_place: set[str] = set()


def is_blocking() -> bool:
    """Whether a connection to a real host would be blocked in the current context."""
    scope = _scope.get()
    return (scope if scope is not None else _global).block


class no_network:  # noqa: N801 - used as a function: `with no_network(label=...) as attempts:`
    """Block non-loopback connections in this context; entered, it gives the list that collects each blocked
    attempt's message. A plain context manager (not a generator's): the runner enters one around every
    deterministic trial and teardown.

    `label` says who tried, e.g. "case 'read_notes'": it appears as "... from deterministic case 'read_notes'"
    (a label that already starts with "deterministic " is used as is). It holds the patches while entered (see
    `patched`).
    """

    __slots__ = ("_label", "_token")

    def __init__(self, label: str = "code") -> None:
        self._label = label

    def __enter__(self) -> list[str]:
        _hold()
        scope = _Scope(True, self._label)
        self._token = _scope.set(scope)
        return scope.attempts

    def __exit__(self, *exc_info: object) -> None:
        _scope.reset(self._token)
        _release()


class patched:  # noqa: N801 - used as a function: `with patched():`
    """Hold the guard's patches while entered (nothing is blocked by this alone): the first holder puts them in
    place, the last one to leave takes them out, unless `install()` holds them. The runner holds them around a run,
    so its trials' `no_network` find them in place."""

    __slots__ = ()

    def __enter__(self) -> None:
        _hold()

    def __exit__(self, *exc_info: object) -> None:
        _release()


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


def _port_number(port: Any) -> int | None:
    if isinstance(port, bytes):
        port = port.decode("ascii", "replace")
    try:
        return int(port)
    except (TypeError, ValueError):
        return None  # a service name ("https"): cannot be a proxy's numeric port


def _host_text(host: Any) -> str:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return str(host).strip("[]").lower()


_PROXY_VARIABLES = tuple(f"{scheme}_proxy" for scheme in ("http", "https", "all")) + tuple(
    f"{scheme.upper()}_PROXY" for scheme in ("http", "https", "all")
)
_proxy_cache: tuple[tuple[str | None, ...], list[tuple[str, int, str]]] | None = None


def _proxies() -> list[tuple[str, int, str]]:
    """The environment's proxies, read again only when a proxy variable changed (this runs on every guarded
    connection, and `getproxies` alone costs tens of microseconds)."""
    global _proxy_cache
    key = tuple(os.environ.get(name) for name in _PROXY_VARIABLES)
    if _proxy_cache is None or _proxy_cache[0] != key:
        _proxy_cache = (key, _read_proxies())
    return _proxy_cache[1]


def _read_proxies() -> list[tuple[str, int, str]]:
    """(host, port, url) of every proxy configured in the environment (`urllib.request.getproxies`: the
    `<scheme>_proxy` variables, any case; the system settings on macOS and Windows). `no_proxy` is not a proxy."""
    found: list[tuple[str, int, str]] = []
    for scheme, url in urllib.request.getproxies().items():
        if scheme == "no" or not isinstance(url, str) or not url.strip():
            continue
        url = url.strip()
        try:
            parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
            port = parts.port or _DEFAULT_PROXY_PORTS.get(parts.scheme.lower())
        except ValueError:  # a malformed port: the client cannot use that proxy either
            continue
        if parts.hostname and port:
            found.append((parts.hostname.lower(), port, url))
    return found


def _proxy_at(host: Any, port: Any) -> str | None:
    """The URL of the environment's proxy listening at host:port (loopback names and addresses count as one)."""
    number = _port_number(port)
    if number is None:
        return None
    name = _host_text(host)
    for proxy_host, proxy_port, url in _proxies():
        if proxy_port == number and (proxy_host == name or (_is_local(proxy_host) and _is_local(host))):
            return url
    return None


def _check(host: Any, port: Any) -> None:
    scope = _scope.get()
    if scope is None:
        scope = _global
    if not scope.block:
        return
    local = _is_local(host)
    proxy = _proxy_at(host, port) if local else None  # a loopback proxy forwards to real hosts
    if local and proxy is None:
        return
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    who = scope.label if scope.label.startswith("deterministic ") else f"deterministic {scope.label}"
    if proxy is not None:
        message = f"trialrun blocked a network connection to {host}:{port} via proxy {proxy} from {who}: {_PROXY_NOTE}. {_ADVICE}"
    else:
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
    # asyncio resolves names in an executor thread: check here too, in the task, so the task's state decides.
    flags = kwargs.get("flags", 0)
    if not (flags & socket.AI_PASSIVE and host is None):
        _check(host, port)
    return await _originals["loop_getaddrinfo"](self, host, port, *args, **kwargs)


# -- threads and executor jobs carry the guard state of the code that started them ---------------------------------

def _thread_start(self: threading.Thread) -> None:
    """`Thread.start`: the new thread runs with its starter's guard state (a new thread's context is empty)."""
    scope = _scope.get()
    if scope is not None:
        run = self.run

        def run_in_scope() -> None:
            _scope.set(scope)  # the thread's own context: nothing else sees it
            try:
                run()
            finally:
                self.__dict__.pop("run", None)  # the thread and this closure no longer hold each other

        self.run = run_in_scope  # type: ignore[method-assign]
    _originals["thread_start"](self)


def _in_scope(scope: _Scope | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    token = _scope.set(scope)
    try:
        return fn(*args, **kwargs)
    finally:
        _scope.reset(token)


def _executor_submit(self: concurrent.futures.ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any,
                     **kwargs: Any) -> Any:
    """`ThreadPoolExecutor.submit` (and so `map` and `loop.run_in_executor`): the job runs with its submitter's guard
    state, even "not set", which must not fall back to the state of whoever started the pooled worker thread."""
    return _originals["executor_submit"](self, _in_scope, _scope.get(), fn, *args, **kwargs)


def install() -> None:
    """Patch the socket functions, `Thread.start`, `ThreadPoolExecutor.submit` and httpx's transports, and httpx2's
    now if it is imported, else as soon as it is, and keep them patched until `uninstall()` (calling again does
    nothing). Blocking stays off until asked for."""
    global _installed
    with _install_lock:
        _installed = True
        patching = _put_in_place()
    _httpx2(patching)


def uninstall() -> None:
    """Undo `install()`: the original functions are back, unless a run or a `no_network` holds the patches (then
    when the last of them ends)."""
    global _installed
    with _install_lock:
        _installed = False
        if not _holds:
            _take_out()


def _hold() -> None:
    global _holds
    with _install_lock:
        _holds += 1
        patching = _put_in_place()
    _httpx2(patching)


def _release() -> None:
    global _holds
    with _install_lock:
        _holds -= 1
        if not _holds and not _installed:
            _take_out()


def _httpx2(patching: bool) -> None:
    """httpx2's transports patched now if it is imported, else when it is (outside the lock: it may wait for
    another thread's import of httpx2)."""
    if "httpx2" not in _patched and (patching or "httpx2" in sys.modules):
        _patch_when_imported("httpx2")


def _targets() -> list[tuple[str, Any, str, Any]]:
    """(key in `_originals`, owner, attribute, the guard's function) of every function the guard patches."""
    import asyncio.base_events

    return [("loop_getaddrinfo", asyncio.base_events.BaseEventLoop, "getaddrinfo", _loop_getaddrinfo),
            ("getaddrinfo", socket, "getaddrinfo", _getaddrinfo),
            ("create_connection", socket, "create_connection", _create_connection),
            ("connect", socket.socket, "connect", _connect), ("connect_ex", socket.socket, "connect_ex", _connect_ex),
            ("thread_start", threading.Thread, "start", _thread_start),
            ("executor_submit", concurrent.futures.ThreadPoolExecutor, "submit", _executor_submit)]


def _put_in_place() -> bool:
    """The socket functions, `Thread.start`, `ThreadPoolExecutor.submit` and httpx's transports patched, unless
    they are (under the lock); True when this call patched them."""
    global _patches_on
    if _patches_on:
        return False
    for key, owner, name, ours in _targets():
        if key in _left_in_place:  # still ours, under someone else's
            _left_in_place.discard(key)
            continue
        _originals[key] = getattr(owner, name)
        setattr(owner, name, ours)
    _patches_on = True
    try:
        import httpx
    except ImportError:
        pass
    else:
        _patch_transports(httpx)
    return True


def _take_out() -> None:
    """Every patched function back to its original (under the lock)."""
    global _patches_on
    if not _patches_on:
        return
    with _transports_lock:  # no transport is patched after this (see _patch_transports)
        _patches_on = False
    for key, owner, name, ours in _targets():
        if getattr(owner, name) is ours:
            setattr(owner, name, _originals[key])
        else:
            _left_in_place.add(key)
    _unpatch_transports()


# -- httpx's and httpx2's network transports ------------------------------------------------------------------------
# A request sent on a kept-alive connection opens no socket, so the socket patches alone would let a deterministic
# case reuse a connection a live canary opened: the transports check each request too. httpx2 (the official SDKs'
# fork of httpx) is patched when it is imported, not imported to be patched: a run that never uses it (a scripted
# suite) does not pay its import (about 20 ms).

_transports_lock = threading.Lock()  # never held while importing (an import may run on another thread meanwhile)
_patched: dict[str, list[tuple[type, str, Any]]] = {}  # package -> the (class, method, the guard's) patched in it


def _patch_transports(module: Any) -> bool:
    """Check every request of `module`'s (httpx's or httpx2's) network transports, once per package; False when
    its transports are not there (a module still being imported by this very thread), True when they are checked."""
    sync, asynchronous = getattr(module, "HTTPTransport", None), getattr(module, "AsyncHTTPTransport", None)
    if sync is None or asynchronous is None:
        return False
    with _transports_lock:
        if module.__name__ in _patched or not _patches_on:  # already done, or taken out meanwhile
            return True
        done: list[tuple[type, str, Any]] = []
        for cls, name in ((sync, "handle_request"), (asynchronous, "handle_async_request")):
            _originals[f"{cls.__module__}.{cls.__qualname__}.{name}"] = original = getattr(cls, name)
            ours = _checked_send(original, name)
            setattr(cls, name, ours)
            done.append((cls, name, ours))
        _patched[module.__name__] = done
        _remove_finders(module.__name__)
        return True


def _remove_finders(package: str | None) -> None:
    """Take the finders waiting for `package` (None: for any) out of `sys.meta_path`."""
    for finder in [f for f in sys.meta_path if isinstance(f, _PatchOnImport) and package in (None, f.package)]:
        sys.meta_path.remove(finder)


def _unpatch_transports() -> None:
    with _transports_lock:
        for cls, name, ours in (patch for patches in _patched.values() for patch in patches):
            if cls.__dict__.get(name) is ours:  # (else something patched it again over the guard's: left)
                setattr(cls, name, _originals[f"{cls.__module__}.{cls.__qualname__}.{name}"])
        _patched.clear()
        _remove_finders(None)


class _PatchOnImport:
    """Patches a package's transports as soon as its import has run (the first `sys.meta_path` finder, so it sees
    the import first: it asks the other finders for the spec and wraps that spec's own loader's `exec_module`;
    the module keeps its real loader). Removed once the package is patched."""

    def __init__(self, package: str) -> None:
        self.package = package

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != self.package:
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:  # a legacy loader: patched where a holder looks again (see _httpx2)
            return spec

        def patched_exec_module(module: Any) -> None:
            try:
                exec_module(module)
            finally:
                loader.__dict__.pop("exec_module", None)  # the loader as it was
            if module.__name__ == self.package:  # (a loader shared with its submodules, a zip's, runs them here too)
                _patch_transports(module)

        try:
            loader.exec_module = patched_exec_module
        except AttributeError:  # a loader that takes no attributes: see _patch_when_imported
            return spec
        return spec


def _patch_when_imported(package: str) -> None:
    """Patch `package`'s transports now if it is imported (or being imported), else when it is."""
    with _transports_lock:
        if package in _patched or not _patches_on:
            return
        if not any(isinstance(f, _PatchOnImport) and f.package == package for f in sys.meta_path):
            sys.meta_path.insert(0, _PatchOnImport(package))  # first, then look: an import that starts now is seen
    if package in sys.modules:
        try:
            module = importlib.import_module(package)  # waits for an import another thread is running
        except ImportError:
            return
        _patch_transports(module)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _checked_send(original: Any, name: str) -> Any:
    if name == "handle_async_request":
        async def handle_async_request(self: Any, request: Any) -> Any:
            _check(request.url.host, request.url.port or _DEFAULT_PORTS.get(request.url.scheme))
            return await original(self, request)

        return handle_async_request

    def handle_request(self: Any, request: Any) -> Any:
        _check(request.url.host, request.url.port or _DEFAULT_PORTS.get(request.url.scheme))
        return original(self, request)

    return handle_request
