"""The exchanges sidecar (`trialrun.report.exchanges`): what is written (scrubbed, numbered, capped with a marker that
says how much was cut), and what a reader gets from a file that is missing, cut short by a killed run, or corrupt."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest

from trialrun.report.exchanges import (
    BODY_MAX_BYTES,
    BODY_MIN_BYTES,
    ExchangeLog,
    merge_parts,
    read_trial_exchanges,
    sidecar_path,
    trial_record,
)
from trialrun.wire import Exchange

CHAT = "https://api.openai.com/v1/chat/completions"


def _exchange(body: object, *, response: bytes = b'{"choices": []}', headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> Exchange:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Exchange("POST", CHAT, dict(headers or {"content-type": "application/json"}), raw, 200,
                    {"content-type": content_type}, response)


def test_the_sidecar_is_named_after_the_result_file() -> None:
    assert sidecar_path(Path("d/results_20260101_000000.json")) == Path("d/results_20260101_000000.exchanges.ndjson")
    assert sidecar_path(Path("d/results_20260101_000000_2.jsonl")).name == "results_20260101_000000_2.exchanges.ndjson"


def test_a_record_is_numbered_from_1_and_keeps_json_bodies_as_data() -> None:
    record = trial_record("c", 2, [_exchange({"model": "m", "messages": []}), _exchange({"model": "n"})])
    assert (record["case"], record["trial"]) == ("c", 2)
    assert [e["n"] for e in record["exchanges"]] == [1, 2]
    first = record["exchanges"][0]
    assert first["request"]["body"] == {"model": "m", "messages": []}
    assert first["request"]["method"] == "POST" and first["request"]["url"] == CHAT
    assert first["response"] == {"status": 200, "headers": {"content-type": "application/json"}, "body": {"choices": []}}
    assert "cut" not in first


def test_credentials_in_headers_and_bodies_never_reach_the_record(tmp_path: Path) -> None:
    key = "sk-proj-" + secrets.token_hex(20)
    token = secrets.token_hex(12)  # no key shape: only known because a credential header carried it
    assigned = secrets.token_hex(10)
    exchange = _exchange({"model": "m", "messages": [
        {"role": "system", "content": f"api_key={assigned}"},
        {"role": "user", "content": f"my key is {key}, my token {token}"}]},
        headers={"Authorization": f"Bearer {key}", "x-api-key": token, "content-type": "application/json"},
        response=json.dumps({"echo": key}).encode())
    log = ExchangeLog.open(tmp_path / "results_x.exchanges.ndjson", run_id="r")
    log.write("c", 1, [exchange], frozenset({token.encode()}))
    log.close()
    text = (tmp_path / "results_x.exchanges.ndjson").read_text(encoding="utf-8")
    for planted in (key, token, assigned):
        assert planted not in text
    stored = read_trial_exchanges(tmp_path / "results_x.exchanges.ndjson", "c", 1).exchanges[0]
    assert stored["request"]["headers"]["Authorization"] == "REDACTED"
    assert stored["request"]["headers"]["x-api-key"] == "REDACTED"
    assert "REDACTED" in stored["request"]["body"]["messages"][1]["content"]


def test_a_key_written_with_json_escapes_is_scrubbed_once_it_is_plain(tmp_path: Path) -> None:
    key = "sk-proj-" + secrets.token_hex(20)
    token = secrets.token_hex(12)
    escaped = "".join(f"\\u{ord(c):04x}" for c in key)  # the body's JSON spells every character as an escape
    body = ('{"model": "m", "messages": [{"role": "user", "content": "' + escaped + " "
            + "".join(f"\\u{ord(c):04x}" for c in token) + '"}]}').encode()
    assert key.encode() not in body
    path = tmp_path / "results_x.exchanges.ndjson"
    log = ExchangeLog.open(path, run_id="r")
    log.write("c", 1, [_exchange(body)], frozenset({token.encode()}))
    log.close()
    text = path.read_text(encoding="utf-8")
    assert key not in text and token not in text and escaped not in text
    assert read_trial_exchanges(path, "c", 1).exchanges[0]["request"]["body"]["messages"][0]["content"] == (
        "REDACTED REDACTED")


def test_a_key_split_across_stream_events_is_scrubbed_before_it_is_cut() -> None:
    key = "sk-ant-" + secrets.token_hex(20)
    halves = (key[:12], key[12:])
    events = "".join(f'data: {json.dumps({"choices": [{"index": 0, "delta": {"content": part}}]})}\n\n'
                     for part in (*halves, " and more: " + "x " * BODY_MAX_BYTES))
    record = trial_record("c", 1, [_exchange({"model": "m", "stream": True}, response=events.encode(),
                                             content_type="text/event-stream")])
    stream = record["exchanges"][0]["response"]["stream"]
    assert halves[0] not in stream and halves[1] not in stream and "REDACTED" in stream and "x x x" in stream
    assert "bytes cut" in record["exchanges"][0]["cut"]["response"]


def test_a_big_json_body_keeps_its_structure_and_says_how_much_was_cut() -> None:
    body = {"model": "claude-sonnet-4", "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "y" * 400_000}]}
    record = trial_record("c", 1, [_exchange(body)])
    stored = record["exchanges"][0]
    kept = stored["request"]["body"]
    assert kept["model"] == "claude-sonnet-4" and kept["tools"] == body["tools"]
    assert kept["messages"][0]["content"].endswith("characters cut]")
    assert len(json.dumps(kept)) <= BODY_MAX_BYTES
    cut = stored["cut"]["request"]
    assert "bytes cut" in cut and f"{BODY_MAX_BYTES:,}" in cut and "shortened" in cut


def test_a_big_text_body_keeps_its_head() -> None:
    record = trial_record("c", 1, [_exchange(b"z" * (BODY_MAX_BYTES * 2))])
    stored = record["exchanges"][0]
    assert stored["request"]["body_text"] == "z" * BODY_MAX_BYTES
    assert stored["cut"]["request"].startswith(f"{BODY_MAX_BYTES:,} of {BODY_MAX_BYTES * 2:,} bytes cut")


def test_once_the_trial_cap_is_reached_each_body_keeps_only_its_start() -> None:
    bodies = [{"model": "m", "n": i, "pad": "p" * 3000} for i in range(10)]
    record = trial_record("c", 1, [_exchange(b) for b in bodies], max_trial_bytes=10_000)
    exchanges = record["exchanges"]
    assert len(exchanges) == 10  # every exchange is kept: method, URL, headers, status, and the start of its bodies
    assert "cut" not in exchanges[0]
    late = exchanges[-1]
    assert "reached 10,000 bytes" in late["cut"]["request"]
    assert late["request"]["body"]["n"] == 9 and late["request"]["body"]["model"] == "m"
    assert len(json.dumps(late["request"]["body"])) <= BODY_MIN_BYTES


def test_a_trial_is_on_disk_as_soon_as_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "results_x.exchanges.ndjson"
    log = ExchangeLog.open(path, run_id="eval_x")
    log.write("a", 1, [_exchange({"model": "m"})])
    assert read_trial_exchanges(path, "a", 1).found  # before close: a killed run keeps what finished
    log.write("a", 2, [])
    log.close()
    assert log.trials == 2 and log.problem is None
    assert read_trial_exchanges(path, "a", 2).problem == "the trial sent no request through an observed model transport"


def _written(tmp_path: Path) -> Path:
    path = tmp_path / "results_x.exchanges.ndjson"
    log = ExchangeLog.open(path, run_id="eval_x")
    log.write("a", 1, [_exchange({"model": "first"})])
    log.write("b", 1, [_exchange({"model": "second"})])
    log.close()
    return path


def test_a_torn_last_line_loses_only_that_trial(tmp_path: Path) -> None:
    path = _written(tmp_path)
    path.write_bytes(path.read_bytes()[:-30])  # killed while writing b's line
    whole = read_trial_exchanges(path, "a", 1)
    assert whole.problem is None and whole.exchanges[0]["request"]["body"]["model"] == "first"
    torn = read_trial_exchanges(path, "b", 1)
    assert not torn.exchanges and "cut short (the run was killed while writing them)" in (torn.problem or "")


def test_a_corrupt_line_is_named(tmp_path: Path) -> None:
    path = _written(tmp_path)
    lines = path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"exchanges":[', b'"exchanges":[[[')
    path.write_bytes(b"\n".join(lines))
    assert read_trial_exchanges(path, "a", 1).problem == f"{path.name} line 2: not valid JSON (the file is corrupt)"
    assert read_trial_exchanges(path, "b", 1).problem is None


@pytest.mark.parametrize("content, expected", [
    (None, "this run kept no raw exchanges: results_x.exchanges.ndjson is not there"),
    (b"", "results_x.exchanges.ndjson is empty"),
    (b"garbage\n", "is not a trialrun exchanges file"),
    (b'{"event": "start", "exchanges_version": 99}\n', "written by a newer trialrun"),
    (b'{"event": "start", "exchanges_version": 1, "kept": false, "why": "the trials ran on Ray"}\n',
     "this run kept no raw exchanges: the trials ran on Ray"),
    (b'{"event": "start", "exchanges_version": 1, "kept": true}\n',
     "has no exchanges for trial 1 of 'a': the run stopped before the trial finished"),
])
def test_what_cannot_be_read_is_said(tmp_path: Path, content: bytes | None, expected: str) -> None:
    path = tmp_path / "results_x.exchanges.ndjson"
    if content is not None:
        path.write_bytes(content)
    found = read_trial_exchanges(path, "a", 1)
    assert not found.found and not found.exchanges
    assert expected in (found.problem or "")


def test_a_write_that_fails_stops_the_log_and_says_why(tmp_path: Path) -> None:
    log = ExchangeLog.open(tmp_path / "missing-folder" / "results_x.exchanges.ndjson", run_id="r")
    log.write("a", 1, [_exchange({"model": "m"})])
    assert log.trials == 0 and "no raw exchanges are kept" in (log.problem or "")


def test_an_exchange_that_cannot_be_written_stops_the_log_not_the_run(tmp_path: Path) -> None:
    log = ExchangeLog.open(tmp_path / "results_x.exchanges.ndjson", run_id="r")
    log.write("a", 1, [object()])  # not an Exchange: whatever went wrong, the run goes on
    assert log.trials == 0 and "the exchanges of trial 1 of 'a' could not be written" in (log.problem or "")
    log.write("a", 2, [_exchange({"model": "m"})])
    assert log.trials == 0  # stopped, and says why; the run's end names the problem


def test_parts_merge_into_one_sidecar_under_the_result_files_names(tmp_path: Path) -> None:
    """A pytest session's parts (one per xdist worker, keyed by item): every whole trial line of a reported item is
    kept under the name the result file gives it; a start line, a line its killed writer cut short and a line of an
    item that was not reported are not; the merge leaves no temp file."""
    first, second = tmp_path / ".pytest-exchanges-gw0.0123456789ab.tmp", tmp_path / ".pytest-exchanges-gw1.0123456789ab.tmp"
    for path, entries in ((first, [("item 0", 1, "zero"), ("item 2", 1, "dropped")]), (second, [("item 1", 1, "one")])):
        log = ExchangeLog.open(path, run_id=None, lock=True)
        for key, trial, model in entries:
            log.write(key, trial, [_exchange({"model": model})])
        log.close()
    with second.open("ab") as handle:  # a line whose writer was killed while writing it
        handle.write(b'{"event":"trial","case":"item 0","trial":2,"exchanges":[{"n":1,')
    dest = tmp_path / "results_x.exchanges.ndjson"
    names = {"item 0": "test_one.py::shared name", "item 1": "listed"}
    assert merge_parts([first, second], dest, names, run_id="eval_x") == 2
    lines = [json.loads(line) for line in dest.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["event"] == "start" and lines[0]["run_id"] == "eval_x" and lines[0]["kept"] is True
    assert [(line["case"], line["trial"]) for line in lines[1:]] == [("test_one.py::shared name", 1), ("listed", 1)]
    assert lines[2]["exchanges"][0]["request"]["body"]["model"] == "one"
    got = read_trial_exchanges(dest, "test_one.py::shared name", 1)
    assert got.problem is None and got.exchanges[0]["request"]["body"]["model"] == "zero"
    assert "has no exchanges for trial 2" in (read_trial_exchanges(dest, "test_one.py::shared name", 2).problem or "")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name, dest.name])


# -- the uncut line: one scrub of the whole line (`trial_line`'s shortcut) -------------------------------------
TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"


def _careful_line(case: str, trial: int, exchanges: list[Exchange], credentials: frozenset[bytes] = frozenset()) -> str:
    """The line as it was made before the shortcut: every exchange scrubbed, then the line scrubbed again."""
    from trialrun._scrub import scrub_text
    from trialrun.report.exchanges.format import _dumps
    from trialrun.report.exchanges.lines import _line_extra

    return scrub_text(_dumps(trial_record(case, trial, exchanges, credentials)), _line_extra(exchanges, credentials))


def test_the_uncut_line_is_the_line_every_exchange_scrubbed_first_makes() -> None:
    """Real recorded traffic of every API (JSON, streams, gzip, binary): the shortcut's line is byte for byte the
    one the careful path makes; so nothing it leaves out of the first scrub was doing anything there."""
    from trialrun.models._cassette_io import load_exchanges
    from trialrun.report.exchanges.lines import _uncut, trial_line

    compared = 0
    for cassette in sorted(TRAFFIC.glob("*/*.yaml")):
        try:
            exchanges = load_exchanges(cassette)
        except Exception:  # noqa: BLE001 - a fixture that is not a cassette of exchanges (a notes file)
            continue
        if not exchanges or not _uncut(exchanges, 4 * 2**20):
            continue
        line, problem = trial_line("c", 1, exchanges)
        assert problem is None and line == _careful_line("c", 1, exchanges), cassette.name
        compared += 1
    assert compared >= 20


@pytest.mark.parametrize("before", ["\x01", "\x08", "\x0c", "\x1b", "\n", "\t"])
def test_a_key_after_a_control_character_is_scrubbed_in_the_line(before: str) -> None:
    """In the line a control character is a JSON escape (`\\u001b`, `\\b`) that ends in a letter or digit: still the
    word boundary it was in the text the agent sent."""
    from trialrun.report.exchanges import trial_line

    key = "sk-proj-" + secrets.token_hex(20)
    line, _ = trial_line("c", 1, [_exchange({"model": "m", "messages": [{"role": "user", "content": before + key}]})])
    assert line is not None and key not in line and key[:16] not in line
    assert json.loads(line)["exchanges"][0]["request"]["body"]["messages"][0]["content"] == before + "REDACTED"


def test_a_credential_with_quotes_is_scrubbed_as_the_line_writes_it() -> None:
    """A header credential echoed into a JSON body: the line holds it JSON-escaped (a quote, a backslash), and
    that spelling is removed too."""
    from trialrun.report.exchanges import trial_line

    token = 'tok"' + secrets.token_hex(8) + "\\x"
    exchange = _exchange({"model": "m", "messages": [{"role": "user", "content": f"the token is {token}!"}]},
                         headers={"x-api-key": token, "content-type": "application/json"})
    line, _ = trial_line("c", 1, [exchange])
    assert line is not None and token not in json.loads(line)["exchanges"][0]["request"]["body"]["messages"][0]["content"]
    assert token[4:-2] not in line
    assert json.loads(line)["exchanges"][0]["request"]["headers"]["x-api-key"] == "REDACTED"


def test_a_text_body_is_scrubbed_as_it_was_sent_before_the_line_escapes_it_again() -> None:
    """JSON inside a text body (not a JSON body: a trailing word) is one escape level deeper in the line than a
    name=value rule reads; the text body is scrubbed as sent, so `"api_key": "..."` inside it still goes."""
    from trialrun.report.exchanges import trial_line

    value = secrets.token_hex(12)
    inner = json.dumps({"config": json.dumps({"api_key": value})})
    line, _ = trial_line("c", 1, [_exchange(("payload " + inner).encode(), content_type="text/plain",
                                            response=("echo " + inner).encode())])
    assert line is not None and value not in line
    stored = json.loads(line)["exchanges"][0]
    assert "REDACTED" in stored["request"]["body_text"] and "REDACTED" in stored["response"]["body_text"]


def test_a_trial_whose_bodies_may_be_cut_is_scrubbed_before_it_is_cut() -> None:
    """A body that may be cut takes the careful way: a key where its long string is cut (its first 10 characters
    kept, too few to look like a key) was removed before the cut."""
    from trialrun.report.exchanges.lines import _uncut, trial_line

    key = "sk-proj-" + secrets.token_hex(20)
    exchanges = [_exchange({"model": "m", "content": "p" * (4096 - 11) + " " + key + " " + "q" * BODY_MAX_BYTES})]
    assert not _uncut(exchanges, 4 * 2**20)
    line, _ = trial_line("c", 1, exchanges)
    assert line is not None and "characters cut" in line and key[:10] not in line
