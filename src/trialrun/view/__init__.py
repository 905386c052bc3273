"""`trialrun view`: a local web app over a results folder (Starlette + uvicorn, the `trialrun[view]` extra).

It binds 127.0.0.1 (`--host` another address or name: it is resolved, and unless EVERY address it resolves to is a
loopback one, every route needs the session token; the viewer listens on the address resolved) and reads the folder on
every request (a result file is loaded again only when it changed), so a run saved meanwhile, or one in progress
(its journal), shows up without a restart. Every page has the header of `render/_chrome.py`. Pages:

    /                       the runs, newest first, with the suite trend, the compare picker, runs in progress
    /run/<stem>             one run (the HTML report)
    /test/<name>            one test across runs: score and pass@1 chart, config changes, regressions
    /compare?a=<stem>&b=    two runs compared (the compare page of `trialrun compare --html`)
    /diff?test=&a=&ta=&b=&tb=  one test's trajectory in trial ta of run a and trial tb of run b, aligned step by
                            step by content, first divergence and the verdicts that flipped marked (by default a
                            failing trial beside a passing one)
    /search?q=&failed=1&test=&run=&tag=   trials by commands, tool calls, outputs, failure reasons (filtered);
                            tests by id, title or tag; runs by label, model or date
    POST /grade             the hand-grade form (output quality 0 to 0.5 in steps of 0.05, one trial or all, a
                            comment): the page's session token required; written as `trialrun grade` writes it
    POST /override          a verdict set to pass or fail by hand, with a reason (or the override taken back): the
                            same checks and the same code; these two are the only writes the viewer makes
    /api/runs               the folder's listing state (the runs list reloads when it changes)
    /live/<stem>            a run in progress; /api/live/<stem> its progress as JSON (polled by the page)
    /trial/<stem>?test=&trial=  one trial: its verdicts and how its score was made, the grade form, its turns,
                            each with its raw request and response (collapsed), read from the run's exchanges
                            sidecar (results_<stamp>.exchanges.ndjson)

Starlette and uvicorn are imported only here and in `_view_pages` (the handlers), and these only when
`trialrun view` runs.

May import: everything up to `render`; only the CLI imports it, and only for `trialrun view`.
"""

from __future__ import annotations

import errno
import hmac
import os
import re
import secrets
import socket
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

__all__ = ["create_app", "serve", "PortBusy", "HostUnresolved", "is_loopback", "addresses", "same_origin",
           "MISSING_EXTRA", "SECURITY_HEADERS"]

MISSING_EXTRA = "trialrun view needs the 'view' extra: pip install 'trialrun[view]' (Starlette and uvicorn)"

#: Sent with every response, whatever its status (a 404, the 400 of a foreign host name, a 500 included): no page
#: of the viewer tells another site which page it was left from, none is read as anything but its declared type,
#: and none may be framed by another page. Each HTML page also carries its own Content-Security-Policy (only its
#: inline script and style run, nothing is fetched elsewhere); responses that are not HTML get one that allows
#: nothing at all.
SECURITY_HEADERS = {
    "referrer-policy": "no-referrer",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
_HTML_CSP = "frame-ancestors 'none'"
_OTHER_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"


def _secured(app: Any) -> Any:
    """`app` with SECURITY_HEADERS (and a Content-Security-Policy header) on every HTTP response: the outermost
    layer, so errors Starlette answers itself get them too."""
    names = {*SECURITY_HEADERS, "content-security-policy"}

    async def secured(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode("latin-1").lower() not in names]
                html = any(k.lower() == b"content-type" and v.startswith(b"text/html") for k, v in headers)
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                headers.append((b"content-security-policy", (_HTML_CSP if html else _OTHER_CSP).encode()))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, sending)

    return secured


def _gate(app: Any, token: str) -> Any:
    """`app` behind the session token (a non-loopback `--host`): every request carries it, in the cookie a first
    visit with `?token=` sets, else gets a 403 saying how to get in. The cookie is HttpOnly and SameSite=Strict."""
    cookie = f"trialrun_token={token}".encode()

    async def gated(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        cookies = [c.strip() for c in headers.get(b"cookie", b"").split(b";")]
        if any(hmac.compare_digest(c, cookie) for c in cookies):
            await app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if hmac.compare_digest(query.get("token", [""])[0].encode(), token.encode()):
            rest = urlencode([(k, v) for k, vs in query.items() if k != "token" for v in vs], doseq=True)
            where = same_origin(scope.get("path", "/")) + (f"?{rest}" if rest else "")
            await _answer(send, 303, b"", [(b"location", where.encode()), (b"set-cookie", cookie + b"; HttpOnly; "
                                                                       b"SameSite=Strict; Path=/")])
            return
        await _answer(send, 403, b"This trialrun view needs its token: open the URL `trialrun view` printed "
                                 b"(it ends in ?token=...).\n", [(b"content-type", b"text/plain; charset=utf-8")])

    return gated


def same_origin(path: str) -> str:
    """`path` as a redirect that stays on this site: one leading slash, the rest quoted. `//evil.example/` and
    `/\\evil.example/` are paths here, but a browser reads them as another host in a Location header."""
    return "/" + quote(path, safe="/:@!$&'()*+,;=-._~").lstrip("/")


async def _answer(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _hosts(host: str) -> list[str]:
    """The host names a request may name: this machine's, and the bound address's (a wildcard bind: any, then the
    token is what keeps other sites out). IPv6 addresses in brackets, as a Host header writes them."""
    if host in ("0.0.0.0", "::", ""):
        return ["*"]
    return ["127.0.0.1", "localhost", host if ":" not in host else f"[{host.strip('[]')}]"]


#: A Host header: a name or IPv4 address, or an IPv6 address in brackets; then an optional port.
_HOST_HEADER = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^\[\]:/@\s]+)(?::\d{1,5})?")


