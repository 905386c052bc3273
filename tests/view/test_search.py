"""The viewer's search over what agents did (`report._search`): commands, tool calls and arguments, tool results,
outputs and failure reasons, found case-insensitively, each text once where it is first found; the filters (failed
only, a test, a run, a tag) narrow it; the page shows each hit in context, marked and escaped, linked to its trial
with the text to mark. Over two real runs of a suite with a flaky test (tests/render/_flaky_runs.py)."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlsplit

import pytest
from _flaky_runs import FAILING, FLAKY, STEADY, TAG, TRIALS, FlakyRuns, make_flaky_runs

from trialrun.render._search import search_page, snippet
from trialrun.report._history import load_history
from trialrun.report._search import Filters, search_trials


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> FlakyRuns:
    return make_flaky_runs(tmp_path_factory.mktemp("search"))


def _keys(hits) -> list[tuple[str, str, int]]:  # type: ignore[no-untyped-def]
    return [(hit.entry.stem, hit.case.name, hit.trial.trial) for hit in hits]


def test_a_tool_call_and_its_arguments_are_found_in_every_trial_that_made_it(runs: FlakyRuns) -> None:
    history = load_history(runs.results)
    hits, more = search_trials(history, "READ_NOTES")  # (case-insensitive)
    saved = {p.stem: json.loads(p.read_text()) for p in runs.results.glob("results_*.json")}
    truth = sorted((stem, case["name"], trial["trial"]) for stem, run in saved.items() for case in run["cases"]
                   for trial in case["trials"] if any(call["name"] == "read_notes" for turn in trial["trajectory"]["turns"]
                                                      for call in turn["tool_calls"]))
    called = [hit for hit in hits if any(f.where == "tool call" and f.text.startswith("read_notes(") for f in hit.found)]
    assert not more and sorted(_keys(called)) == truth and len(truth) == 4 * TRIALS - len(FAILING)
    others = [hit for hit in hits if hit not in called]  # the trials that forgot it: their reasons name it
    assert _keys(others) == [(runs.flaky, FLAKY, n) for n in FAILING]
    assert all(f.where == "failure reason" for hit in others for f in hit.found)
    topic = search_trials(history, '"topic": "weather"')[0]
    assert {hit.case.name for hit in topic} == {STEADY}


def test_failure_reasons_and_the_filters(runs: FlakyRuns) -> None:
    history = load_history(runs.results)
    failed, _ = search_trials(history, "milk", Filters(failed=True))
    assert _keys(failed) == [(runs.flaky, FLAKY, n) for n in FAILING]
    assert all(hit.found[0].where == "failure reason" and "milk" in hit.found[0].text for hit in failed)
    everywhere, _ = search_trials(history, "milk")
    assert len(everywhere) == 2 * TRIALS  # every trial of the flaky test: a reply with milk, or a reason naming it
    assert {h.entry.stem for h in search_trials(history, "milk", Filters(run=runs.steady))[0]} == {runs.steady}
    assert search_trials(history, "milk", Filters(test=STEADY))[0] == []
    assert len(search_trials(history, "milk", Filters(tag=TAG))[0]) == 2 * TRIALS
    assert search_trials(history, "milk", Filters(tag="no-such-tag"))[0] == []
    some, more = search_trials(history, "milk", limit=3)
    assert len(some) == 3 and more
    assert search_trials(history, "   ") == ([], False)


def test_the_page_marks_each_hit_escaped_and_links_its_trial(runs: FlakyRuns) -> None:
    history = load_history(runs.results)
    page = search_page(history, "milk", Filters(failed=True))
    assert page.count('class="found-trial"') == len(FAILING) and "<mark>milk</mark>" in page
    assert 'id="filter-failed" checked' in page and f'<option value="{FLAKY}">' in page
    href = page.split('class="trial-hit" href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    query = parse_qs(urlsplit(href).query)
    assert urlsplit(href).path == f"/trial/{runs.flaky}" and query == {"test": [FLAKY], "trial": [str(FAILING[0])],
                                                                        "hl": ["milk"]}
    assert snippet("a <b>rm -RF</b> c", "rm -rf") == "a &lt;b&gt;<mark>rm -RF</mark>&lt;/b&gt; c"
    long = "x" * 200 + " needle " + "y" * 200
    cut = snippet(long, "needle")
    assert cut.startswith("…") and cut.endswith("…") and "<mark>needle</mark>" in cut and len(cut) < 200
