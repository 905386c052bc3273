"""The compare page's summary, rendered in Python so it reads without JavaScript: what the gate decides and why,
the kind of runs, the word for the run (worse, not worse, cannot tell) with its intervals, the aggregate deltas, the
regressions and why, added, removed and unfinished cases, and the config diff (split from render/html.py, which
assembles the page)."""

from __future__ import annotations

from html import escape

from ..report.compare import CaseDelta, Comparison, dropped, note_lines, regression_reason, runs_line, shown
from ..report.results import RunReport
from ._html_parts import _noscript, _rate, _stat, _value, _when

__all__ = ["compare_summary", "WORD_TONE"]

#: The tone each word is drawn in (a badge's class).
WORD_TONE = {"worse": "fail", "not worse": "pass", "cannot tell": "partial"}


def _delta(before: float | None, after: float | None, *, integer: bool = False) -> tuple[str, str]:
    """Text and tone of a change: '▲ +0.05' (better), '▼ -0.10' (worse), '= unchanged'."""
    if before is None or after is None:
        return "", ""
    change = after - before if integer else round(shown(after) - shown(before), 2)  # the change of the shown values
    if abs(change) < 1e-9:
        return "= unchanged", "same"
    text = f"{change:+d}" if integer else f"{change:+.2f}"
    return (f"▲ {text}", "up") if change > 0 else (f"▼ {text}", "down")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _regression_item(c: Comparison, d: CaseDelta) -> str:
    """One regression: a broken safety claim, the score drop, or (same score) that the case passed before and fails
    now, and why; with the verdict when it is not worse."""
    head = f"<li><code>{escape(d.name)}</code>: {_rate(d.before)} → {_rate(d.after)} "
    word = f" — verdict: {escape(d.word)}" if d.word is not None else ""
    if d.safety_breaches or (d.sub_score_regressions and not d.newly_failing and not dropped(c, d)):
        return head + f"(<strong>{escape(regression_reason(c, d))}</strong>{word})</li>"
    if dropped(c, d):
        return head + f"(<strong>{d.delta:+.2f}</strong>{word})</li>"
    why = f": {escape(d.failure_after)}" if d.failure_after else ""
    return head + f"(<strong>passed before, fails now</strong>{why}{word})</li>"


def _span(change: tuple[float, float, float] | None) -> str:
    return "–" if change is None else f"{change[0]:+.2f} [{change[1]:+.2f}, {change[2]:+.2f}]"


def _verdict_panel(c: Comparison) -> str:
    """The gate's decision in one line, the kind of runs, the run's word and why, and its intervals (live runs)."""
    gate = c.gate
    gate_html = ("" if gate is None else
                 f'<p class="alert {"bad" if gate.failed else "good"}" id="gate"><strong>Gate '
                 f'(<code>--fail-on-regression</code>):</strong> {escape(gate.line.removeprefix("gate: "))}</p>')
    run = ""
    if c.run is not None:
        tone = WORD_TONE[c.run.word]
        run = (f'<p id="run-verdict"><span class="badge {tone}">{escape(c.run.word.upper())}</span> '
               f"<strong>The run</strong>: {escape(c.run.reason)}</p>")
        chance = c.run.chance
        if chance is not None:
            run += (f'<ul class="meta" id="run-intervals"><li>pass@1 change (95%): <strong>{_span(chance.change)}'
                    f"</strong></li><li>pass^k change (95%): <strong>{_span(chance.pass_pow_k_change)}</strong></li>"
                    f"<li>p, one-sided: {chance.p_value:.4f} (Holm-adjusted {chance.p_holm:.4f})</li></ul>")
    return (f'<section class="panel" aria-labelledby="verdict-h" id="verdict"><h3 id="verdict-h">Verdict</h3>'
            f'{gate_html}<p class="muted" id="runs-kind">{escape(runs_line(c))}</p>{run}</section>')