def _host_of(header: str) -> str | None:
    """The host a Host header names, lower case, brackets kept (`[::1]:8765` is `[::1]`); None when it is not one."""
    found = _HOST_HEADER.fullmatch(header)
    return found.group(1).lower() if found else None


def _trusted(app: Any, allowed: list[str]) -> Any:
    """`app` answering only requests whose Host header names one of `allowed` ("*": any): a page elsewhere cannot
    read the results through a DNS-rebound name. Read here, not by Starlette's middleware, whose versions before
    1.x cut `[::1]:8765` at its first colon and so refused every request to a viewer bound to `::1`."""
    names = {name.lower() for name in allowed}

    async def trusted(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or "*" in names:
            await app(scope, receive, send)
            return
        header = dict(scope.get("headers", [])).get(b"host", b"").decode("latin-1")
        if _host_of(header) in names:
            await app(scope, receive, send)
            return
        await _answer(send, 400, b"Invalid host header\n", [(b"content-type", b"text/plain; charset=utf-8")])

    return trusted


def create_app(directory: str | os.PathLike[str], *, host: str = "127.0.0.1", token: str | None = None,
               require_token: bool = False) -> Any:
    """The ASGI app serving `directory`'s history (raises ImportError naming the extra when Starlette is absent).

    `token` is the session's write token (the grade form's; made here when not given); with `require_token` (a
    non-loopback `host`) every page needs it too. The app's token is `app.token`."""
    try:
        from starlette.applications import Starlette
        from starlette.routing import Route
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    from ._pages import Pages

    token = token or secrets.token_urlsafe(24)
    pages = Pages(Path(directory), token)

    def unknown(request: Any, exc: Any) -> Any:
        return pages.not_found(f"no page {request.url.path} here")

    app: Any = Starlette(exception_handlers={404: unknown}, routes=[
        Route("/", pages.index), Route("/run/{stem}", pages.run), Route("/test/{name:path}", pages.test),
        Route("/compare", pages.compare), Route("/diff", pages.diff), Route("/live/{stem}", pages.live),
        Route("/api/live/{stem}", pages.live_api), Route("/api/runs", pages.runs_api), Route("/trial/{stem}", pages.trial),
        Route("/search", pages.search), Route("/grade", pages.grade, methods=["POST"]),
        Route("/override", pages.override, methods=["POST"]),
    ])
    routes = [route.path for route in app.routes]
    if require_token:
        app = _gate(app, token)
    secured = _secured(_trusted(app, _hosts(host)))  # only this machine's names
    secured.token = token
    secured.routes = routes
    return secured


class PortBusy(OSError):
    """The port is taken (another `trialrun view`, another server): said with the port and what to do."""


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise PortBusy(exc.errno, f"port {port} on {host} is already in use (another trialrun view?); "
                                      f"pick another with --port, e.g. --port {port + 1}") from None
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


class HostUnresolved(OSError):
    """`--host` names nothing this machine can resolve: said with the name and why."""


def addresses(host: str) -> list[str]:
    """Every address `host` (a name or an address) resolves to, IPv4 first; HostUnresolved when it resolves to none."""
    import ipaddress

    try:
        return [str(ipaddress.ip_address(host.strip("[]")).compressed)]  # an address: itself, no name service
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise HostUnresolved(errno.EINVAL, f"--host {host}: cannot be resolved ({exc})") from None
    unique = list(dict.fromkeys(str(info[4][0]).split("%")[0] for info in found))
    if not unique:  # pragma: no cover - getaddrinfo raises instead
        raise HostUnresolved(errno.EINVAL, f"--host {host}: resolves to no address")
    return sorted(unique, key=lambda a: ipaddress.ip_address(a).version)


def is_loopback(host: str) -> bool:
    """Whether `host` is this machine only: EVERY address it resolves to is a loopback one (127.0.0.0/8, ::1). A
    name that looks local but resolves elsewhere (`127.x` pointing at 0.0.0.0) is not; nor is one that does not
    resolve."""
    import ipaddress

    try:
        return all(ipaddress.ip_address(address).is_loopback for address in addresses(host))
    except HostUnresolved:
        return False


def serve(directory: str | os.PathLike[str], *, port: int = 8765, host: str = "127.0.0.1",
          open_browser: bool = False) -> None:
    """Serve the app on `host`:`port` until interrupted (raises PortBusy when the port is taken); `--open` opens
    the browser once it listens. A non-loopback host needs the token on every page: the printed URL carries it."""
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    import ipaddress

    resolved = addresses(host)  # resolved once: the address checked is the address bound
    open_to_others = not all(ipaddress.ip_address(address).is_loopback for address in resolved)
    bound = resolved[0]
    app = create_app(directory, host=bound if bound in ("0.0.0.0", "::") else host, require_token=open_to_others)
    sock = _listen(bound, port)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/" + (f"?token={app.token}" if open_to_others else "")

    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets=sockets)
        if open_to_others:
            where = host if host.strip("[]") == bound else f"{host} ({bound})"
            print(f"trialrun view: WARNING: serving on {where}, reachable from other machines; every page needs the "
                  "token in this URL (anyone who has it can read the results and grade them)", flush=True)
        print(f"trialrun view: serving {directory} at {url} (Ctrl-C to stop)", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    server.startup = startup  # type: ignore[method-assign]
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
