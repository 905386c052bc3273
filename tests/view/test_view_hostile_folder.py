"""`trialrun view` over a results folder someone put hostile files in: a FIFO named like a journal, a result file
or a sidecar, and the same names linked to /dev/zero. The real `trialrun view` runs in a process of its own (an
address-space limit of 1.5 GiB, so /dev/zero read whole fails there): every page answers within a second (plus
what an ordinary page takes on the machine at that moment: the test machine is shared), says
which file could not be read and why, and another page is served while it is asked for (before: the FIFO hung the
page and every other page with it, /dev/zero took the viewer to MemoryError)."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import starlette  # noqa: F401  # the view extra is in the test extra: these tests run in CI, never skip
from _view_folders import TEST, make_runs, release_fifo, stems, view_process

FIFO_JOURNAL = "results_20990101_000001"
ZERO_JOURNAL = "results_20990101_000002"
FIFO_RESULT = "results_20990101_000003"
ZERO_RESULT = "results_20990101_000004"
FIFO = "is a FIFO (named pipe), not a regular file"
DEVICE = "is a character device, not a regular file"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(tmp_path_factory.mktemp("hostile-view"))


def _plant(results: Path, kind: str) -> None:
    """Put one hostile file in `results`: a FIFO, or a symlink to /dev/zero, named as `kind` says."""
    first, second = stems(results)
    name = {"FIFO journal": f"{FIFO_JOURNAL}.jsonl", "/dev/zero journal": f"{ZERO_JOURNAL}.jsonl",
            "FIFO result file": f"{FIFO_RESULT}.json", "/dev/zero result file": f"{ZERO_RESULT}.json",
            "FIFO sidecar": f"{first}.exchanges.ndjson", "/dev/zero sidecar": f"{second}.exchanges.ndjson"}[kind]
    (results / name).unlink(missing_ok=True)
    if kind.startswith("FIFO"):
        os.mkfifo(results / name)
    else:
        os.symlink("/dev/zero", results / name)


def _pages(results: Path, kind: str) -> list[tuple[str, list[str]]]:
    """The pages that read the hostile file of `kind`, and what each must say about it."""
    first, second = stems(results)
    trial = f"?test={TEST}&trial=1"
    return {
        "FIFO journal": [("/", [f"{FIFO_JOURNAL}.jsonl</code>: {FIFO}"]),
                         (f"/live/{FIFO_JOURNAL}", [f"{FIFO_JOURNAL}.jsonl could not be read: {FIFO}"]),
                         (f"/api/live/{FIFO_JOURNAL}", [f"{FIFO_JOURNAL}.jsonl: {FIFO}"]),
                         (f"/run/{FIFO_JOURNAL}", [f"{FIFO_JOURNAL}.jsonl could not be read: {FIFO}"])],
        "/dev/zero journal": [("/", [f"{ZERO_JOURNAL}.jsonl</code>: {DEVICE}"]),
                              (f"/live/{ZERO_JOURNAL}", [f"{ZERO_JOURNAL}.jsonl could not be read: {DEVICE}"]),
                              (f"/api/live/{ZERO_JOURNAL}", [f"{ZERO_JOURNAL}.jsonl: {DEVICE}"])],
        "FIFO result file": [("/", [f"{FIFO_RESULT}.json</code>: {FIFO}"]),
                             (f"/run/{FIFO_RESULT}", [f"{FIFO_RESULT}.json could not be read: {FIFO}"])],
        "/dev/zero result file": [("/", [f"{ZERO_RESULT}.json</code>: {DEVICE}"]),
                                  (f"/run/{ZERO_RESULT}", [f"{ZERO_RESULT}.json could not be read: {DEVICE}"])],
        "FIFO sidecar": [(f"/trial/{first}{trial}", [f"{first}.exchanges.ndjson: {FIFO}"])],
        "/dev/zero sidecar": [(f"/trial/{second}{trial}", [f"{second}.exchanges.ndjson: {DEVICE}"])],
    }[kind]


KINDS = ["FIFO journal", "/dev/zero journal", "FIFO result file", "/dev/zero result file", "FIFO sidecar",
         "/dev/zero sidecar"]


def _ask(base: str, path: str, answers: dict[str, tuple[float, httpx.Response | Exception]], name: str) -> None:
    started = time.monotonic()
    try:
        answer: httpx.Response | Exception = httpx.get(base + path, timeout=3)
    except httpx.HTTPError as exc:
        answer = exc
    answers[name] = (time.monotonic() - started, answer)


@pytest.mark.parametrize("kind", KINDS)
def test_a_page_beside_a_fifo_or_dev_zero_answers_within_a_second_and_names_the_file(
        runs: Path, tmp_path: Path, kind: str) -> None:
    results = tmp_path / "eval"
    shutil.copytree(runs, results, symlinks=True)
    _plant(results, kind)
    other_url = f"/run/{stems(results)[0]}"
    try:
        with view_process(results) as (base, process):
            for url, wanted in _pages(results, kind):
                answers: dict[str, tuple[float, httpx.Response | Exception]] = {}
                _ask(base, other_url, answers, "alone")  # what a page takes on this (shared, maybe busy) machine
                bound = 1.0 + answers.pop("alone")[0]
                hostile = threading.Thread(target=_ask, args=(base, url, answers, "hostile"))
                hostile.start()
                time.sleep(0.2)  # the hostile page is being made: another page must be served meanwhile
                _ask(base, other_url, answers, "other")
                hostile.join(5)
                assert "hostile" in answers, f"{url} did not answer within 5 s"
                for name in ("hostile", "other"):
                    elapsed, response = answers[name]
                    assert isinstance(response, httpx.Response), f"{name} page ({url}): {response!r}"
                    assert elapsed < bound, f"{name} page ({url}) took {elapsed:.2f} s (bound {bound:.2f} s)"
                    assert response.status_code < 500, (url, response.text[:2000])
                assert answers["other"][1].status_code == 200  # type: ignore[union-attr]
                text = answers["hostile"][1].text  # type: ignore[union-attr]
                for needle in wanted:
                    assert needle in text, (url, needle, text[-3000:])
                assert process.poll() is None  # still serving (no MemoryError took it down)
    finally:
        for path in results.iterdir():  # a viewer blocked on a FIFO (before the fix) can then be stopped
            if path.is_fifo():
                release_fifo(path)


def test_a_slow_file_never_holds_up_the_other_pages(runs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The viewer reads files in threads, never on its event loop: while one page waits 1.5 s on a journal (a slow
    disk, a network file system; here the journal reader made slow), the other pages are served at once (before:
    every page waited for it)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render"))
    from _history_runs import served

    from trialrun.view import _pages as view  # the viewer's handlers (trialrun.view assembles them)

    results = tmp_path / "eval"
    shutil.copytree(runs, results, symlinks=True)
    slow_journal = results / f"{FIFO_JOURNAL}.jsonl"
    slow_journal.write_text("")  # a journal; reading it (for its live page) is what is slow
    real = view.read_journal

    def slow(path: Path) -> Any:
        if path == slow_journal:
            time.sleep(1.5)
        return real(path)

    monkeypatch.setattr(view, "read_journal", slow)
    with served(results) as base:
        answers: dict[str, tuple[float, httpx.Response | Exception]] = {}
        waiting = threading.Thread(target=_ask, args=(base, f"/live/{FIFO_JOURNAL}", answers, "slow"))
        waiting.start()
        time.sleep(0.2)
        for name, url in (("runs", "/"), ("run", f"/run/{stems(results)[0]}"), ("api", "/api/live/none")):
            _ask(base, url, answers, name)
        waiting.join(10)
        for name in ("runs", "run", "api"):
            elapsed, response = answers[name]
            assert isinstance(response, httpx.Response) and response.status_code == 200, (name, response)
            assert elapsed < 1.0, f"{name} took {elapsed:.2f} s while another page read a slow file"
        elapsed, response = answers["slow"]
        assert isinstance(response, httpx.Response) and elapsed >= 1.5  # it did wait for its file
