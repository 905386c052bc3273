"""Make docs/html-report.png: the HTML report of the bundled shellpilot examples, with the case whose prompt
injection the policy denied expanded to its first trial's trajectory.

The page is drawn by headless Chromium through the very code the browser tests use (tests/render/_browser.py),
so the README shows what the tests look at, not a drawing.

    python docs/make_screenshot.py [OUTPUT.png]

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


def main(argv: list[str]) -> int:
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
