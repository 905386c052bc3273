"""The self-contained HTML report of a run or of a comparison: one file, inline CSS and JS, no network.

A report is opened from CI artifacts, mail attachments and laptops offline, so the page fetches nothing (a
Content-Security-Policy with hashes of the inline script and style enforces it). A 1,000-case x 10-trial run must
open fast, so the page builds its DOM lazily from data embedded once as JSON: one page of the case table at a
time, a case's trials only when it is expanded, a trial's timeline only when that is expanded. The data is packed
lean (`_Packer`): no nulls or empty values, every string of a trajectory or verdict stored once in a table, identical
trajectories stored once, texts longer than `MAX_TEXT` characters capped (the JSON results file keeps them whole).
The summary (and on the compare page the aggregate deltas and the config diff) is rendered here, in Python, so it
reads without JavaScript.

    from trialrun.render.html import report_html, comparison_html
    Path("report.html").write_text(report_html(report), encoding="utf-8")
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from html import escape
from importlib import resources
from typing import Any

from .._scrub import scrub_text
from ..expect._base import Verdict
from ..report import metrics
from ..report._history import flaky_pair
from ..report._why import failed_by
from ..report.compare import Comparison, flatten_config
from ..report.results import CaseResult, RunReport, TrialError, TrialResult, jsonable
from ..trajectory import Denial, ToolCall, ToolResult, Trajectory, Turn, Usage
from ._cells import run_k, shows_pass_pow_k, sub_scores_text
from ._html_parts import _badge, _money, _noscript, _rate, _seconds, _stat, _value, _when
from .text import conversation_title, partly_run

__all__ = ["report_html", "comparison_html", "report_payload", "comparison_payload", "MAX_TEXT", "PAYLOAD_VERSION"]

#: Longest text (tool result, model text, output, reason) kept whole in the page; longer ones are cut with a note.
MAX_TEXT = 20_000
#: Version of the embedded data's layout (read by the page's script, documented in `_Packer`).
PAYLOAD_VERSION = 1
DATA_ELEMENT_ID = "trialrun-data"


# -- public API ---------------------------------------------------------------------------------------------
def report_html(report: RunReport, *, title: str | None = None, trial_link: str | None = None,
                links: dict[str, str] | None = None, nav: str = "") -> str:
    """The run page: summary, config snapshot, a sortable and filterable case table, trials and trajectories.

    `trial_link`: a URL with `{test}` and `{trial}` that each expanded trial links to (`trialrun view` passes its
    trial page, which shows the raw exchanges; the static report has none). `links` ("hl": a test's history with
    `{test}`, "dl": a test's diff, "fl": a diff of two trials of this run with `{test}`, `{ta}` and `{tb}`, for a
    flaky case's failing trial beside its passing one): more links the page's script draws; `nav`: the viewer's
    header, put first."""
    page_title = title or f"trialrun report · {report.timestamp}"
    body = _run_summary(report, page_title)
    payload = report_payload(report)
    if trial_link:
        payload["tl"] = trial_link
    payload.update(links or {})
    return _page(page_title, body, payload, nav=nav)


def comparison_html(comparison: Comparison, before: RunReport, after: RunReport, *, title: str | None = None,
                    links: dict[str, str] | None = None, nav: str = "", extra: str = "") -> str:
    """The compare page: aggregate deltas, regressions, added and removed cases, per-case deltas, config diff.

    Both runs are embedded, so expanding a case shows its trials before and after the change side by side.
    """
    page_title = title or f"trialrun comparison · {before.timestamp} → {after.timestamp}"
    from ._html_compare import compare_summary

    body = compare_summary(comparison, before, after, page_title, extra)
    payload = comparison_payload(comparison, before, after)
    payload.update(links or {})
    return _page(page_title, body, payload, nav=nav)


def report_payload(report: RunReport) -> dict[str, Any]:
    """The data the run page embeds (the packed layout `_Packer` describes)."""
    packer = _Packer()
    run = packer.run(report)
    return {"v": PAYLOAD_VERSION, "kind": "run", "runs": [run], "S": packer.strings, "T": packer.trajectories}


def comparison_payload(comparison: Comparison, before: RunReport, after: RunReport) -> dict[str, Any]:
    """The data the compare page embeds: both runs (sharing one string table) and the comparison."""
    packer = _Packer()
    runs = [packer.run(before), packer.run(after)]
    data = _compact(comparison.model_dump(mode="json", exclude={"cases"}))
    data["cases"] = [_compact({k: _num(v) if isinstance(v, float) else v for k, v in d.model_dump().items()})
                     for d in comparison.cases]
    return {"v": PAYLOAD_VERSION, "kind": "compare", "runs": runs, "comparison": data, "S": packer.strings,
            "T": packer.trajectories}


# -- packing the data ---------------------------------------------------------------------------------------
def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """Drop None, empty strings and empty containers: the page treats a missing key as 'not given'."""
    return {k: v for k, v in data.items() if v is not None and v != "" and v != [] and v != {}}


def _num(value: float | None, digits: int = 4) -> float | None:
    """Rounded for the page (0.7777777777777778 -> 0.7778); None for None, NaN and infinities."""
    if value is None or not math.isfinite(value):
        return None
    rounded = round(value, digits)
    return int(rounded) if rounded == int(rounded) else rounded


def _cost(value: float | None) -> float | None:
    """Costs keep four significant digits, however small (a trial can cost $0.0000512)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.4g}")


