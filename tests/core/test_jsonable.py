"""`jsonable`: what a report keeps of an output or a call's arguments (JSON-safe, a copy, round-trips)."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path

from trialrun.report.results import jsonable


class Level(enum.IntEnum):
    LOW = 1


class Key(str):
    pass


def test_plain_values_are_kept_and_containers_copied() -> None:
    inner = {"path": "a.txt", "n": 2, "ok": True, "none": None}
    value = {"args": inner, "list": [inner]}
    copied = jsonable(value)
    assert copied == value and copied is not value and copied["args"] is not inner and copied["list"][0] is not inner


def test_what_json_cannot_hold_becomes_what_it_can() -> None:
    value = {Key("k"): Level.LOW, 3: (1, 2), "nan": math.nan, "inf": [math.inf, -math.inf], "set": {3, 1},
             "path": Path("/tmp/x"), "bytes": b"x"}
    copied = jsonable(value)
    assert [type(key) for key in copied] == [str] * 7  # a str subclass key and an int key become plain text
    assert copied == {"k": Level.LOW, "3": [1, 2], "nan": "nan", "inf": ["inf", "-inf"], "set": [1, 3],
                      "path": "/tmp/x", "bytes": "b'x'"}
    assert json.loads(json.dumps(copied)) == {**copied, "k": 1}
