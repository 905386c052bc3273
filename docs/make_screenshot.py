"""Make docs/html-report.png: the HTML report of the bundled shellpilot examples, with the case whose prompt
injection the policy denied expanded to its first trial's trajectory; and docs/view-runs.png and
docs/view-diff.png: `trialrun view` over five real runs of the quickstart (the runs list with the suite trend, and
the trajectory diff of the test the configuration change regressed); docs/view-trial.png: a trial of a run of
an agent over the openai SDK, its first turn's raw request and response expanded; and, over two real runs of a
suite with a flaky test (tests/render/_flaky_runs.py), docs/view-flaky-diff.png (a failing trial beside a passing
one, the trials picked on the page) and docs/view-trial-verdicts.png (a trial's verdicts, how its score was made,
and the hand-grade form).

The page is drawn by headless Chromium through the very code the browser tests use (tests/render/_browser.py),
so the README shows what the tests look at, not a drawing.

    python docs/make_screenshot.py [OUTPUT.png]
    python docs/make_screenshot.py --view [FOLDER]      # view-*.png (needs trialrun[view])
    python docs/make_screenshot.py --flaky [FOLDER]     # only view-flaky-diff.png and view-trial-verdicts.png

Needs Playwright for Python (`pip install playwright`, no browser download) and Debian's Chromium
(`apt-get install -y chromium`), or TRIALRUN_CHROMIUM pointing at another Chromium.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "render"))

import _browser  # noqa: E402  (tests/render is not a package)
from _html_reports import DENIAL_CASE, shellpilot_report  # noqa: E402

from trialrun.render.html import report_html  # noqa: E402


def view_screenshots(folder: Path) -> list[Path]:
    """`trialrun view` served over a real history; the runs list and a trajectory diff, as the tests open them."""
    from urllib.parse import urlencode

    from _history_runs import REGRESSED, make_history, served  # noqa: E402

    with tempfile.TemporaryDirectory() as scratch:
        results = make_history(Path(scratch))
        with served(results) as base, _browser.chromium() as launched:
            context = _browser.new_context(launched, width=1280, height=900)
            runs = _browser.open_url(context, base + "/")
            stems = list(reversed(runs.page.locator("tr.run-row").evaluate_all("rs => rs.map(r => r.dataset.run)")))
            written = [runs.screenshot(folder / "view-runs.png")]
            diff = _browser.open_url(context, f"{base}/diff?{urlencode({'test': REGRESSED, 'a': stems[1], 'b': stems[2]})}")
            written.append(diff.screenshot(folder / "view-diff.png"))
            problems = runs.problems + diff.problems
        written.append(_trial_screenshot(folder, Path(scratch)))
        written.extend(_flaky_screenshots(folder, Path(scratch)))
        if problems:
            raise RuntimeError(f"the view reported problems: {problems}")
    return written


def _trial_screenshot(folder: Path, scratch: Path) -> Path:
    """A trial's page, its first turn's raw exchange expanded (the run of tests/render/_exchange_runs.py)."""
    from urllib.parse import urlencode

    from _exchange_runs import TEST, make_sdk_run  # noqa: E402
    from _history_runs import served  # noqa: E402

    run = make_sdk_run(scratch)
    with served(run.results) as base, _browser.chromium() as launched:
        context = _browser.new_context(launched, width=1100, height=1500)
        page = _browser.open_url(context, f"{base}/trial/{run.stem}?{urlencode({'test': TEST, 'trial': 1})}")
        page.page.locator("details.raw-exchange summary").first.click()
        if page.problems:
            raise RuntimeError(f"the view reported problems: {page.problems}")
        return page.screenshot(folder / "view-trial.png", full_page=False)


def _flaky_screenshots(folder: Path, scratch: Path) -> list[Path]:
    """The diff of the flaky test's regression (the compare page's link) and its failing trial's verdicts."""
    from urllib.parse import urlencode

    from _flaky_runs import FAILING, FLAKY, make_flaky_runs  # noqa: E402
    from _history_runs import served  # noqa: E402

    runs = make_flaky_runs(scratch)
    with served(runs.results) as base, _browser.chromium() as launched:
        context = _browser.new_context(launched, width=1280, height=900)
        diff = _browser.open_url(context, f"{base}/compare?{urlencode({'a': runs.steady, 'b': runs.flaky})}",
                                 ready="html[data-ready='1']")
        diff.page.locator(f'#changed-tests li[data-test="{FLAKY}"] a.diff-link').click()
        diff.page.wait_for_selector("#diff-summary")
        trial = _browser.open_url(context, f"{base}/trial/{runs.flaky}?{urlencode({'test': FLAKY, 'trial': FAILING[0]})}")
        if diff.problems or trial.problems:
            raise RuntimeError(f"the view reported problems: {diff.problems + trial.problems}")
        return [diff.screenshot(folder / "view-flaky-diff.png"),
                trial.screenshot(folder / "view-trial-verdicts.png", full_page=False)]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--flaky"]:
        with tempfile.TemporaryDirectory() as scratch:
            for path in _flaky_screenshots(Path(argv[1]) if len(argv) > 1 else ROOT / "docs", Path(scratch)):
                print(f"wrote {path}")
        return 0
    if argv[:1] == ["--view"]:
        for path in view_screenshots(Path(argv[1]) if len(argv) > 1 else ROOT / "docs"):
            print(f"wrote {path}")
        return 0
    output = Path(argv[0]) if argv else ROOT / "docs" / "html-report.png"
    reason = _browser.missing()
    if reason:
        print(f"cannot make the screenshot: {reason}", file=sys.stderr)
        return 2
    report = shellpilot_report(trials=3)
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        page.write_text(report_html(report, title="shellpilot examples"), encoding="utf-8")
        _browser.screenshot_report(page, output, case=DENIAL_CASE, trial=1)
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
