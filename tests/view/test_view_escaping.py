"""`trialrun view` echoes nothing of a request as markup: every route, asked with markup in every part of its URL
(a path segment, an extra segment, a query name, each query value, a fragment that reaches the server encoded as
%23), answers with that markup as text, on every status (200, 303, 404), and every response carries
Referrer-Policy, X-Content-Type-Options and a Content-Security-Policy (HTML pages keep their own, hash-pinned).
Checked twice: the bytes of each response (no element or attribute of the payload parses out of them), and each
page opened in headless Chromium (no element of the payload in the DOM, no navigation, no script ran: no dialog,
no console error, no request anywhere else). Before: the 404 page of `/run/<img ...>` and `/test/<meta ...>` held
the markup, and the meta refresh took the browser to another site."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import _browser
import pytest
import starlette  # noqa: F401  # the view extra is in the test extra: these tests run in CI, never skip
from _view_folders import TEST, make_runs, stems

MARK = "data-trpwn"
#: Markup for each context a value can land in: element text, a double- or single-quoted attribute, a meta refresh
#: (which no Content-Security-Policy stops), a title or textarea. All but the last have no "/" in them, so they
#: reach handlers through a path segment too (an encoded "/" is a "/" to the router: another path).
PAYLOADS = [
    f"<img src=x onerror=alert(1) {MARK}=1>",
    f'<meta http-equiv="refresh" content="0;url=https:\\\\trialrun-elsewhere.invalid" {MARK}=2>',
    f'"><img src=x onerror=alert(3) {MARK}=3>',
    f"'><svg onload=alert(4) {MARK}=4>",
    f"</title></textarea></script><iframe src=javascript:alert(5) {MARK}=5>",
]
#: The first four at once, for the browser.
ALL = "".join(PAYLOADS[:4])


def _routes(first: str, second: str) -> dict[str, tuple[str, str | None, dict[str, str]]]:
    """route name -> (path with {} where its parameter goes, the parameter's valid value, valid query)."""
    return {
        "runs list": ("/", None, {}),
        "run": ("/run/{}", second, {}),
        "test": ("/test/{}", TEST, {}),
        "compare": ("/compare", None, {"a": first, "b": second}),
        "diff": ("/diff", None, {"test": TEST, "a": first, "b": second, "trial": "1"}),
        "diff of two trials": ("/diff", None, {"test": TEST, "a": first, "ta": "1", "b": second, "tb": "2"}),
        "search": ("/search", None, {"q": "read"}),
        "runs api": ("/api/runs", None, {}),
        "live": ("/live/{}", second, {}),
        "live api": ("/api/live/{}", second, {}),
        "trial": ("/trial/{}", second, {"test": TEST, "trial": "1"}),
        "no such route": ("/nowhere", None, {}),
    }


def _url(path: str, value: str | None, query: dict[str, str]) -> str:
    where = path.format(quote(value, safe="")) if value is not None else path
    return where + (f"?{urlencode(query)}" if query else "")


def urls(first: str, second: str, payload: str) -> list[tuple[str, str]]:
    """(what is hostile, URL) for every route and every part of its URL."""
    out: list[tuple[str, str]] = []
    encoded = quote(payload, safe="")
    for name, (path, value, query) in _routes(first, second).items():
        if value is not None:
            out.append((f"{name}: path segment", _url(path, payload, query)))
            out.append((f"{name}: fragment in the path (%23)", _url(path, value + "#" + payload, query)))
        else:
            out.append((f"{name}: path segment", _url(path.rstrip("/") + "/" + encoded, None, query)))
        out.append((f"{name}: extra segment", _url(path, value, {}).split("?")[0] + "/" + encoded
                    + (f"?{urlencode(query)}" if query else "")))
        out.append((f"{name}: query name", _url(path, value, {**query, payload: "1"})))
        out.append((f"{name}: unknown query value", _url(path, value, {**query, "q": payload})))
        for key in query:
            out.append((f"{name}: query value {key}", _url(path, value, {**query, key: payload})))
            out.append((f"{name}: fragment in query value {key} (%23)",
                        _url(path, value, {**query, key: query[key] + "#" + payload})))
    return out


class _Elements(HTMLParser):
    """Every start tag of a document with its attributes, as a browser's tokenizer sees them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag


def _markup_in(body: str) -> list[str]:
    """What of a payload parses out of `body` as markup: its marked elements, event handlers, a meta refresh."""
    parser = _Elements()
    parser.feed(body)
    parser.close()
    found = []
    for tag, attrs in parser.tags:
        if MARK in attrs or any(name.startswith("on") for name in attrs):
            found.append(f"<{tag} {attrs}>")
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            found.append(f"<meta {attrs}>")
    return found


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("escaping"))


@pytest.fixture(scope="module")
def client(results: Path) -> Any:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    return TestClient(create_app(results), base_url="http://127.0.0.1", raise_server_exceptions=False,
                      follow_redirects=False)


def _check_headers(response: Any, url: str) -> None:
    headers = response.headers
    assert headers.get("referrer-policy") == "no-referrer", url
    assert headers.get("x-content-type-options") == "nosniff", url
    assert "frame-ancestors 'none'" in headers.get("content-security-policy", ""), url
    if headers.get("content-type", "").startswith("text/html"):
        assert '<meta http-equiv="Content-Security-Policy" content="default-src &#x27;none&#x27;' in response.text, url
    else:
        assert "default-src 'none'" in headers["content-security-policy"], url


@pytest.mark.parametrize("payload", PAYLOADS, ids=["img-onerror", "meta-refresh", "double-quote", "single-quote",
                                                   "rawtext-ends"])
def test_no_route_echoes_markup_from_any_part_of_its_url(results: Path, client: Any, payload: str) -> None:
    first, second = stems(results)
    statuses: dict[int, int] = {}
    handled = 0  # path segments that reached a page's handler (an HTML answer, not the router's plain 404)
    for where, url in urls(first, second, payload):
        response = client.get(url)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        handled += where.endswith(": path segment") and response.headers["content-type"].startswith("text/html")
        assert response.status_code < 500, (where, url, response.text[:1000])
        body = response.text
        assert payload not in body, (where, url)
        assert _markup_in(body) == [], (where, url, _markup_in(body))
        if not response.headers.get("content-type", "").startswith("text/html"):
            assert "<" not in body, (where, url, body[:500])  # JSON and plain text: no markup at all
        location = response.headers.get("location", "")
        assert "<" not in location and '"' not in location, (where, location)
    assert statuses.get(404, 0) > 20 and statuses.get(200, 0) > 10, statuses  # the pages were made, not just 404s
    assert handled >= (1 if "/" in payload else 4), handled  # run, test, live, trial (only test's takes a "/")


def test_every_response_has_the_security_headers(results: Path, client: Any) -> None:
    first, second = stems(results)
    for _, url in urls(first, second, PAYLOADS[0]) + [("", "/"), ("", f"/run/{second}"), ("", f"/live/{second}")]:
        _check_headers(client.get(url), url)


def test_a_foreign_host_a_wrong_method_and_a_crash_get_the_headers_too(client: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from trialrun.render import history

    for response in (client.get("/", headers={"host": "evil.example"}), client.post("/")):
        assert response.status_code in (400, 405)
        _check_headers(response, "/")

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("a page that breaks")

    monkeypatch.setattr(history, "runs_page", broken)
    crashed = client.get("/")
    assert crashed.status_code == 500 and "a page that breaks" not in crashed.text
    _check_headers(crashed, "/")


def test_in_chromium_no_url_part_injects_markup_navigates_or_runs_script(results: Path, context: Any) -> None:
    from _history_runs import served  # tests/render is on sys.path (conftest): the app served as there

    first, second = stems(results)
    pages = urls(first, second, ALL)
    # and real fragments, which only the page's own script sees (the run page reads #case=NAME)
    pages += [("run: real fragment", f"/run/{second}#case={quote(ALL)}"), ("run: raw fragment", f"/run/{second}#{ALL}"),
              ("compare: real fragment", f"/compare?a={first}&b={second}#case={quote(ALL)}")]
    checked = 0
    with served(results) as base:
        navigated: list[str] = []

        def watch(page: Any) -> None:
            page.on("framenavigated", lambda frame: navigated.append(frame.url) if frame == page.main_frame else None)

        opened = _browser.open_url(context, base + "/", watch=watch)  # one page, every URL opened in it in turn
        page = opened.page
        try:
            for where, url in pages:
                navigated.clear()
                for seen in (opened.console_errors, opened.page_errors, opened.dialogs, opened.requests):
                    seen.clear()
                page.goto(base + url, wait_until="load")
                page.wait_for_timeout(100)  # a meta refresh of 0 s would have fired by now
                assert len(navigated) <= 1 and all(u.startswith(base) for u in navigated), (where, navigated)
                assert page.url.startswith(base), (where, page.url)
                try:
                    injected = page.evaluate(f"document.querySelectorAll('[{MARK}]').length")
                    handlers = page.evaluate(
                        "Array.from(document.querySelectorAll('*')).filter(e => Array.from(e.attributes)"
                        ".some(a => a.name.startsWith('on'))).length")
                except Exception as exc:  # noqa: BLE001 - playwright's Error: the page went elsewhere meanwhile
                    raise AssertionError(f"{where}: the page navigated away ({exc})") from None
                assert injected == 0 and handlers == 0, (where, url)
                problems = [p for p in opened.problems if not _status_note(p)]
                assert problems == [], (where, url, problems)
                checked += 1
        finally:
            page.close()
    assert checked == len(pages) >= 60


def _status_note(problem: str) -> bool:
    """Chromium's own console line for a page answered with 404 (the viewer's not-found page): no problem."""
    return problem.startswith("console error: Failed to load resource: the server responded with a status of 404")
