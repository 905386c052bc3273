"""A credential registered after some lines of a journal or an exchanges sidecar were written (one that a later
trial's transport first saw; a Ray worker's) is scrubbed from the whole file when it closes
(`_files.LineAppender._close_fd`): the lines written before it never keep it."""

from __future__ import annotations

import json
import os
import secrets
from datetime import datetime, timezone
from pathlib import Path

import trialrun as tr
from trialrun._scrub import add_secret
from trialrun.report.exchanges import ExchangeLog, read_trial_exchanges, trial_line
from trialrun.report.journal import Journal, read_journal
from trialrun.wire import Exchange

CHAT = "https://api.openai.com/v1/chat/completions"


def _exchange(text: str) -> Exchange:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()
    return Exchange("POST", CHAT, {"content-type": "application/json"}, body, 200,
                    {"content-type": "application/json"}, json.dumps({"echo": text}).encode())


def _token() -> str:
    return "late-" + secrets.token_hex(10)  # no key shape: only the registry knows it


def test_a_sidecar_line_written_before_its_credential_was_registered_is_scrubbed_at_close(tmp_path: Path) -> None:
    path = tmp_path / "results_x.exchanges.ndjson"
    token = _token()
    log = ExchangeLog.open(path, run_id="r")
    log.write("c", 1, [_exchange(f"my token is {token}")])
    assert token in path.read_text()  # nothing knew it when the line was written
    assert add_secret(token, source="a test")  # a later trial's transport sees it
    log.write("c", 2, [_exchange("nothing secret")])
    log.close()
    text = path.read_text()
    assert token not in text and "REDACTED" in text
    assert len(text.splitlines()) == 3 and all(json.loads(line) for line in text.splitlines())
    record = read_trial_exchanges(path, "c", 1)
    assert record.found and record.problem is None and "REDACTED" in json.dumps(record.exchanges)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temp file left


def test_a_sidecar_with_nothing_registered_since_is_left_as_written(tmp_path: Path) -> None:
    path = tmp_path / "results_x.exchanges.ndjson"
    log = ExchangeLog.open(path, run_id="r")
    log.write("c", 1, [_exchange("plain text")])
    before, inode = path.read_bytes(), os.stat(path).st_ino
    log.close()
    assert path.read_bytes() == before and os.stat(path).st_ino == inode  # not rewritten


def test_a_line_scrubbed_elsewhere_is_scrubbed_again_with_this_process_s_secrets(tmp_path: Path) -> None:
    """A Ray worker scrubs its trial's line with the credentials it knows; the driver knows others' too."""
    token = _token()
    line, problem = trial_line("c", 1, [_exchange(f"token {token}")], frozenset())
    assert problem is None and line is not None and token in line
    assert add_secret(token, source="another worker")
    path = tmp_path / "results_x.exchanges.ndjson"
    log = ExchangeLog.open(path, run_id="r")
    log.add(line)
    log.close()
    assert token not in path.read_text()


def test_a_kept_journal_never_keeps_a_credential_registered_after_its_lines(tmp_path: Path) -> None:
    token = _token()
    report = tr.evaluate([tr.Case(name="c", invoke=lambda ctx: tr.Run(f"the token {token}"),
                                  expect_outcome=[tr.expect.contains("token")])], trials=1)
    path = tmp_path / "results_x.journal.jsonl"
    journal = Journal(path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666))
    journal.start(run_id="r", started_at=datetime.now(timezone.utc), trial_count=1,
                  cases=[{"name": "c"}], config_snapshot={})
    journal.append("c", report.cases[0].trials[0])
    assert token in path.read_text()
    assert add_secret(token, source="a test")
    journal.close(None)  # given up on: kept for `trialrun recover`
    assert token not in path.read_text()
    recovered = read_journal(path)
    assert recovered.cases[0].trials[0].output == "the token REDACTED"
