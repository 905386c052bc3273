"""A result file reuses the trial JSON its journal wrote (`store.report_text(report, trial_texts)`): the same
report as one serialised whole, and never a secret the whole file's scrub would have removed."""

from __future__ import annotations

import json
import secrets

import trialrun as tr
from trialrun._scrub import add_secret, scrub_text, secrets_version
from trialrun.report.results import RunReport
from trialrun.report.store import report_text


def _report(outputs: list[str]) -> RunReport:
    cases = [tr.Case(name=f"c{i}", invoke=lambda ctx, out=out: tr.Run(out, cost_usd=0.01), expect_outcome=[tr.expect.contains("o")])
             for i, out in enumerate(outputs)]
    return tr.evaluate(cases, trials=2)


def _texts(report: RunReport) -> dict[int, tuple[object, str, object]]:
    version = secrets_version()
    return {id(t): (t, scrub_text(t.model_dump_json()), version) for c in report.cases for t in c.trials}


def test_the_trials_texts_make_the_same_report_in_the_same_order() -> None:
    report = _report(["out one", "out two\nwith \u00e9 and \"quotes\"", "out three"])
    whole, parts = report_text(report), report_text(report, _texts(report))
    assert parts != whole  # the trials are in as their journal lines: one line each
    assert RunReport.model_validate_json(parts) == RunReport.model_validate_json(whole)
    assert json.loads(parts) == json.loads(whole)
    assert list(json.loads(parts)["cases"][0]) == list(json.loads(whole)["cases"][0])  # "trials" where it was
    assert parts.count('\n        {"trial":') == 6


def test_a_trial_without_a_text_or_a_text_of_another_object_is_serialised_here() -> None:
    report = _report(["out one", "out two"])
    texts = _texts(report)
    first = report.cases[0].trials[0]
    texts[id(first)] = (object(), '{"stale": true}', secrets_version())  # the id of a trial that is not this one any more
    del texts[id(report.cases[1].trials[1])]
    assert RunReport.model_validate_json(report_text(report, texts)) == report


def test_a_secret_anywhere_makes_the_file_the_whole_way() -> None:
    """An AWS secret key alone is found only in text that also holds an access key id: here the id is in one
    trial's output and the secret in another's. Scrubbed in parts, the second would keep it; the whole file's
    scrub removes it, and that is what is written."""
    key_id = "AKIA" + "".join(secrets.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))
    secret = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") for _ in range(38)) + "a1"
    report = _report([f"out id {key_id}", f"out {secret} alone"])
    text = report_text(report, _texts(report))
    assert key_id not in text and secret not in text
    assert text == report_text(report)


def test_a_text_scrubbed_before_a_secret_was_registered_is_scrubbed_again() -> None:
    """A credential first seen by a later trial's transport is registered after earlier trials' journal lines
    were scrubbed: the result file must not reuse those texts as they are."""
    token = "late-" + secrets.token_hex(8)
    report = _report([f"out {token}", "out two"])
    texts = _texts(report)
    assert token in report_text(report, texts)  # nothing knew it yet
    assert add_secret(token, source="a test")
    text = report_text(report, texts)
    assert token not in text and "REDACTED" in text
