"""The exchanges sidecar's format, shared by what writes it (`log`, `lines`) and what reads it
(`read`): its name, its version, its caps, and how a trial's line starts. The layout itself is described in
`log`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

#: A sidecar's name is its result file's stem with this suffix.
SUFFIX = ".exchanges.ndjson"
EXCHANGES_VERSION = 1
#: The default cap on one trial's stored bodies (`exchanges_max_bytes` in trialrun.toml).
DEFAULT_MAX_TRIAL_BYTES = 4 * 2**20
#: A body above this is shortened even when the trial has room.
BODY_MAX_BYTES = 256 * 2**10
#: What a body keeps once its trial's cap is reached (enough to see what the request was).
BODY_MIN_BYTES = 1024

#: What a sidecar read may hold: a line is one trial's exchanges (its bodies capped by `max_trial_bytes`, 4 MiB by
#: default, then escaped once more as JSON); the file is read a line at a time, so its own size only bounds the scan.
MAX_BYTES = 64 * 2**30
LINE_MAX_BYTES = 256 * 2**20

#: How every trial line starts, and the trial number after its case key (`_head_of`).
_TRIAL_HEAD = b'{"event":"trial","case":'
_TRIAL_NUMBER = re.compile(r',"trial":(\d+),')


def sidecar_path(result: str | os.PathLike[str]) -> Path:
    """The sidecar of a result file (or journal, or stem): `results_<stamp>.exchanges.ndjson` beside it."""
    path = Path(result)
    return path.with_name(path.name.split(".", 1)[0] + SUFFIX)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _line_prefix(case: str, trial: int) -> bytes:
    """How a trial's line starts: a reader finds it without parsing the other trials' (possibly large) lines."""
    return ('{"event":"trial","case":' + _dumps(case) + ',"trial":' + str(int(trial)) + ",").encode("utf-8")


def _head_of(text: str) -> tuple[str, re.Match[str]] | None:
    """The case key of a trial line's text and the match of its trial number (whose end is where the rest of the
    line starts); None when the text does not start as a trial line does."""
    try:
        key, end = json.JSONDecoder().raw_decode(text, len(_TRIAL_HEAD))
    except ValueError:
        return None
    number = _TRIAL_NUMBER.match(text, end)
    return (key, number) if isinstance(key, str) and number is not None else None


def _start_record(run_id: str | None, max_trial_bytes: int) -> dict[str, Any]:
    """A sidecar's start line (as data): one for the log that writes a run's sidecar and for a merge of parts."""
    return {"event": "start", "exchanges_version": EXCHANGES_VERSION, "run_id": run_id,
            "max_trial_bytes": max_trial_bytes, "kept": True}
