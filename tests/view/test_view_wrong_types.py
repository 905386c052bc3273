"""Every field of every file the viewer reads, given a value of the wrong type: the page that reads it says which
file, line and field ("results_X.jsonl line 1: cases must be a list"), the other pages and runs stay browsable,
and nothing answers 500 (before: a journal's `cases: 5` made every page a 500, a live journal's counts as text
too). The files: result files (each field of the run, of a case, of a trial, of its trajectory, of a turn), a run
in progress's journal (each field of its start, trial and end lines) and a run's exchanges sidecar (each field of
its start line, its trial line and an exchange)."""

from __future__ import annotations

import copy
import fcntl
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import starlette  # noqa: F401  # the view extra is in the test extra: these tests run in CI, never skip
from _view_folders import TEST, make_runs, stems


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("wrong-types"))


def _client(results: Path) -> Any:
    from starlette.testclient import TestClient

    from trialrun.view import create_app

    return TestClient(create_app(results), base_url="http://127.0.0.1", raise_server_exceptions=False,
                      follow_redirects=False)


def _wrong(value: Any) -> Any:
    """A value of another JSON type than `value`'s."""
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return "x"
    if isinstance(value, str):
        return 5
    if isinstance(value, (list, dict)):
        return 5
    return ["x"]


def _fields(data: Any, path: tuple[Any, ...] = (), depth: int = 8) -> list[tuple[Any, ...]]:
    """Every field path of `data`: each key of each mapping, the first item of each list, `depth` deep."""
    found: list[tuple[Any, ...]] = []
    if depth and isinstance(data, dict):
        for key, value in data.items():
            found += [(*path, key), *_fields(value, (*path, key), depth - 1)]
    elif depth and isinstance(data, list) and data:
        found += [(*path, 0), *_fields(data[0], (*path, 0), depth - 1)]
    return found


def _set(data: Any, path: tuple[Any, ...], value: Any) -> Any:
    changed = copy.deepcopy(data)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        data = data[key]
    return data


def test_a_result_file_field_of_the_wrong_type_never_breaks_a_page(runs: Path, tmp_path: Path) -> None:
    good, bad = stems(runs)
    original = json.loads((runs / f"{bad}.json").read_text())
    fields = [path for path in _fields(original) if path[0] != "tests"]  # `tests` repeats `cases` (the skill's view)
    assert len(fields) > 100
    results = tmp_path / "eval"
    shutil.copytree(runs, results)
    broken: list[str] = []
    refused = 0
    for path in fields:
        where = ".".join(map(str, path))
        for value in (_wrong(_get(original, path)), None):
            (results / f"{bad}.json").write_text(json.dumps(_set(original, path, value)))
            client = _client(results)
            index = client.get("/")
            if index.status_code != 200:
                broken.append(f"{where}={value!r}: / answered {index.status_code}")
                continue
            named = f"{bad}.json</code>: " in index.text
            if named:  # refused: the runs page says which file and where in it
                refused += 1
                key = str(path[-1])
                if key not in index.text.split(f"{bad}.json</code>: ", 1)[1].split("</li>", 1)[0]:
                    broken.append(f"{where}={value!r}: the note does not name {key!r}")
            for url in (f"/run/{bad}", f"/run/{good}", f"/compare?a={good}&b={bad}", f"/test/{TEST}",
                        f"/diff?test={TEST}&a={good}&b={bad}", f"/trial/{bad}?test={TEST}&trial=1"):
                response = client.get(url)
                if response.status_code >= 500 or (url == f"/run/{good}" and response.status_code != 200):
                    broken.append(f"{where}={value!r}: {url} answered {response.status_code}")
                if named and url == f"/run/{bad}" and f"{bad}.json could not be read" not in response.text:
                    broken.append(f"{where}={value!r}: {url} does not say why")
    assert broken == [], broken
    assert refused > 100  # most wrong types are refused (some are taken: a number where any value is allowed)


# -- a run in progress ----------------------------------------------------------------------------------------
LIVE = "results_29991231_235959"


def _journal(runs: Path) -> list[dict[str, Any]]:
    """The lines a run in progress of the newest run's cases has written so far: start, one trial, no end yet."""
    report = json.loads((runs / f"{stems(runs)[-1]}.json").read_text())
    start = {"event": "start", "journal_version": 1, "schema_version": "1.0", "run_id": "eval_29991231_235959",
             "started_at": "2999-12-31T23:59:59+00:00", "pid": 1, "host": "ci", "trial_count": 2,
             "cases": [{"name": c["name"], "title": None, "description": None, "tags": c["tags"], "mode": c["mode"],
                        "trials": 2, "metadata": c["metadata"]} for c in report["cases"]],
             "config_snapshot": report["config_snapshot"]}
    case = report["cases"][0]
    trial = {"event": "trial", "case": case["name"], "elapsed_s": 0.5, "result": case["trials"][0]}
    return [start, trial, {"event": "end", "status": "completed"}]


