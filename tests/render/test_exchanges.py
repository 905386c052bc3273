"""Each turn's raw exchange, end to end without a browser: a real `trialrun run` of an agent over the official openai
SDK writes the sidecar (no planted secret in it, turns linked to the exchanges they were read from), and the view's
trial page shows it, escaped, or says what is missing and why (no sidecar, a line a killed run cut short)."""

from __future__ import annotations

import json
import re
import shutil
from html import escape, unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import starlette  # noqa: F401  # in the test extra (as the view extra): these tests run in CI, never skip
from _exchange_runs import HOSTILE, TEST, TITLE, SdkRun, make_sdk_run


@pytest.fixture(scope="module")
def sdk_run(tmp_path_factory: pytest.TempPathFactory) -> SdkRun:
    return make_sdk_run(tmp_path_factory.mktemp("sdk"))


def _trial_lines(run: SdkRun) -> list[dict[str, Any]]:
    return [json.loads(line) for line in run.sidecar.read_text(encoding="utf-8").splitlines()][1:]


def test_no_planted_secret_reaches_the_sidecar(sdk_run: SdkRun) -> None:
    data = sdk_run.sidecar.read_bytes()
    for planted in sdk_run.planted:
        assert planted.encode() not in data
    (line,) = _trial_lines(sdk_run)
    for exchange in line["exchanges"]:
        headers = exchange["request"]["headers"]
        assert headers["authorization"] == "REDACTED" and headers["x-api-key"] == "REDACTED"
    system = line["exchanges"][0]["request"]["body"]["messages"][0]["content"]
    assert system == "Answer from the notes. Config: api_key=REDACTED, session REDACTED"  # api_key=, the echoed token


def test_the_sidecar_holds_every_exchange_and_each_turn_names_its_own(sdk_run: SdkRun) -> None:
    (line,) = _trial_lines(sdk_run)
    assert (line["case"], line["trial"]) == (TEST, 1)
    exchanges = line["exchanges"]
    assert [e["n"] for e in exchanges] == [1, 2, 3]
    assert exchanges[0]["request"]["body"]["tools"][0]["function"]["name"] == "read_notes"
    tool_results = [m["content"] for m in exchanges[1]["request"]["body"]["messages"] if m["role"] == "tool"]
    assert tool_results == [HOSTILE]  # the tool result, as sent
    assert exchanges[2]["request"]["body"]["stream"] is True and "data: " in exchanges[2]["response"]["stream"]
    report = json.loads((sdk_run.results / f"{sdk_run.stem}.json").read_text(encoding="utf-8"))
    trajectory = report["cases"][0]["trials"][0]["trajectory"]
    assert [turn["exchange"] for turn in trajectory["turns"]] == [1, 2]  # the main loop
    (side,) = trajectory["other_conversations"]
    assert side["role"] == "side" and [turn["exchange"] for turn in side["turns"]] == [3]  # the streamed title


def _page(results: Path, stem: str, **params: Any) -> Any:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    client = TestClient(create_app(results), base_url="http://127.0.0.1")
    return client.get(f"/trial/{stem}?{urlencode({'test': TEST, 'trial': 1, **params})}")


def test_the_trial_page_shows_each_turns_exchange_collapsed_and_escaped(sdk_run: SdkRun) -> None:
    response = _page(sdk_run.results, sdk_run.stem)
    assert response.status_code == 200
    html = response.text
    details = re.findall(r'<details class="raw-exchange" data-exchange="(\d+)"[^>]*>', html)
    assert details == ["1", "2", "3"] and "<details open" not in html  # one per turn, all collapsed
    assert "<script>alert" not in html and "onerror=\"alert" not in html  # the hostile tool result, escaped
    assert "&lt;script&gt;alert(&quot;xss&quot;)&lt;/script&gt;" in html
    assert "Assembled message" in html and f"\"text\": \"{TITLE}\"" in html  # the stream, read
    assert "Raw server-sent events" in html
    blocks = re.findall(r'<details class="raw-exchange".*?</div></details>', html, re.S)  # each ends so
    raw = "".join(blocks)
    assert len(blocks) == 3 and raw.count("<th>authorization</th><td><code>REDACTED</code>") == 3
    for planted in sdk_run.planted:
        assert planted not in raw and planted not in html
    assert 'id="exchanges-note"' not in html  # nothing is missing