def _compare_stat(label: str, before: str, after: str, delta: tuple[str, str], stat_id: str) -> str:
    text, tone = delta
    change = f'<span class="delta {tone}">{escape(text)}</span>' if text else ""
    return (f'<div class="stat change" id="{stat_id}"><dt>{escape(label)}</dt><dd><span class="stat-value">'
            f'{escape(before)} → {escape(after)}</span>{change}</dd></div>')


def _name_list(names: list[str], empty: str) -> str:
    if not names:
        return f'<p class="muted">{escape(empty)}</p>'
    return '<ul class="names">' + "".join(f"<li><code>{escape(n)}</code></li>" for n in names) + "</ul>"


def _stat_rows(c: Comparison) -> list[str]:
    """The stat boxes: each aggregate before, after and its change; the added, removed and unfinished counts."""
    regressed = bool(c.regressions)
    return [
        _compare_stat("Avg score", _rate(c.avg_score_before), _rate(c.avg_score_after),
                      _delta(c.avg_score_before, c.avg_score_after), "stat-avg-score"),
        _compare_stat("Pass rate", f"{c.passed_before}/{c.total_before}", f"{c.passed_after}/{c.total_after}",
                      _delta(c.passed_before, c.passed_after, integer=True), "stat-pass-rate"),
        _compare_stat("pass@1", _rate(c.pass_at_1_before), _rate(c.pass_at_1_after),
                      _delta(c.pass_at_1_before, c.pass_at_1_after), "stat-pass-at-1"),
        _compare_stat("pass^k", _rate(c.pass_pow_k_before), _rate(c.pass_pow_k_after),
                      _delta(c.pass_pow_k_before, c.pass_pow_k_after), "stat-pass-pow-k"),
        _compare_stat("Trials per case", str(c.trials_before), str(c.trials_after),
                      _delta(c.trials_before, c.trials_after, integer=True), "stat-trials"),
        _stat("Cases added", str(len(c.added)), stat_id="stat-added"),
        _stat("Cases removed", str(len(c.removed)), stat_id="stat-removed"),
        _stat("Not finished", str(len(c.not_finished)), tone="fail" if c.not_finished else "",
              note="the later run was interrupted" if c.not_finished else "", stat_id="stat-not-finished"),
        _stat("Regressions", str(len(c.regressions)), tone="fail" if regressed else "pass", stat_id="stat-regressions",
              note=f"drop of {c.threshold:.2f} or more, or pass to fail"),
        _stat("Worse", str(len(c.worse)), tone="fail" if c.worse else "pass", stat_id="stat-worse",
              note="real drops, broken safety claims, or beyond chance"),
        _stat("Cannot tell", str(len(c.cannot_tell)), tone="partial" if c.cannot_tell else "", stat_id="stat-cannot-tell",
              note="too few trials to tell" if c.cannot_tell else ""),
    ]


def _alerts(c: Comparison) -> str:
    """The regressions and why (or that there are none), then the notes of an interrupted run."""
    if c.regressions:
        deltas = {d.name: d for d in c.cases}
        items = "".join(_regression_item(c, deltas[n]) for n in c.regressions)
        alert = (f'<div class="alert bad" id="regressions"><p><strong>Regression{"s" if len(c.regressions) != 1 else ""}'
                 f"</strong> (a drop of {c.threshold:.2f} or more, or a case that passed and now fails):</p>"
                 f"<ul>{items}</ul></div>")
    else:
        alert = (f'<p class="alert good" id="regressions">No case dropped by {c.threshold:.2f} or more, '
                 "and none that passed now fails.</p>")
    notes = note_lines(c)
    if notes:  # an interrupted run: its missing tests did not finish, they were not removed
        alert += ('<div class="alert warn" id="interrupted"><ul>'
                  + "".join(f"<li>{escape(_sentence(n.removeprefix('note: ')))}</li>" for n in notes) + "</ul></div>")
    return alert


