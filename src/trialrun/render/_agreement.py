"""The judges against the hand grades (`report._agreement`), as `trialrun report` prints it and the viewer shows it."""

from __future__ import annotations

from html import escape

from ..report._agreement import JudgeAgreement

__all__ = ["agreement_lines", "agreement_html"]

_NOTE = ("on the judges' scale 0 / 0.25 / 0.5 (a finer hand grade counts as the nearest); kappa: 1 always agreed, "
         "0 no better than chance")


def _kappa(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def agreement_lines(found: list[JudgeAgreement]) -> list[str]:
    """A few lines, one a judge; none when no trial was graded by hand beside a judge's grade."""
    if not found:
        return []
    width = max(len(j.judge) for j in found)
    lines = ["hand grades vs the judges of output quality:"]
    for j in found:
        lines.append(f"  {j.judge:<{width}}  {j.n:>3} trial{'s' if j.n != 1 else ' '}  {j.agreed}/{j.n} agreed "
                     f"({j.agreement:.0%})  kappa {_kappa(j.kappa)}  mean |difference| {j.mean_difference:.2f}")
    lines.append(f"  ({_NOTE})")
    return lines


def agreement_html(found: list[JudgeAgreement], scope: str) -> str:
    """A panel with a row a judge; '' when there is nothing to show. `scope` says over what (a run, a folder)."""
    if not found:
        return ""
    rows = "".join(f'<tr data-judge="{escape(j.judge)}"><td><code>{escape(j.judge)}</code></td><td class="num">{j.n}</td>'
                   f'<td class="num agreed">{j.agreed}/{j.n} ({j.agreement:.0%})</td><td class="num kappa">{_kappa(j.kappa)}</td>'
                   f'<td class="num">{j.mean_difference:.2f}</td></tr>' for j in found)
    return ('<section class="panel" id="judge-agreement"><h2>Judges against hand grades</h2>'
            f'<p class="muted">Output quality as each judge graded it beside the hand grade of the same trial, {escape(scope)}; '
            f"{escape(_NOTE)}.</p>"
            '<div class="table-wrap"><div class="scroll"><table class="cases"><thead><tr><th>Judge</th>'
            '<th class="num">Trials</th><th class="num">Agreed</th><th class="num">Kappa</th>'
            f'<th class="num">Mean |difference|</th></tr></thead><tbody>{rows}</tbody></table></div></div></section>')