def test_a_run_without_a_sidecar_says_so(sdk_run: SdkRun, tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    shutil.copytree(sdk_run.results, folder)
    (folder / sdk_run.sidecar.name).unlink()  # an old run, or one with exchanges = false
    response = _page(folder, sdk_run.stem)
    assert response.status_code == 200
    note = re.search(r'<p class="alert warn" id="exchanges-note">(.*?)</p>', response.text)
    assert note and "this run kept no raw exchanges" in note.group(1) and "exchanges = false" in note.group(1)
    assert "<details class=\"raw-exchange\"" not in response.text and "Read from exchange 1, which cannot be shown" in response.text
    assert "read_notes" in response.text  # the trajectory itself is still there


def test_a_sidecar_a_killed_run_cut_short_says_so(sdk_run: SdkRun, tmp_path: Path) -> None:
    folder = tmp_path / "eval"
    shutil.copytree(sdk_run.results, folder)
    sidecar = folder / sdk_run.sidecar.name
    sidecar.write_bytes(sidecar.read_bytes()[:-100])
    response = _page(folder, sdk_run.stem)
    assert response.status_code == 200
    assert "were cut short (the run was killed while writing them)" in response.text


@pytest.mark.parametrize("params, status", [({"trial": 9}, 404), ({"test": "nope"}, 404), ({"trial": "x"}, 404)])
def test_a_trial_that_is_not_there_is_a_404_that_says_so(sdk_run: SdkRun, params: dict[str, Any], status: int) -> None:
    response = _page(sdk_run.results, sdk_run.stem, **params)
    assert response.status_code == status and ("no test" in response.text or "has no trial" in response.text)


def test_a_hostile_sidecar_is_shown_as_text_and_never_breaks_the_page(sdk_run: SdkRun, tmp_path: Path) -> None:
    """A sidecar is a file anyone could have edited: HTML and script in every field are escaped, an exchange with
    fields of the wrong type is left out with a note naming its line and field, and the page still renders (200)."""
    folder = tmp_path / "eval"
    shutil.copytree(sdk_run.results, folder)
    evil = "</pre></details><script>alert(1)</script><img src=x onerror=alert(2)>"
    exchanges = [
        {"n": 1, "request": {"method": evil, "url": "javascript:alert(3)//" + evil, "headers": {evil: evil},
                             "body_text": evil}, "response": {"status": 200, "headers": {"x": evil}, "body": {evil: [evil]}},
         "cut": {"request": evil}},
        {"n": 2, "request": ["not", "a", "mapping"], "response": {"status": 200, "stream": "data: " + evil + "\n\n"}},
        {"n": 3, "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions"},
         "response": {"status": evil, "body_base64": "AAEC"}},
        {"n": 4, "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions"},
         "response": {"status": 200, "stream": "data: " + evil + "\n\n"}},
        {"n": 5, "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions"},
         "response": {"status": 200, "headers": None, "body_base64": "AAEC"}},
        {"n": 6, "request": {"method": "POST", "url": "https://api.openai.com/v1/chat/completions"},
         "response": {"status": 200, "body_base64": "AAEC"}},
    ]
    lines = [{"event": "start", "exchanges_version": 1, "kept": True},
             {"event": "trial", "case": TEST, "trial": 1, "exchanges": exchanges}]
    (folder / sdk_run.sidecar.name).write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    response = _page(folder, sdk_run.stem)
    assert response.status_code == 200
    html = response.text
    from trialrun.render._search import MARK_JS

    # the page's one script is its own (marking a search hit): any other would be injected
    assert html.count("<script") == 1 and f"<script>{MARK_JS}</script>" in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count('<details class="raw-exchange"') == 3  # exchanges 1, 4 and 6, shown as the file has them
    assert "Raw server-sent events (1)" in html and "bytes that are not text" in html
    name = sdk_run.sidecar.name
    for note in (f"{name} line 2: exchanges.1.request must be a mapping (a JSON object); that exchange is not shown",
                 f"{name} line 2: exchanges.2.response.status must be a whole number; that exchange is not shown",
                 f"{name} line 2: exchanges.4.response.headers must be a mapping (a JSON object); that exchange is not shown"):
        assert escape(note) in html, note


TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"


@pytest.mark.parametrize("folder", ["anthropic-stream", "openai-chat-stream", "openai-responses-stream",
                                    "gemini-stream"])
def test_real_streamed_traffic_is_shown_as_its_message_and_its_events(folder: str) -> None:
    """Recorded provider streams, through the sidecar and onto the page: each streamed turn's exchange shows the
    message the stream adds up to (the same text the trajectory read from it) and its raw events."""
    from trialrun.models._cassette_io import load_exchanges
    from trialrun.render.exchanges import exchange_details
    from trialrun.report.exchanges import trial_record
    from trialrun.wire import decode_trajectory

    checked = 0
    for cassette in sorted((TRAFFIC / folder).glob("*.yaml")):
        exchanges = load_exchanges(cassette)
        turns = [turn for turn in decode_trajectory(exchanges).all_turns if turn.exchange is not None]
        records = {r["n"]: r for r in trial_record("c", 1, exchanges)["exchanges"]}
        for turn in turns:
            record = records[turn.exchange]
            if "stream" not in record["response"] or "cut" in record or not turn.text.strip():
                continue
            html = exchange_details(record)
            assert "Raw server-sent events" in html and "Assembled message" in html, cassette.name
            assembled = re.search(r'<pre class="assembled">(.*?)</pre>', html, re.S)
            assert assembled is not None
            assert json.loads(unescape(assembled.group(1)))["text"] == turn.text
            checked += 1
    assert checked, f"no streamed turn with text in {folder}"
