"""The trial page of `trialrun view`: one trial's trajectory, every conversation's turns in order, and under each
turn the raw request and response it was read from (collapsed), from the run's exchanges sidecar (`report.exchanges`);
and the files the trial left in its workdir (`_files`).

Server-rendered, no script: every text from the run is escaped here, and the page is scrubbed once more as a whole
(the sidecar is scrubbed when written; a page never trusts a file). A turn links to its exchange by
`Turn.exchange`; exchanges that are no turn (an error answer that was retried, a request that is not a model call)
are listed after the conversations, so nothing is hidden. What cannot be shown (no sidecar, a line cut short by a
killed run, a body cut by the size cap) is said where it would have been.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import urlencode, urlsplit

from .._scrub import scrub_text
from ..report._history import RunEntry
from ..report.exchanges import TrialExchanges
from ..report.results import TrialResult
from ..trajectory import Conversation, Turn
from ._chrome import _head, _page, crumb_case, crumb_run, site_nav
from ._mcp_parts import is_mcp_record, joined_calls, mcp_note, mcp_section
from .history import _q, _when

__all__ = ["trial_page", "exchange_details"]

_CSS = """
.conv { margin: 18px 0; }
ol.turns { list-style: none; padding: 0; margin: 0; }
ol.turns > li.turn { background: var(--surface); border: 1px solid var(--border); border-radius: 8px; padding: 10px 12px; margin: 10px 0; }
li.turn .turn-head { margin: 0 0 6px; font-weight: 600; }
li.turn pre, details.raw-exchange pre { white-space: pre-wrap; overflow-wrap: anywhere; margin: 4px 0; padding: 8px 10px; background: var(--code-bg); border: 1px solid var(--border-soft); border-radius: 6px; max-height: 40em; overflow: auto; }
details.raw-exchange { margin-top: 8px; border-top: 1px dashed var(--border); padding-top: 6px; }
details.raw-exchange > summary { cursor: pointer; color: var(--muted); font-size: 0.9rem; }
.raw-part { margin: 8px 0; min-width: 0; }
.raw-part h5 { margin: 6px 0 4px; }
table.headers { border-collapse: collapse; font-size: 0.82rem; width: 100%; table-layout: fixed; }
table.headers th, table.headers td { text-align: left; padding: 2px 6px; border-bottom: 1px solid var(--border-soft); overflow-wrap: anywhere; vertical-align: top; }
table.headers th { width: 34%; font-weight: 600; }
.cut { font-size: 0.85rem; }
.no-link { font-size: 0.85rem; }
details.conv-fold > summary { cursor: pointer; font-size: 1.1rem; font-weight: 600; margin: 8px 0; }
a.exchange-link { font-weight: normal; font-size: 0.85rem; margin-left: 8px; }
p.mcp-call { font-size: 0.85rem; margin: 4px 0; }
@media (min-width: 761px) {
#judgement table.verdicts { width: 100%; border-collapse: collapse; font-size: 0.9rem; }
#judgement table.verdicts th, #judgement table.verdicts td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--border-soft); vertical-align: top; overflow-wrap: anywhere; }
#judgement table.verdicts tr.bad { background: var(--fail-bg); }
#judgement table.verdicts th { white-space: nowrap; }
#judgement table.verdicts td:nth-child(1), #judgement table.verdicts td:nth-child(2), #judgement table.verdicts td:nth-child(5) { white-space: nowrap; }
#judgement table.verdicts td:nth-child(3) { width: 32%; }
#judgement table.verdicts td:nth-child(3) code { font-size: 0.8rem; }
}
"""

#: A turn's "raw exchange N" link points INSIDE that exchange's <details> (its request part): following a fragment
#: opens the details around its target (the HTML standard's ancestor-revealing), so the link needs no script.


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _text(value: str) -> str:
    """Element text, escaped (`<`, `>`, `&`; quotes need no escape outside attributes, and JSON is full of them)."""
    return escape(value, quote=False)


def _headers(headers: Any) -> str:
    if not isinstance(headers, dict) or not headers:
        return '<p class="muted">(no headers)</p>'
    rows = "".join(f"<tr><th>{escape(str(k))}</th><td><code>{escape(str(v))}</code></td></tr>" for k, v in headers.items())
    return f'<table class="headers">{rows}</table>'


def _assembled(url: str, stream: str) -> str:
    """The message a streamed response adds up to, read by the codec of its API (what the trajectory holds)."""
    from ..wire import codec_for

    codec = codec_for(urlsplit(url).path)
    if codec is None:
        return ""
    try:
        response = codec.decode_response(stream.encode("utf-8", "surrogatepass"), True)
    except Exception as exc:  # noqa: BLE001 - a sidecar is a file: whatever it holds, the page shows
        return f'<p class="muted">The stream could not be assembled into a message: {escape(str(exc))}</p>'
    message: dict[str, Any] = {"text": response.text,
                               "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.raw_arguments or c.arguments}
                                              for c in response.tool_calls]}
    for key in ("model", "stop_reason", "id"):
        if getattr(response, key):
            message[key] = getattr(response, key)
    if response.usage is not None:
        message["usage"] = {"input_tokens": response.usage.input_tokens, "output_tokens": response.usage.output_tokens,
                            "cached_input_tokens": response.usage.cached_input_tokens}
    if response.notes:
        message["notes"] = response.notes
    return f'<h6>Assembled message</h6><pre class="assembled">{_text(_pretty(message))}</pre>'


def _body(part: dict[str, Any], url: str, side: str) -> str:
    if "body" in part:
        return f'<pre class="json body" data-part="{side}">{_text(_pretty(part["body"]))}</pre>'
    if "stream" in part:
        stream = str(part["stream"])
        events = stream.count("\n\n")
        return (_assembled(url, stream)
                + f'<details class="raw-events"><summary>Raw server-sent events ({events})</summary>'
                  f'<pre class="stream body" data-part="{side}">{_text(stream)}</pre></details>')
    if "body_text" in part:
        return f'<pre class="text body" data-part="{side}">{_text(str(part["body_text"]))}</pre>'
    if "body_base64" in part:
        size = len(str(part["body_base64"])) * 3 // 4
        return f'<p class="muted">{size:,} bytes that are not text (kept as base64 in the sidecar).</p>'
    return '<p class="muted">(empty body)</p>'


def exchange_details(record: dict[str, Any], *, label: str = "Raw request and response") -> str:
    """One exchange as a collapsed `<details>`: request (method, URL, headers, body) and response (status, headers,
    body; a stream as its assembled message and its raw events), with what the size cap cut. A record that cannot
    be shown (a hand-edited file) is a note saying why, never an error page."""
    try:
        return _details(record, label)
    except Exception as exc:  # noqa: BLE001 - a sidecar is a file: whatever it holds, the page renders
        return (f'<p class="alert warn no-link">Exchange {escape(str(record.get("n")))} cannot be shown: the exchanges '
                f"file holds something unexpected there ({escape(type(exc).__name__)}: {escape(str(exc)[:200])}).</p>")


def _details(record: dict[str, Any], label: str) -> str:
    request: dict[str, Any] = record["request"] if isinstance(record.get("request"), dict) else {}
    response: dict[str, Any] = record["response"] if isinstance(record.get("response"), dict) else {}
    number = record.get("n")
    method, url = str(request.get("method", "?")), str(request.get("url", ""))
    status = response.get("status", "?")
    cuts: dict[str, Any] = record["cut"] if isinstance(record.get("cut"), dict) else {}

    def cut(side: str) -> str:
        return f'<p class="alert warn cut">{escape(side)} body: {escape(str(cuts[side]))}</p>' if side in cuts else ""

    anchor = f' id="exchange-{number}"' if isinstance(number, int) and not isinstance(number, bool) else ""
    return (f'<details class="raw-exchange" data-exchange="{escape(str(number))}"><summary>{escape(label)} · exchange '
            f"{escape(str(number))} · <code>{escape(method)} {escape(urlsplit(url).path)}</code> → {escape(str(status))}"
            f"{' · cut' if cuts else ''}</summary>"
            f'<div class="raw-part request"{anchor}><h5>Request</h5><p><code class="request-line">{escape(method)} {escape(url)}'
            f"</code></p>{_headers(request.get('headers'))}{cut('request')}{_body(request, url, 'request')}</div>"
            f'<div class="raw-part response"><h5>Response</h5><p><code class="status-line">HTTP {escape(str(status))}'
            f"</code></p>{_headers(response.get('headers'))}{cut('response')}{_body(response, url, 'response')}</div>"
            "</details>")


def _turn(turn: Turn, index: int, records: dict[int, dict[str, Any]], log: TrialExchanges,
          joined: dict[int, Any] | None = None) -> str:
    meta = " · ".join(x for x in (turn.model or "", f"{turn.usage.input_tokens:,} in / {turn.usage.output_tokens:,} out tokens"
                                  if turn.usage else "") if x)
    link = (f'<a class="exchange-link" href="#exchange-{turn.exchange}">raw exchange {turn.exchange}</a>'
            if turn.exchange is not None and turn.exchange in records else "")
    parts = [f'<p class="turn-head">Turn {index}{f" <span class=muted>· {escape(meta)}</span>" if meta else ""}{link}</p>']
    if turn.text.strip():
        parts.append(f'<pre class="reply">{escape(turn.text)}</pre>')
    results = {r.call_id: r for r in turn.tool_results if r.call_id}
    for call in turn.tool_calls:
        args = call.raw_arguments if call.raw_arguments is not None else _pretty(call.arguments)
        result = results.get(call.id) if call.id else None
        parts.append(f'<div class="call"><strong class="tool-name">{escape(call.name)}</strong><pre>{escape(args)}</pre>'
                     + ("" if result is None else f'<pre class="{"error" if result.is_error else "result"}">→ '
                        f"{escape(result.content[:4000])}</pre>") + mcp_note(call, joined or {}) + "</div>")
    if turn.exchange is None:
        parts.append('<p class="muted no-link">This turn is not linked to an exchange (the agent reported its own '
                     "trajectory, or the run was made before turns recorded theirs); the trial's exchanges are listed "
                     "under Other exchanges.</p>")
    elif turn.exchange in records:
        parts.append(exchange_details(records[turn.exchange]))
    else:
        why = "see the note at the top" if not log.found else "the exchanges file has no exchange of that number"
        parts.append(f'<p class="alert warn no-link">Read from exchange {turn.exchange}, which cannot be shown '
                     f"({escape(why)}).</p>")
    return f'<li class="turn" data-turn="{index}">{"".join(parts)}</li>'


def _conversation(conversation: Conversation, number: int, records: dict[int, dict[str, Any]], log: TrialExchanges,
                  joined: dict[int, Any] | None = None) -> str:
    if conversation.role == "main":
        title = "Main conversation"
    else:
        kind = "Side request" if conversation.role == "side" else "Sub-agent"
        title = f"{kind} {number}" + (f": {conversation.prompt[:80]}" if conversation.prompt else "")
    turns = "".join(_turn(turn, i, records, log, joined) for i, turn in enumerate(conversation.turns, start=1))
    inner = f'<ol class="turns">{turns}</ol>' if turns else '<p class="muted">(no turns)</p>'
    if conversation.role == "main":
        return f'<section class="conv" data-role="main"><h2>{escape(title)}</h2>{inner}</section>'
    count = len(conversation.turns)
    return (f'<section class="conv" data-role="{escape(conversation.role)}"><details class="conv-fold"><summary>'
            f'{escape(title)} ({count} turn{"s" if count != 1 else ""})</summary>{inner}</details></section>')


def _links(entry: RunEntry, name: str, trial: TrialResult) -> str:
    """The way back (the case in its run, the test's history) and on (the run's other trials of this test, a diff
    against a trial of this run that came out the other way)."""
    from ._diff_page import diff_href, trial_href

    case = next((c for c in entry.report.cases if c.name == name), None)
    trials = list(case.trials) if case is not None else []
    others = " ".join(f'<a class="trial-page-link" data-trial="{t.trial}" href="{escape(trial_href(entry.stem, name, t.trial))}">'
                      f'{t.trial}{" ✓" if t.passed else " ✗"}</a>' for t in trials if t.trial != trial.trial)
    other_way = next((t for t in trials if t.passed != trial.passed), None)
    diff = ""
    if other_way is not None:
        passing, failing = (other_way, trial) if other_way.passed else (trial, other_way)
        diff = (f'<a id="diff-other-way" href="{escape(diff_href(name, entry.stem, passing.trial, entry.stem, failing.trial))}">'
                f"Diff passing trial {passing.trial} against failing trial {failing.trial}</a>")
    return (f'<p class="page-links"><a id="case-link" href="/run/{_q(entry.stem)}#case={_q(name)}">← {escape(name)} in the run</a>'
            f'<a id="history-link" href="/test/{_q(name)}">History of this test</a>'
            + (f"<span>Other trials: {others}</span>" if others else "") + diff + "</p>")


def trial_page(entry: RunEntry, name: str, trial: TrialResult, log: TrialExchanges, *, token: str = "") -> str:
    """Trial `trial` of test `name` in a run: how it was judged (every verdict and why), the hand-grade form, its
    turns, each with its raw exchange (collapsed by default; side and sub conversations folded)."""
    from ._files import files_html
    from ._grade_form import grade_form, hand_grade_note, override_form, trial_quality
    from ._verdicts import judgement

    trajectory = trial.trajectory
    records = log.by_number()
    meta = (f"run <code>{escape(entry.stem)}</code> ({escape(_when(entry))}) · trial {trial.trial} · "
            f"{'PASS' if trial.passed else 'FAIL'} · score {'n/a' if trial.score is None else f'{trial.score:.2f}'} · "
            f"{len(records)} exchange{'s' if len(records) != 1 else ''} kept")
    note = ""
    if log.problem:
        note = f'<p class="alert warn" id="exchanges-note">Raw exchanges: {escape(log.problem)}</p>'
    if log.notes:  # exchanges of the wrong shape, left out: each named by line and field
        note += ('<div class="alert warn" id="exchanges-left-out"><p>Exchanges the file holds in a form that cannot be '
                 "shown:</p><ul>" + "".join(f"<li>{escape(n)}</li>" for n in log.notes) + "</ul></div>")
    joined = joined_calls(trajectory)  # the MCP servers' side of the model's calls, under each call
    conversations = "".join(_conversation(c, i, records, log, joined) for i, c in enumerate(trajectory.conversations))
    linked = {turn.exchange for turn in trajectory.all_turns if turn.exchange is not None}
    mcp = [records[n] for n in sorted(records) if is_mcp_record(records[n])]
    others = [records[n] for n in sorted(records) if n not in linked and not is_mcp_record(records[n])]
    other = ""
    if others:
        other = ('<section class="conv" id="other-exchanges"><h2>Other exchanges</h2><p class="muted">Exchanges no turn '
                 "was read from: error answers (a retried 429), requests that are not model calls, or turns the agent "
                 "reported itself.</p>" + "".join(exchange_details(r, label="Exchange") for r in others) + "</section>")
    graded = hand_grade_note(trial)
    back = f"/trial/{_q(entry.stem)}?{urlencode({'test': name, 'trial': trial.trial})}"
    form = (grade_form([entry], name, token, back=back, current=trial_quality(trial), trial=trial.trial)
            + override_form(entry, name, trial, token, back=back)) if token else ""
    body = (_head("trialrun · trial", f"{name} · trial {trial.trial}", meta, "passed" if trial.passed else "failed")
            + f'<main class="wrap" id="main">{_links(entry, name, trial)}{note}{graded}{judgement(trial)}{form}'
            + files_html(trial)
            + (f'<p class="muted">Prompt: {escape(trajectory.prompt)}</p>' if trajectory.prompt else "")
            + conversations + mcp_section(trajectory, mcp, exchange_details) + other + "</main>")
    nav = site_nav(str(entry.path.parent), [crumb_run(entry.stem, _when(entry)), crumb_case(entry.stem, name),
                                            (f"trial {trial.trial}", None)])
    from ._search import MARK_JS  # (a search hit's link asks the page to mark it: ?hl=TEXT)

    return _page(f"trialrun · {name} · trial {trial.trial}", scrub_text(body), served=True, css=_CSS, nav=nav,
                 script=MARK_JS)
