"""`trialrun view`: a local web app over a results folder (Starlette + uvicorn, the `trialrun[view]` extra).

It binds 127.0.0.1 only and reads the folder on every request (a result file is loaded again only when it
changed), so a run saved meanwhile, or one in progress (its journal), shows up without a restart. Pages:

    /                       the runs, newest first, with the suite trend, the compare picker, runs in progress
    /run/<stem>             one run (the HTML report)
    /test/<name>            one test across runs: score and pass@1 chart, config changes, regressions
    /compare?a=<stem>&b=    two runs compared (the compare page of `trialrun compare --html`)
    /diff?test=&a=&b=&trial=  one test's trajectory in two runs, aligned turn by turn, first divergence marked
    /live/<stem>            a run in progress; /api/live/<stem> its progress as JSON (polled by the page)
    /trial/<stem>?test=&trial=  one trial's turns, each with its raw request and response (collapsed), read from
                            the run's exchanges sidecar (results_<stamp>.exchanges.ndjson)

Starlette and uvicorn are imported only here, and this module only when `trialrun view` runs.
"""

from __future__ import annotations

import json
import os
from html import escape
from pathlib import Path
from urllib.parse import quote
from typing import Any

from ._history import History, load_history, read_journal

__all__ = ["create_app", "serve", "MISSING_EXTRA", "SECURITY_HEADERS"]

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


def _json_text(data: Any) -> str:
    """JSON with `<`, `>` and `&` written as escapes: no response of the viewer holds markup it did not make."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def create_app(directory: str | os.PathLike[str]) -> Any:
    """The ASGI app serving `directory`'s history (raises ImportError naming the extra when Starlette is absent).

    Every handler is a plain function, which Starlette runs in its thread pool: a slow file never holds up the
    event loop, so other pages are served meanwhile (and files are read by the safe reader, which never opens a
    FIFO or a device). Everything a page echoes from the request (a path, a query value) is escaped."""
    try:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import HTMLResponse, Response
        from starlette.routing import Route
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc

    from . import compare as comparing
    from .render import history as pages
    from .render.html import comparison_html, report_html

    root = Path(directory)

    def history() -> History:
        return load_history(root)

    def html(text: str, status: int = 200) -> Response:
        return HTMLResponse(text, status_code=status)

    def json_response(data: Any) -> Response:
        return Response(_json_text(data), media_type="application/json")

    def not_found(what: str) -> Response:
        """A 404 saying what was not found: `what` is text (from the request, too), escaped here."""
        return html(pages._page("trialrun · not found", pages._head("trialrun", "Not found", escape(what)), served=True),
                    404)

    def missing_run(h: History, stem: str, otherwise: str = "") -> Response:
        """No run `stem`: why, when a file of that name is there but could not be read (the other runs stay
        browsable from the runs page, which lists it too)."""
        why = next((f"{p.name} could not be read: {reason}" for p, reason in h.skipped.items()
                    if p.name.split(".")[0] == stem), None)
        return not_found(why or otherwise or f"no run {stem} in {root}")

    def index(request: Request) -> Response:
        return html(pages.runs_page(history()))

    def run(request: Request) -> Response:
        h = history()
        entry = h.run(request.path_params["stem"])
        if entry is None:
            return missing_run(h, request.path_params["stem"])
        link = f"/trial/{quote(entry.stem, safe='')}?test={{test}}&trial={{trial}}"
        return html(report_html(entry.report, trial_link=link))

    def trial(request: Request) -> Response:
        from ._exchange_log import read_trial_exchanges, sidecar_path
        from .render.exchanges import trial_page

        stem = request.path_params["stem"]
        h = history()
        entry = h.run(stem)
        if entry is None:
            return missing_run(h, stem)
        name = request.query_params.get("test", "")
        case = next((c for c in entry.report.cases if c.name == name), None)
        if case is None:
            return not_found(f"no test {name!r} in run {entry.stem}")
        try:
            number = int(request.query_params.get("trial", "1"))
        except ValueError:
            number = 0
        chosen = next((t for t in case.trials if t.trial == number), None)
        if chosen is None:
            return not_found(f"test {name!r} has no trial {request.query_params.get('trial', '')} in run {entry.stem}")
        log = read_trial_exchanges(sidecar_path(entry.path), name, number)
        return html(trial_page(entry, name, chosen, log))

    def test(request: Request) -> Response:
        name = request.path_params["name"]
        h = history()
        if name not in h.test_names():
            return not_found(f"no test {name} in the runs of {root}")
        return html(pages.test_page(h, name))

    def two(request: Request, h: History) -> tuple[Any, Any] | Response:
        stems = request.query_params.get("a", ""), request.query_params.get("b", "")
        a, b = h.run(stems[0]), h.run(stems[1])
        if a is None or b is None:
            return missing_run(h, stems[0] if a is None else stems[1], "pick two runs of this folder (a= and b=)")
        return a, b

    def compare_page(request: Request) -> Response:
        h = history()
        pair = two(request, h)
        if isinstance(pair, Response):
            return pair
        a, b = pair
        return html(comparison_html(comparing.compare(a.report, b.report), a.report, b.report))

    def diff(request: Request) -> Response:
        h = history()
        pair = two(request, h)
        if isinstance(pair, Response):
            return pair
        try:
            trial = int(request.query_params.get("trial", "1"))
        except ValueError:
            trial = 1
        return html(pages.diff_page(request.query_params.get("test", ""), *pair, trial=trial))

    def journal(stem: str) -> Path:
        return root / f"{Path(stem).name}.jsonl"

    def live(request: Request) -> Response:
        stem = request.path_params["stem"]
        progress = read_journal(journal(stem))
        if progress is not None and progress.unreadable is not None:
            return not_found(f"{progress.path.name} could not be read: {progress.unreadable}")
        if progress is None:
            h = history()
            if h.run(stem) is not None:
                return Response(status_code=303, headers={"Location": f"/run/{quote(stem, safe='')}"})
            return missing_run(h, stem, f"no run in progress named {stem}")
        return html(pages.live_page(progress))

    def live_api(request: Request) -> Response:
        stem = request.path_params["stem"]
        if (root / f"{Path(stem).name}.json").exists():
            return json_response({"finished": f"/run/{quote(stem, safe='')}"})
        progress = read_journal(journal(stem))
        if progress is None or progress.unreadable is not None:
            return json_response({"gone": True, **({"problems": progress.problems} if progress else {})})
        return json_response(progress.as_json())

    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    # Only this machine's names: a page elsewhere cannot read the results through a DNS-rebound host name.
    hosts = Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])
    return _secured(Starlette(middleware=[hosts], routes=[
        Route("/", index), Route("/run/{stem}", run), Route("/test/{name:path}", test),
        Route("/compare", compare_page), Route("/diff", diff), Route("/live/{stem}", live),
        Route("/api/live/{stem}", live_api), Route("/trial/{stem}", trial),
    ]))


def serve(directory: str | os.PathLike[str], *, port: int = 8765, open_browser: bool = False) -> None:
    """Serve the app on 127.0.0.1:`port` until interrupted; `--open` opens the browser once it listens."""
    try:
        import uvicorn
    except ImportError as exc:
        raise ImportError(MISSING_EXTRA) from exc
    app = create_app(directory)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    url = f"http://127.0.0.1:{port}/"

    original_startup = server.startup

    async def startup(sockets: Any = None) -> None:
        await original_startup(sockets=sockets)
        print(f"trialrun view: serving {directory} at {url} (Ctrl-C to stop)", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)

    server.startup = startup  # type: ignore[method-assign]
    server.run()
