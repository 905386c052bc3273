"""The exchanges sidecar: each trial's raw HTTP exchanges with the model, scrubbed and capped, beside its result file.

A result file keeps the trajectory read from the traffic; `results_<stamp>.exchanges.ndjson` keeps the traffic
itself, for `trialrun view` to show under each turn (`.ndjson`, not `.jsonl`: `results_*.jsonl` is a run's
journal, and what looks for unfinished runs looks for those). JSON Lines (UTF-8), one object a line, each written in one
`write` as its trial finishes, so a run killed outright keeps every finished trial's exchanges (as the journal
keeps its results); nothing is held for the whole run:

    {"event": "start", "exchanges_version": 1, "run_id": "eval_...", "max_trial_bytes": 4194304, "kept": true}
    {"event": "trial", "case": "read-file", "trial": 1, "exchanges": [
        {"n": 1, "request": {"method": "POST", "url": ..., "headers": {...}, "body": {...}},
         "response": {"status": 200, "headers": {...}, "stream": "event: ...\\n\\n"},
         "cut": {"request": "... bytes cut ..."}}]}

Requests and responses use the cassette layout (`_cassette_io.exchange_to_dict`: `body` for JSON, `stream` for
server-sent events, `body_text`, `body_base64`). `n` is the number `Turn.exchange` refers to. Every line is scrubbed
whole as it is made, as the journal's are (a JSON body is stored as data, so a key its text wrote with escapes,
`\\u0073k-...`, is plain only in the line), with credential headers REDACTED and response headers cut to an
allow-list before. A trial with a body that may be cut has every exchange scrubbed first
(`models.cassette.scrub_exchange`, a stream after reassembly) BEFORE anything is cut, so a cut never leaves half a
key behind; one whose bodies all fit (the common case) has only its streams and text bodies scrubbed first (the line
escapes them once more than they were sent), its JSON bodies by the line's scrub alone. The line is made where the
trial ran (`trial_line`): a trial on a Ray worker sends back its line, never its raw exchanges.

Caps (real coding agents send 100 KB+ requests, 50 times a trial): a body above `BODY_MAX_BYTES` is shortened,
JSON by cutting its long strings (the model, the tool schemas and the message structure stay readable), anything
else after its first bytes; once a trial's bodies reach `max_trial_bytes`, each further body keeps its first
`BODY_MIN_BYTES`. Every cut says how much was cut and why (`cut`), never silently.
"

Where the exchanges go, in the order of the data flow: a trial's line is made where the trial ran, by the run's log
or on a Ray worker (`lines`, in the format's shared parts: `format`); the line is written to the run's sidecar, or a
pytest session's parts are merged into one, or the sidecar is copied for `trialrun regrade` (`log`); it is read back
for a page (`read`), and shown under each turn by `render.exchanges` (a renderer, on its own floor) and kept per
pytest item by `pytest_plugin._exchanges`. Every public name is importable from here.
"""

from __future__ import annotations

from .format import BODY_MAX_BYTES, BODY_MIN_BYTES, DEFAULT_MAX_TRIAL_BYTES, EXCHANGES_VERSION, SUFFIX, sidecar_path
from .lines import TrialLine, trial_line, trial_record
from .log import ExchangeLog, copy_sidecar, merge_parts
from .read import SidecarIndex, TrialExchanges, read_trial_exchanges

__all__ = ["SUFFIX", "EXCHANGES_VERSION", "DEFAULT_MAX_TRIAL_BYTES", "BODY_MAX_BYTES", "BODY_MIN_BYTES",
           "ExchangeLog", "TrialLine", "TrialExchanges", "sidecar_path", "trial_record", "trial_line",
           "read_trial_exchanges", "merge_parts", "copy_sidecar", "SidecarIndex"]
