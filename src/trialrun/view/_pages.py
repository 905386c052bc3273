"""The handlers of `trialrun view` (one method a route): read the folder, pick the page, answer. Imported only by
`trialrun.view` (Starlette is imported here, so never by `import trialrun`).

Every handler but the grade form's is a plain function, which Starlette runs in its thread pool: a slow file
never holds up the event loop (and files are read by the safe readers, which never open a FIFO or a device).
Everything a page echoes from the request (a path, a query value) is escaped by the renderers.
"""

from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from ..report._history import History, RunEntry, diff_pair, load_history, read_journal

__all__ = ["Pages", "json_text"]

#: The largest grade form body read (a comment of MAX_COMMENT characters, escaped, fits many times over).
MAX_FORM_BYTES = 64 * 1024


def json_text(data: Any) -> str:
    """JSON with `<`, `>` and `&` written as escapes: no response of the viewer holds markup it did not make."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _q(text: str) -> str:
    return quote(text, safe="")


def _int(value: str | None, default: int | None) -> int | None:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


class Pages:
    """The viewer's routes over one results folder; `token` is this session's write token (the grade form's)."""

    def __init__(self, root: Path, token: str) -> None:
        self.root = root
        self.token = token

    # -- helpers ---------------------------------------------------------------------------------------------
    def history(self) -> History:
        return load_history(self.root)

    @staticmethod
    def html(text: str, status: int = 200) -> Response:
        return HTMLResponse(text, status_code=status)

    @staticmethod
    def json(data: Any) -> Response:
        return Response(json_text(data), media_type="application/json")

    def not_found(self, what: str, status: int = 404) -> Response:
        """A styled page saying what was not found (or, with another status, what was refused), linking home."""
        from ..render._search import not_found_page

        title = {404: "Not found", 400: "Bad request", 403: "Refused", 409: "Not graded", 413: "Too large",
                 507: "Not written"}
        return self.html(not_found_page(str(self.root), what, title.get(status, "Not found")), status)

    def missing_run(self, h: History, stem: str, otherwise: str = "") -> Response:
        """No run `stem`: why, when a file of that name is there but could not be read."""
        why = next((f"{p.name} could not be read: {reason}" for p, reason in h.skipped.items()
                    if p.name.split(".")[0] == stem), None)
        return self.not_found(why or otherwise or f"no run {stem} in {self.root}")

    def two(self, request: Request, h: History) -> tuple[RunEntry, RunEntry] | Response:
        stems = request.query_params.get("a", ""), request.query_params.get("b", "")
        a, b = h.run(stems[0]), h.run(stems[1])
        if a is None or b is None:
            return self.missing_run(h, stems[0] if a is None else stems[1], "pick two runs of this folder (a= and b=)")
        return a, b

    def state(self) -> str:
        """What the runs list reloads on: the saved result files and the journals without one (names only)."""
        names = sorted(p.name for p in self.root.glob("results_*.json")) if self.root.is_dir() else []
        live = sorted(p.name for p in self.root.glob("results_*.jsonl")
                      if not p.with_suffix(".json").exists()) if self.root.is_dir() else []
        return f"{len(names)}:{names[-1] if names else ''}:{','.join(live)}"

    # -- pages -----------------------------------------------------------------------------------------------
    def index(self, request: Request) -> Response:
        from ..render import history as pages

        return self.html(pages.runs_page(self.history(), state=self.state()))

    def runs_api(self, request: Request) -> Response:
        return self.json({"state": self.state()})

    def search(self, request: Request) -> Response:
        from ..render._search import search_page
        from ..report._search import Filters

        params = request.query_params
        filters = Filters(failed=params.get("failed") == "1", test=params.get("test", ""), run=params.get("run", ""),
                          tag=params.get("tag", ""))
        return self.html(search_page(self.history(), params.get("q", ""), filters))

    def run(self, request: Request) -> Response:
        from ..render._chrome import site_nav, when
        from ..render.html import report_html

        h = self.history()
        entry = h.run(request.path_params["stem"])
        if entry is None:
            return self.missing_run(h, request.path_params["stem"])
        link = f"/trial/{_q(entry.stem)}?test={{test}}&trial={{trial}}"
        nav = site_nav(str(self.root), [(when(entry.report.started_at), None)])
        flaky = f"/diff?test={{test}}&a={_q(entry.stem)}&ta={{ta}}&b={_q(entry.stem)}&tb={{tb}}"
        return self.html(report_html(entry.report, trial_link=link, links={"hl": "/test/{test}", "fl": flaky}, nav=nav))

    def trial(self, request: Request) -> Response:
        from ..render.exchanges import trial_page
        from ..report.exchanges import read_trial_exchanges, sidecar_path

        stem = request.path_params["stem"]
        h = self.history()
        entry = h.run(stem)
        if entry is None:
            return self.missing_run(h, stem)
        name = request.query_params.get("test", "")
        case = next((c for c in entry.report.cases if c.name == name), None)
        if case is None:
            return self.not_found(f"no test {name!r} in run {entry.stem}")
        number = _int(request.query_params.get("trial", "1"), 0)
        chosen = next((t for t in case.trials if t.trial == number), None)
        if chosen is None:
            return self.not_found(f"test {name!r} has no trial {request.query_params.get('trial', '')} in run {entry.stem}")
        log = read_trial_exchanges(sidecar_path(entry.path), name, chosen.trial)
        return self.html(trial_page(entry, name, chosen, log, token=self.token))

    def test(self, request: Request) -> Response:
        from ..render import history as pages

        name = request.path_params["name"]
        h = self.history()
        if name not in h.test_names():
            return self.not_found(f"no test {name} in the runs of {self.root}")
        return self.html(pages.test_page(h, name, token=self.token))

    def compare(self, request: Request) -> Response:
        from ..render._chrome import site_nav
        from ..render._compare_links import changed_tests
        from ..render.html import comparison_html
        from ..report import compare as comparing

        h = self.history()
        pair = self.two(request, h)
        if isinstance(pair, Response):
            return pair
        a, b = pair
        comparison = comparing.compare(a.report, b.report)
        nav = site_nav(str(self.root), [("compare", None)])
        links = {"hl": "/test/{test}", "dl": f"/diff?test={{test}}&a={_q(a.stem)}&b={_q(b.stem)}"}
        return self.html(comparison_html(comparison, a.report, b.report, links=links, nav=nav,
                                         extra=changed_tests(comparison, a, b)))

    def diff(self, request: Request) -> Response:
        from ..render._diff_page import diff_page

        h = self.history()
        pair = self.two(request, h)
        if isinstance(pair, Response):
            return pair
        a, b = pair
        name = request.query_params.get("test", "")
        if not any(c.name == name for e in (a, b) for c in e.report.cases):
            return self.not_found(f"no test {name!r} in run {a.stem} or run {b.stem}")
        default = diff_pair(name, a, b)
        both = _int(request.query_params.get("trial"), None)  # the old single trial= applies to both sides
        ta = _int(request.query_params.get("ta"), both) or (default.before[1] if default.before[0] == a.stem else 1)
        tb = _int(request.query_params.get("tb"), both) or default.after[1]
        return self.html(diff_page(name, a, ta, b, tb, runs=h.runs))

    def journal(self, stem: str) -> Path:
        return self.root / f"{Path(stem).name}.jsonl"

    def live(self, request: Request) -> Response:
        from ..render import history as pages

        stem = request.path_params["stem"]
        progress = read_journal(self.journal(stem))
        if progress is not None and progress.unreadable is not None:
            return self.not_found(f"{progress.path.name} could not be read: {progress.unreadable}")
        if progress is None:
            h = self.history()
            if h.run(stem) is not None:
                return Response(status_code=303, headers={"Location": f"/run/{_q(stem)}"})
            return self.missing_run(h, stem, f"no run in progress named {stem}")
        return self.html(pages.live_page(progress))

    def live_api(self, request: Request) -> Response:
        stem = request.path_params["stem"]
        if (self.root / f"{Path(stem).name}.json").exists():
            return self.json({"finished": f"/run/{_q(stem)}"})
        progress = read_journal(self.journal(stem))
        if progress is None or progress.unreadable is not None:
            return self.json({"gone": True, **({"problems": progress.problems} if progress else {})})
        return self.json(progress.as_json())

    # -- the one write ---------------------------------------------------------------------------------------
    async def grade(self, request: Request, override: bool = False) -> Response:
        """The hand-grade form (and, `override`, the verdict-override form): checked (token, same origin, a form
        body of bounded size), then written by the code `trialrun grade` runs, in the thread pool."""
        # A browser sends Origin: null from a page with Referrer-Policy no-referrer (every page here): the token is
        # what proves the form came from this viewer; a named origin must still be this one.
        origin = request.headers.get("origin")
        if origin not in (None, "null") and origin.split("://", 1)[-1] != request.headers.get("host", ""):
            return self.not_found("a grade must be posted from this viewer's own page", 403)
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM_BYTES:
                return self.not_found("the grade form was too large", 413)
        form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
        if not hmac.compare_digest(form.get("token", "").encode(), self.token.encode()):
            return self.not_found("the grade form's token is missing or not this session's: reload the page", 403)
        return await run_in_threadpool(self._write, form, override)

    async def override(self, request: Request) -> Response:
        """The verdict-override form: the same checks as the grade form's, then `override_by_hand`."""
        return await self.grade(request, override=True)

    def _write(self, form: dict[str, str], override: bool) -> Response:
        """A hand grade (output quality) or an override, written by the code `trialrun grade` runs."""
        from ..expect.rubric import hand_quality
        from ..report._hand_grade import grade_by_hand, override_by_hand, who
        from ..report.store import ResultFileError, ResultsStore

        h = self.history()
        entry = h.run(form.get("run", ""))
        if entry is None:
            return self.missing_run(h, form.get("run", ""))
        trial = _int(form.get("trial"), None) if form.get("trial", "all") != "all" else None
        try:
            if override:
                verdict = {"pass": True, "fail": False, "clear": None}.get(form.get("verdict", ""), "")
                if verdict == "":
                    return self.not_found("an override sets a verdict to pass or fail (or clears it)", 400)
                override_by_hand(ResultsStore(self.root), entry.path, form.get("test", ""), form.get("grader", ""),
                                 verdict, by=who(), reason=form.get("reason", ""), via="view", trial=trial)  # type: ignore[arg-type]
            else:
                try:
                    quality = hand_quality(float(form.get("quality", "")))
                except ValueError as exc:
                    return self.not_found(str(exc).replace("could not convert string to float", "not a number"), 400)
                grade_by_hand(ResultsStore(self.root), entry.path, form.get("test", ""), quality, by=who(),
                              comment=form.get("comment", ""), via="view", trial=trial)
        except ResultFileError as exc:  # a link, a file outside the folder, a full disk: said, nothing changed
            return self.not_found(str(exc), 507 if getattr(exc, "errno", None) is not None else 409)
        except (KeyError, ValueError, TypeError) as exc:  # TypeError: a hand-edited file's verdict of the wrong shape
            return self.not_found(str(exc.args[0] if exc.args else exc), 409)
        back = form.get("back", "/")
        if not back.startswith("/") or back.startswith("//") or any(not 33 <= ord(c) <= 126 or c == "\\" for c in back):
            back = "/"
        return Response(status_code=303, headers={"Location": back + ("#judgement" if override else "#grade")})
