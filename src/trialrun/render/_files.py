"""The files a trial left (its workspace diff, `TrialResult.files`), shown: as text for `trialrun report --files`,
as HTML for the viewer's trial page, and side by side for the trajectory diff page ("files left"); the pages show
nothing of it for trials that had no workdir.

Every text here came from a folder an agent controlled: the HTML escapes all of it (the pages scrub it too), and the
text form puts it through `printable` (credentials scrubbed, control characters shown, never executed by a
terminal).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from .._util.workspace_diff import FileChange, WorkspaceDiff
from ..report.results import RunReport, TrialResult

__all__ = ["files_text", "report_files_text", "files_html", "files_side_by_side", "NO_WORKDIR"]

#: What is shown for a trial that had no workdir (or a run from before the diff was kept).
NO_WORKDIR = "no workspace diff: the trial had no workdir (or ran before trialrun kept one)"


def _head(item: FileChange) -> str:
    sizes = " → ".join(f"{n:,} bytes" for n in (item.size_before, item.size_after) if n is not None)
    return f"{item.change} {item.path}" + (f" ({sizes})" if sizes else "")


def files_text(diff: WorkspaceDiff | None) -> str:
    """One trial's files left as text: the summary, then each file's head and its diff (or why there is none)."""
    from .text import printable

    if diff is None:
        return NO_WORKDIR + "\n"
    lines = [diff.summary()]
    if diff.not_examined:
        lines.append("not examined: " + "; ".join(f"{rel} ({why})" for rel, why in diff.not_examined.items()))
    for item in diff.files:
        lines.append(_head(item))
        if item.diff:
            lines.append(item.diff.rstrip("\n"))
        if item.note:
            lines.append(f"  ({item.note})")
    return printable("\n".join(lines)) + "\n"


def report_files_text(report: RunReport, only: Sequence[str] = ()) -> str:
    """`trialrun report --files`: every trial's files left, test by test (only the tests named in `only`, if any)."""
    out = []
    for case in report.cases:
        if only and case.name not in only:
            continue
        for trial in case.trials:
            state = "PASS" if trial.passed else "FAIL"
            out.append(f"== {case.name} · trial {trial.trial} · {state}")
            out.append(files_text(trial.files))
    return "\n".join(out) if out else "no trials\n"


# -- HTML ----------------------------------------------------------------------------------------------------
def _diff_pre(text: str) -> str:
    """A unified diff as a <pre>, each line marked (added, removed, hunk header, file header) for colour."""
    rows = []
    for line in text.splitlines():
        if line.startswith(("+++", "---")):
            cls = "meta"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        rows.append(f'<span class="{cls}">{escape(line, quote=False)}</span>')
    return f'<pre class="diff">{chr(10).join(rows)}</pre>'


def _file_block(item: FileChange, open_: bool = True) -> str:
    body = _diff_pre(item.diff) if item.diff else ""
    note = f'<p class="muted file-note">{escape(item.note)}</p>' if item.note else ""
    return (f'<details class="file-left" data-path="{escape(item.path)}" data-change="{item.change}"'
            f'{" open" if open_ else ""}><summary><span class="badge change-{item.change}">{item.change}</span> '
            f"<code>{escape(item.path)}</code>{_sizes(item)}</summary>{body}{note}</details>")


def _sizes(item: FileChange) -> str:
    sizes = " → ".join(f"{n:,} B" for n in (item.size_before, item.size_after) if n is not None)
    return f' <span class="muted">{escape(sizes)}</span>' if sizes else ""


def _not_examined(diff: WorkspaceDiff) -> str:
    if not diff.not_examined:
        return ""
    items = "".join(f"<li><code>{escape(rel)}</code>: {escape(why)}</li>" for rel, why in diff.not_examined.items())
    return f'<details class="not-examined"><summary>Not examined ({len(diff.not_examined)})</summary><ul>{items}</ul></details>'


def files_html(trial: TrialResult) -> str:
    """The trial page's "Files left" section: what changed, each file's diff (binary and large files named); nothing
    for a trial that had no workdir (most agents that are not coding agents)."""
    diff = trial.files
    if diff is None:
        return ""
    blocks = "".join(_file_block(item, open_=len(diff.files) <= 8) for item in diff.files)
    return (f'<section class="panel files-left" id="files-left"><h2>Files left</h2>'
            f'<p class="files-summary">{escape(diff.summary())}</p>{blocks}{_not_examined(diff)}</section>')


def files_side_by_side(before: TrialResult, after: TrialResult, labels: tuple[str, str]) -> str:
    """The diff page's "Files left": every path either trial changed, one row each, the two trials' changes side by
    side, rows where they left the same thing marked so."""
    a, b = before.files, after.files
    if a is None and b is None:  # neither trial had a workdir: nothing to put side by side
        return ""
    by_a = {item.path: item for item in (a.files if a else [])}
    by_b = {item.path: item for item in (b.files if b else [])}
    paths = sorted(set(by_a) | set(by_b))
    same = [p for p in paths if _same(by_a.get(p), by_b.get(p))]
    rows = []
    for path in paths:
        left, right = by_a.get(path), by_b.get(path)
        state = "same" if path in same else "differs"
        rows.append(f'<tr class="file-row {state}" data-path="{escape(path)}"><th scope="row"><code>{escape(path)}</code>'
                    f'<div class="diff-kind">{state}</div></th>{_cell(path, left, a)}{_cell(path, right, b)}</tr>')
    if not paths:
        verdict = "Neither trial changed a file."
    elif len(same) == len(paths):
        verdict = f"Both trials left the same files: {len(paths)} file(s) changed alike."
    else:
        verdict = f"The trials left different files: {len(paths) - len(same)} of {len(paths)} changed file(s) differ."
    head = (f'<thead><tr><th>File</th><th>{escape(labels[0])}</th><th>{escape(labels[1])}</th></tr></thead>')
    summaries = (f'<p class="muted">{escape(labels[0])}: {escape(a.summary() if a else NO_WORKDIR)} · '
                 f'{escape(labels[1])}: {escape(b.summary() if b else NO_WORKDIR)}</p>')
    table = (f'<div class="table-wrap"><table class="tdiff files-diff" id="files-diff">{head}<tbody>{"".join(rows)}'
             f"</tbody></table></div>") if rows else ""
    tone = "good" if len(same) == len(paths) else "bad"
    return (f'<section class="panel files-left" id="files-left"><h2>Files left</h2><p class="alert {tone}" '
            f'id="files-summary">{escape(verdict)}</p>{summaries}{table}</section>')


def _same(left: FileChange | None, right: FileChange | None) -> bool:
    if left is None or right is None:
        return False
    return (left.change, left.kind, left.diff, left.size_after) == (right.change, right.kind, right.diff, right.size_after)


def _cell(path: str, item: FileChange | None, diff: WorkspaceDiff | None) -> str:
    if diff is None:
        return f'<td class="muted">{escape(NO_WORKDIR)}</td>'
    if item is None:
        what = ("unchanged" if path in diff.unchanged else "not listed (the listing was cut)" if not diff.complete
                else "not there (neither before nor after)")
        return f'<td class="muted">{what}</td>'
    body = _diff_pre(item.diff) if item.diff else ""
    note = f'<p class="muted file-note">{escape(item.note)}</p>' if item.note else ""
    return f'<td><span class="badge change-{item.change}">{item.change}</span>{_sizes(item)}{body}{note}</td>'