#: (line, field) of the journal's lines whose wrong type a live view reads; `result.*`'s rest is read as a run only.
JOURNAL_FIELDS = [(1, ("journal_version",)), (1, ("run_id",)), (1, ("started_at",)), (1, ("trial_count",)),
                  (1, ("cases",)), (1, ("cases", 0)), (1, ("cases", 0, "name")), (1, ("cases", 0, "trials")),
                  (1, ("cases", 0, "tags")), (1, ("cases", 0, "mode")), (1, ("cases", 0, "metadata")),
                  (1, ("config_snapshot",)), (2, ("case",)), (2, ("elapsed_s",)), (2, ("result",)),
                  (2, ("result", "passed")), (2, ("result", "trial")), (3, ("status",))]


@pytest.mark.parametrize("line, path", JOURNAL_FIELDS, ids=[f"line{n}:" + ".".join(map(str, p)) for n, p in JOURNAL_FIELDS])
def test_a_live_journal_field_of_the_wrong_type_is_a_note_on_its_page(runs: Path, tmp_path: Path, line: int,
                                                                       path: tuple[Any, ...]) -> None:
    from _history_runs import _WRITING, end_journal

    results = tmp_path / "eval"
    shutil.copytree(runs, results)
    lines = _journal(runs)
    current = _get(lines[line - 1], path)
    lines[line - 1] = _set(lines[line - 1], path, 5 if current is None else _wrong(current))
    journal = results / f"{LIVE}.jsonl"
    journal.write_text("".join(json.dumps(item) + "\n" for item in lines))
    fd = os.open(journal, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a run is writing it (trialrun.report.journal.is_live)
    _WRITING[journal] = fd
    try:
        client = _client(results)
        field = ".".join(map(str, path))
        note = f"{LIVE}.jsonl line {line}: {field} must be"
        page = client.get(f"/live/{LIVE}")
        assert page.status_code == 200 and note in page.text, page.text[-2000:]
        api = client.get(f"/api/live/{LIVE}")
        assert api.status_code == 200 and any(p.startswith(note) for p in api.json()["problems"]), api.text
        index = client.get("/")
        assert index.status_code == 200 and f'data-live="{LIVE}"' in index.text
        assert client.get(f"/run/{stems(runs)[0]}").status_code == 200  # the other runs stay browsable
    finally:
        end_journal(journal)


# -- the exchanges sidecar ------------------------------------------------------------------------------------
def _sidecar(runs: Path) -> tuple[Path, list[dict[str, Any]], int]:
    """The newest run's sidecar, its lines, and the number of the line of trial 1 of TEST."""
    path = runs / f"{stems(runs)[-1]}.exchanges.ndjson"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    number = next(i for i, line in enumerate(lines) if line.get("case") == TEST and line.get("trial") == 1)
    return path, lines, number


def _sidecar_fields(runs: Path) -> list[tuple[str, tuple[Any, ...]]]:
    _, lines, number = _sidecar(runs)
    exchange = lines[number]["exchanges"][0]
    start = [("start", (key,)) for key in ("exchanges_version", "run_id", "max_trial_bytes", "kept")]
    # (not `case` or `trial`: a line is the trial's by them, so with them wrong it is no line of the trial's)
    trial = [("trial", ("exchanges",)), ("trial", ("exchanges", 0))]
    inside = [("trial", ("exchanges", 0, *p)) for p in _fields(exchange, depth=2)]
    return start + trial + inside


def test_a_sidecar_field_of_the_wrong_type_is_a_note_on_the_trial_page(runs: Path, tmp_path: Path) -> None:
    fields = _sidecar_fields(runs)
    assert len(fields) > 15
    results = tmp_path / "eval"
    shutil.copytree(runs, results)
    path, lines, number = _sidecar(results)
    stem = stems(results)[-1]
    broken: list[str] = []
    for which, field in fields:
        index = 0 if which == "start" else number
        changed = list(lines)
        changed[index] = _set(lines[index], field, _wrong(_get(lines[index], field)))
        path.write_text("".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n"  # as written
                                for line in changed))
        response = _client(results).get(f"/trial/{stem}?test={TEST}&trial=1")
        where = ".".join(map(str, field))
        note = f"{path.name} line {index + 1}: {where} must be"
        if response.status_code != 200:
            broken.append(f"{which} {where}: {response.status_code}")
        elif note not in response.text:
            broken.append(f"{which} {where}: no note {note!r}")
    assert broken == [], broken
