"""The plugin's pass@1 / pass^k table prints case names scrubbed (issue 22): a name holding the value of a
`*_TOKEN` environment variable shows REDACTED there (pytest's own lines are pytest's; only trialrun's table and
failure text are looked at)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TOKEN = "tok-summary-7e6d5c4b3a"


def test_the_pass_at_k_table_scrubs_case_names(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_SUMMARY_TOKEN", TOKEN)
    pytester.makepyfile(test_named=f'''
        import trialrun as tr
        from trialrun import expect

        @tr.case(name="deploy-{TOKEN}", expect_outcome=[expect.contains("ok")])
        def deploy(ctx):
            return "ok" if ctx.trial % 2 else "not this time"
    ''')
    result = pytester.runpytest_inprocess("--trialrun-trials", "2")
    text = result.stdout.str()
    table = text[text.index("trialrun: pass@1 and pass^k"):text.index("short test summary info")]
    assert "deploy-REDACTED" in table and TOKEN not in table, table
    assert "case 'deploy-REDACTED' failed" in text