def _raw(value: Any) -> Any:
    """Arbitrary JSON (tool arguments, non-string outputs, metadata) made safe for JSON.parse: no NaN/Infinity."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dict):
        return {str(k): _raw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_raw(v) for v in value]
    return value


class _Packer:
    """Packs reports into the page's data layout, de-duplicating strings and trajectories across all of them.

    Layout (keys are short because a trial's keys repeat 10,000 times in a large run):
      S: [string]            every text of trials, verdicts and trajectories; other places refer to it by index
      T: [trajectory]        {turns: [turn], cmd: [S], den: [denial], notes: [S], pr: prompt S (observed)}
        turn                 {x: text S, m: model S, u: usage, c: [call], r: [unmatched result]}
        call                 {n: name S, a: arguments (raw JSON), r: result S, e: 1 when the result is an error,
                              dn: index into den when the policy refused this call}
        result               {r: content S, e: 1 when an error};  usage: [input, output, cached]
        denial               [tool S, arguments (raw JSON), reason S, rule S or null]
      trial                  {k: number, p: 1 passed / 0 failed, o/t/c: outcome/trajectory/cost passed (1/0),
                              v: [verdict], e: error, te: teardown error, kl: [S] processes killed when the
                              agent ended, d: seconds, $: cost, u: usage,
                              sc: score, st: status S, os: output S (string output) or oj: output (raw JSON),
                              tj: index into T, fl: files left}
        files left           {s: summary S, f: [[path S, change, diff S or null, note S or null]],
                              ne: [[path S, why S]] (not examined)}
        verdict              [passed 1/0, grader S, reason S, kind S or null, score or null, details or null]
        error                [type S, message S, phase S, traceback S or null]
      case                   readable keys (name, status, pass_at_1, ...; see `case`), trials: [trial]
    """

    def __init__(self) -> None:
        self.strings: list[str] = []
        self._string_index: dict[str, int] = {}
        self.trajectories: list[dict[str, Any]] = []
        self._trajectory_index: dict[str, int] = {}

    def s(self, text: str | None, cap: int = MAX_TEXT) -> int | None:
        """Index of `text` in the string table (added once); long texts are cut at `cap` with a note."""
        if text is None:
            return None
        if not isinstance(text, str):
            text = str(text)
        if len(text) > cap:  # scrubbed before the cut, so the cut never leaves half a secret
            text = scrub_text(text)
            text = f"{text[:cap]}\n… [{len(text) - cap:,} more characters are in the JSON results file]"
        index = self._string_index.get(text)
        if index is None:
            index = self._string_index[text] = len(self.strings)
            self.strings.append(text)
        return index

    # -- runs and cases ----------------------------------------------------------------------------------
    def run(self, report: RunReport) -> dict[str, Any]:
        summary = report.model_dump(mode="json", exclude={"cases", "tests", "skipped_cases", "config_snapshot"})
        for key in ("pass_at_1", "pass_pow_k", "score"):
            summary[key] = _num(summary[key])
        summary["cost_usd"] = _cost(report.cost_usd)
        summary["duration_s"] = _num(report.duration_s, 3)
        summary["config"] = {key: _raw(value) for key, value in flatten_config(report.config_snapshot).items()}
        summary["cases"] = [self.case(case) for case in report.cases]
        summary["pow_k"] = run_k(report) if shows_pass_pow_k(run_k(report)) else None  # pass^k only for k > 1
        return _compact(summary)

    def case(self, case: CaseResult) -> dict[str, Any]:
        status = "skipped" if case.skipped or case.passed is None else ("passed" if case.passed else "failed")
        n, c = case.trial_count, case.passed_trials
        interval = case.pass_at_1_interval
        data = {
            "name": case.name,
            "title": case.title,
            "description": case.description,
            "tags": case.tags,
            "mode": None if case.mode == "deterministic" else case.mode,
            "status": status,
            "skip_reason": case.skip_reason,
            "n": n,
            "c": c,
            "partly_run": partly_run(case),  # trials an interruption stopped: how many of them finished
            "pass_at_1": _num(case.pass_at_1),
            "pass_pow_k": _num(case.pass_pow_k) if shows_pass_pow_k(n) else None,
            "why": failed_by(case) or None,  # what failed it, beside a score that may look fine
            "fp": flaky_pair(case.trials),  # (passing, failing) trial of a flaky case: the viewer's diff link
            "ci": None if interval is None else [_num(interval[0], 3), _num(interval[1], 3)],
            "score": _num(case.score),
            "sub_scores": {k: _num(v) for k, v in (case.sub_scores or {}).items()},
            "sub_text": sub_scores_text(case.sub_scores) or None,  # as every table shows them (quality 0.5/0.5)
            "tools_used": case.tools_used,
            "turns": _num(case.turns, 2),
            "cost_usd": _cost(case.cost_usd),
            "metadata": _raw(jsonable(case.metadata)),
            "curve": _curve(n, c),
            "trials": [self.trial(trial) for trial in case.trials],
        }
        return _compact(data)

    # -- trials ------------------------------------------------------------------------------------------
    def trial(self, trial: TrialResult) -> dict[str, Any]:
        output = trial.output
        data = {
            "k": trial.trial,
            "p": int(trial.passed),
            "o": _flag(trial.outcome_passed),
            "t": _flag(trial.trajectory_passed),
            "c": _flag(trial.cost_passed),
            "v": [self.verdict(v) for v in trial.verdicts],
            "e": self.error(trial.error),
            "te": self.error(trial.teardown_error),
            "kl": [self.s(k) for k in trial.killed] if trial.killed else None,
            "d": _num(trial.duration_s, 3),
            "$": _cost(trial.cost_usd),
            "u": _usage(trial.usage),
            "sc": _num(trial.score),
            "st": self.s(trial.status),
            "os": self.s(output) if isinstance(output, str) else None,
            "oj": None if output is None or isinstance(output, str) else _raw(jsonable(output)),
            "tj": self.trajectory(trial.trajectory),
            "fl": self.files(trial),
        }
        return _compact(data)

    def files(self, trial: TrialResult) -> dict[str, Any] | None:
        """The files the trial left (its workspace diff), each diff cut at MAX_TEXT like any text of the page."""
        diff = trial.files
        if diff is None:
            return None
        return _compact({"s": self.s(diff.summary()),
                         "f": [[self.s(f.path), f.change, self.s(f.diff), self.s(f.note)] for f in diff.files],
                         "ne": [[self.s(rel), self.s(why)] for rel, why in diff.not_examined.items()]})

    def verdict(self, verdict: Verdict) -> list[Any]:
        packed = [int(verdict.passed), self.s(verdict.grader), self.s(verdict.reason), self.s(verdict.kind),
                  _num(verdict.score), _raw(jsonable(verdict.details)) if verdict.details else None]
        while packed[-1] is None:
            packed.pop()
        return packed

    def error(self, error: TrialError | None) -> list[Any] | None:
        if error is None:
            return None
        packed = [self.s(error.type), self.s(error.message), self.s(error.phase), self.s(error.traceback)]
        return packed if packed[-1] is not None else packed[:-1]

    # -- trajectories ------------------------------------------------------------------------------------
    def trajectory(self, trajectory: Trajectory) -> int | None:
        """Index of the packed trajectory in T; identical trajectories (common across trials) are stored once."""
        if not (trajectory.turns or trajectory.commands or trajectory.denials or trajectory.notes or trajectory.prompt
                or trajectory.other_conversations):
            return None
        denials = list(trajectory.denials)
        linked = _link_denials(trajectory.all_turns, denials)
        packed = _compact({
            "turns": [self.turn(turn, linked) for turn in trajectory.turns],
            # side requests and sub-agents, folded under the main conversation (collapsed in the timeline)
            "cv": [_compact({"ro": conversation.role, "ti": self.s(conversation_title(conversation, number)),
                             "turns": [self.turn(turn, linked) for turn in conversation.turns]})
                   for number, conversation in enumerate(trajectory.other_conversations, start=1)],
            "cmd": [self.s(command) for command in trajectory.commands],
            "den": [self.denial(d) for d in denials],
            "notes": [self.s(note) for note in trajectory.notes],
            "pr": self.s(trajectory.prompt) if trajectory.prompt else None,
        })
        key = json.dumps(packed, sort_keys=True, separators=(",", ":"))
        index = self._trajectory_index.get(key)
        if index is None:
            index = self._trajectory_index[key] = len(self.trajectories)
            self.trajectories.append(packed)
        return index

    def turn(self, turn: Turn, denied: dict[int, int]) -> dict[str, Any]:
        pairs, unmatched = _pair_results(turn)
        calls = []
        for call, result in pairs:
            calls.append(_compact({
                "n": self.s(call.name),
                # arguments the model garbled are shown as sent, under a key that says so
                "a": _raw(call.arguments if call.raw_arguments is None else {"(invalid arguments)": call.raw_arguments}),
                "r": None if result is None else self.s(result.content),
                "e": 1 if result is not None and result.is_error else None,
                "dn": denied.get(id(call)),
            }))
        return _compact({
            "x": self.s(turn.text) if turn.text else None,
            "m": self.s(turn.model),
            "u": _usage(turn.usage),
            "c": calls,
            "r": [_compact({"r": self.s(r.content), "e": 1 if r.is_error else None}) for r in unmatched],
        })

    def denial(self, denial: Denial) -> list[Any]:
        packed = [self.s(denial.tool), _raw(denial.arguments), self.s(denial.reason), self.s(denial.rule)]
        return packed + [1] if denial.source == "agent" else packed  # [4]: refused by the agent itself


def _flag(value: bool | None) -> int | None:
    return None if value is None else int(value)


def _usage(usage: Usage | None) -> list[int] | None:
    if usage is None:
        return None
    packed = [usage.input_tokens, usage.output_tokens, usage.cached_input_tokens]
    return packed if packed[2] else packed[:2]


def _curve(n: int, c: int) -> dict[str, list[float | None]] | None:
    """Unbiased pass@k and pass^k for k = 1..n (metrics' estimators); None when flat (all or none passed)."""
    if n < 2 or c in (0, n):
        return None
    ks = range(1, n + 1)
    return {
        "at": [_num(metrics.pass_at_k(n, c, k)) for k in ks],
        "pow": [_num(metrics.pass_pow_k(n, c, k)) for k in ks],
    }


def _pair_results(turn: Turn) -> tuple[list[tuple[ToolCall, ToolResult | None]], list[ToolResult]]:
    """Each call with its result (by call id, else by position among id-less ones), and results matching no call."""
    by_id = {r.call_id: r for r in turn.tool_results if r.call_id is not None}
    anonymous = turn.unnamed_results()
    used: set[int] = set()
    pairs: list[tuple[ToolCall, ToolResult | None]] = []
    for call in turn.tool_calls:
        result = by_id.get(call.id) if call.id is not None else None
        if result is None and call.id is None and anonymous:
            result = anonymous.pop(0)
        if result is not None:
            used.add(id(result))
        pairs.append((call, result))
    return pairs, [r for r in turn.tool_results if id(r) not in used]


def _link_denials(turns: list[Turn], denials: list[Denial]) -> dict[int, int]:
    """Which call each denial refused (by call id, else the first same tool with the same arguments)."""
    linked: dict[int, int] = {}
    calls = [call for turn in turns for call in turn.tool_calls]
    for index, denial in enumerate(denials):
        match = next((c for c in calls if denial.call_id is not None and c.id == denial.call_id), None)
        if match is None:
            match = next((c for c in calls if id(c) not in linked and c.name == denial.tool
                          and c.arguments == denial.arguments), None)
        if match is not None and id(match) not in linked:
            linked[id(match)] = index
    return linked


# -- the page -----------------------------------------------------------------------------------------------
def _asset(name: str) -> str:
    return resources.files("trialrun.render").joinpath("_html").joinpath(name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _json_for_script(payload: dict[str, Any]) -> str:
    """JSON that cannot end its <script> element: every '<' is written as \\u003c (so no '</' or '<!--')."""
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates in some output: keep them as JSON escapes
        text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _page(title: str, body: str, payload: dict[str, Any], *, nav: str = "") -> str:
    """The whole page; what came from the run (title, summary, data) is scrubbed of secrets here, where it is
    serialised (`_scrub`); the page's own script and style are not run data."""
    title, body, data = scrub_text(title), scrub_text(nav + body), scrub_text(_json_for_script(payload))
    css = "\n" + _asset("report.css")
    js = "\n" + _asset("report.js")
    # No network at all: nothing may load from anywhere, only this inline script and style may run.
    csp = (f"default-src 'none'; script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; img-src data:; "
           "base-uri 'none'; " + ("form-action 'self'" if nav else "form-action 'none'"))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="trialrun">\n'
        f"<title>{escape(title)}</title>\n<style>{css}</style>\n</head>\n<body>\n"
        f"{body}\n"
        f'<script type="application/json" id="{DATA_ELEMENT_ID}">{data}</script>\n'
        f"<script>{js}</script>\n</body>\n</html>\n"
    )


# -- the summary, rendered here so it reads without JavaScript ----------------------------------------------














def _config_table(config: dict[str, Any]) -> str:
    flat = flatten_config(config)
    if not flat:
        return '<p class="muted">No configuration snapshot was recorded for this run.</p>'
    rows = "".join(f'<tr><th scope="row"><code>{escape(k)}</code></th><td><code>{_value(v)}</code></td></tr>'
                   for k, v in flat.items())
    return (f'<table class="kv"><caption class="sr-only">Configuration snapshot</caption>'
            f'<thead><tr><th scope="col">Key</th><th scope="col">Value</th></tr></thead><tbody>{rows}</tbody></table>')




def _run_summary(report: RunReport, title: str) -> str:
    graded = report.case_count - report.skipped_case_count
    k = report.trial_count
    state = "interrupted" if report.status != "completed" else ("passed" if report.passed else "failed")
    verdict = _badge(report.passed) if report.status == "completed" else '<span class="badge skip">⚠ INTERRUPTED</span>'
    meta = [f"started {escape(_when(report))}"]
    if report.run_id:
        meta.insert(0, f"run <code>{escape(report.run_id)}</code>")
    meta.append(f"{k} trial{'s' if k != 1 else ''} per case")
    stats = "".join([
        _stat("Cases", f"{report.case_count:,}", stat_id="stat-cases"),
        _stat("Passed", f"{report.passed_case_count:,}", tone="pass" if report.passed_case_count else "",
              stat_id="stat-passed", note=f"of {graded:,} graded"),
        _stat("Failed", f"{report.failed_case_count:,}", tone="fail" if report.failed_case_count else "",
              stat_id="stat-failed"),
        _stat("Skipped", f"{report.skipped_case_count:,}", tone="skip" if report.skipped_case_count else "",
              stat_id="stat-skipped"),
        _stat("pass@1", _rate(report.pass_at_1), note="mean chance one trial passes", stat_id="stat-pass-at-1"),
        _stat(f"pass^{run_k(report)}", _rate(report.pass_pow_k), note="share of cases passing every trial",
              stat_id="stat-pass-pow-k") if shows_pass_pow_k(run_k(report)) else "",
        _stat("Score", _rate(report.score), stat_id="stat-score",
              note="no grader gives scores" if report.score is None else "mean of scored cases"),
        _stat("Cost", _money(report.cost_usd), stat_id="stat-cost"),
        _stat("Duration", _seconds(report.duration_s), stat_id="stat-duration"),
    ])
    notes = ""
    if report.unfinished_cases:
        names = ", ".join(f"<code>{escape(n)}</code>" for n in report.unfinished_cases)
        notes += f'<p class="alert warn">The run was interrupted; unfinished cases: {names}.</p>'
    partial = [f"<code>{escape(c.name)}</code>: {escape(str(partly_run(c)))}" for c in report.cases if c.partial]
    if partial:
        notes += f'<p class="alert warn" id="partly-run">Partly run: {"; ".join(partial)}.</p>'
    if report.skipped_cases:
        items = "".join(f"<li><code>{escape(s.name)}</code>: {escape(s.reason)}</li>" for s in report.skipped_cases)
        notes += (f'<details class="panel"><summary>Skipped cases ({len(report.skipped_cases)})</summary>'
                  f'<ul class="plain">{items}</ul></details>')
    config_count = len(flatten_config(report.config_snapshot))
    return f"""<header class="page-head" data-state="{state}">
<div class="wrap">
<p class="eyebrow">trialrun · run report</p>
<h1>{escape(title)} {verdict}</h1>
<p class="meta">{" · ".join(meta)}</p>
</div>
</header>
<main class="wrap" id="main">
<section aria-labelledby="summary-h">
<h2 id="summary-h" class="sr-only">Summary</h2>
<dl class="stats">{stats}</dl>
{notes}
<details class="panel" id="config"><summary>Configuration snapshot ({config_count} key{"s" if config_count != 1 else ""})</summary>
{_config_table(report.config_snapshot)}
</details>
</section>
<section aria-labelledby="cases-h" id="cases-section">
<h2 id="cases-h">Cases</h2>
{_noscript("case table")}
<div id="app"></div>
</section>
</main>
<footer class="wrap foot">Made by trialrun. Self-contained: this page loads nothing from the network.</footer>"""