def _diff_lines(diff: str) -> str:
    """A unified diff's lines, each marked as added, removed or context (escaped)."""
    kinds = {"+": "add", "-": "del", "@": "hunk"}
    return "\n".join(f'<span class="{kinds.get(line[:1], "ctx")}">{escape(line)}</span>' for line in diff.splitlines())


def _config_diff(c: Comparison) -> str:
    """The keys whose value changed, before beside after (or that the snapshots are identical)."""
    if not c.config_changes:
        return '<p class="muted" id="config-diff">The configuration snapshots are identical.</p>'
    config_rows = "".join(
        f'<tr><th scope="row"><code>{escape(ch.key)}</code></th><td class="old"><code>{_value(ch.before)}</code></td>'
        f'<td class="new"><code>{_value(ch.after)}</code></td></tr>' if ch.diff is None else
        f'<tr><th scope="row"><code>{escape(ch.key)}</code></th><td colspan="2"><pre class="text-diff">'
        f'{_diff_lines(ch.diff)}</pre></td></tr>' for ch in c.config_changes)
    return (f'<table class="kv diff" id="config-diff"><caption class="sr-only">Configuration changes</caption>'
            f'<thead><tr><th scope="col">Key</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>'
            f"<tbody>{config_rows}</tbody></table>")


def _run_line(label: str, report: RunReport) -> str:
    rid = f" <code>{escape(report.run_id)}</code>" if report.run_id else ""
    return f"<li><strong>{label}</strong>{rid} · {escape(_when(report))} · {report.trial_count} trial{'s' if report.trial_count != 1 else ''} per case</li>"


def compare_summary(comparison: Comparison, before: RunReport, after: RunReport, title: str, extra: str = "") -> str:
    c = comparison
    failed = c.gate is not None and c.gate.failed
    state = "failed" if failed else "passed"
    word = c.run.word if c.run is not None else "cannot tell"
    verdict = (f'<span class="badge {WORD_TONE[word]}">{"▼ " if word == "worse" else ""}'
               f'{escape(("the run is " + word).upper())}</span>')
    if failed:
        verdict += ' <span class="badge fail">GATE FAILS</span>'
    rows, alert, config = _stat_rows(c), _verdict_panel(c) + _alerts(c), _config_diff(c)
    not_finished = ("" if not c.not_finished else
                    '<section class="panel" aria-labelledby="unfinished-h"><h3 id="unfinished-h">Not finished '
                    f'({len(c.not_finished)})</h3><p class="muted">The later run was interrupted before these cases '
                    f'finished; they were not removed.</p>{_name_list(c.not_finished, "")}</section>')
    run_line = _run_line

    return f"""<header class="page-head" data-state="{state}">
<div class="wrap">
<p class="eyebrow">trialrun · comparison</p>
<h1>{escape(title)} {verdict}</h1>
<ul class="meta runs">{run_line("Before", before)}{run_line("After", after)}</ul>
</div>
</header>
<main class="wrap" id="main">
<section aria-labelledby="summary-h">
<h2 id="summary-h" class="sr-only">Summary</h2>
<dl class="stats">{"".join(rows)}</dl>
{alert}{extra}
<div class="two-col">
<section class="panel" aria-labelledby="added-h"><h3 id="added-h">Added ({len(c.added)})</h3>{_name_list(c.added, "No case was added.")}</section>
<section class="panel" aria-labelledby="removed-h"><h3 id="removed-h">Removed ({len(c.removed)})</h3>{_name_list(c.removed, "No case was removed.")}</section>
</div>{not_finished}
<section class="panel" aria-labelledby="config-h"><h3 id="config-h">Configuration changes ({len(c.config_changes)})</h3>{config}</section>
</section>
<section aria-labelledby="cases-h" id="cases-section">
<h2 id="cases-h">Cases</h2>
{_noscript("per-case table")}
<div id="app"></div>
</section>
</main>
<footer class="wrap foot">Made by trialrun. Self-contained: this page loads nothing from the network.</footer>"""
