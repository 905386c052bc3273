"""The workspace diff (`_util/workspace_diff.py`): the files a trial left, against what its workdir held when the
agent started. Checked against GNU patch and git (nobody here wrote them): the diff a trial keeps, applied to the
files it started from, gives back exactly the files it left. Binary, large and linked files are named, never
inlined; every bound says what it cut; the result file keeps the diff, scrubbed."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import trialrun as tr
from trialrun._util.workspace import snapshot
from trialrun._util.workspace_diff import FILE_CHARS, NO_NEWLINE, WorkspaceDiff, workspace_diff
from trialrun.report import store


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def _diff(tmp_path: Path, before: dict[str, str | bytes], change: object) -> tuple[WorkspaceDiff, Path]:
    root = tmp_path / "work"
    root.mkdir()
    _write(root, before)
    start = snapshot(root)
    change(root)  # type: ignore[operator]
    return workspace_diff(start, snapshot(root)), root


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_kept_diff_applied_by_gnu_patch_gives_back_the_files_left(tmp_path: Path) -> None:
    before = {"app.py": "def add(a, b):\n    return a - b\n", "keep.txt": "same\n", "gone.txt": "bye\n",
              "no_newline.txt": "last line", "src/deep/mod.py": "x = 1\ny = 2\nz = 3\n" * 20}

    def change(root: Path) -> None:
        _write(root, {"app.py": "def add(a, b):\n    return a + b", "new/added.md": "# hi\nthere\n",
                      "no_newline.txt": "last line\nand one more", "src/deep/mod.py": "x = 1\ny = 20\nz = 3\n" * 20})
        (root / "gone.txt").unlink()

    diff, root = _diff(tmp_path, before, change)
    assert {(f.path, f.change) for f in diff.files} == {("app.py", "changed"), ("new/added.md", "added"),
                                                         ("no_newline.txt", "changed"), ("src/deep/mod.py", "changed"),
                                                         ("gone.txt", "removed")}
    assert diff.unchanged == ["keep.txt"] and diff.examined == 6 and diff.complete
    assert NO_NEWLINE in diff.get("app.py").diff
    replay = tmp_path / "replay"
    replay.mkdir()
    _write(replay, before)
    done = subprocess.run(["patch", "-p1", "-s", "-E"], cwd=replay, input=diff.unified(), text=True,
                          capture_output=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _tree(replay) == _tree(root)


def test_git_apply_reads_the_diff_too(tmp_path: Path) -> None:
    before = {"a.py": "one\ntwo\n"}
    diff, root = _diff(tmp_path, before, lambda r: _write(r, {"a.py": "one\n2\n", "b.py": "new\n"}))
    replay = tmp_path / "replay"
    replay.mkdir()
    _write(replay, before)
    done = subprocess.run(["git", "apply", "--unsafe-paths", "-"], cwd=replay, input=diff.unified(), text=True,
                          capture_output=True)
    assert done.returncode == 0, done.stderr
    assert _tree(replay) == _tree(root)


def test_random_edits_round_trip_through_patch(tmp_path: Path) -> None:
    rng = random.Random(34)
    for round_ in range(12):
        lines = [f"line {rng.randint(0, 9)}\n" for _ in range(rng.randint(0, 40))]
        edited = list(lines)
        for _ in range(rng.randint(1, 6)):
            at = rng.randint(0, len(edited))
            if rng.random() < 0.5 and edited:
                del edited[min(at, len(edited) - 1)]
            else:
                edited.insert(at, f"new {rng.random():.3f}\n")
        if rng.random() < 0.3 and edited:
            edited[-1] = edited[-1].rstrip("\n")
        folder = tmp_path / f"r{round_}"
        folder.mkdir()
        diff, root = _diff(folder, {"f.txt": "".join(lines)}, lambda r: _write(r, {"f.txt": "".join(edited)}))
        replay = folder / "replay"
        replay.mkdir()
        _write(replay, {"f.txt": "".join(lines)})
        if diff.files:
            done = subprocess.run(["patch", "-p1", "-s"], cwd=replay, input=diff.unified(), text=True,
                                  capture_output=True)
            assert done.returncode == 0, done.stdout
        assert (replay / "f.txt").read_text() == "".join(edited)


def test_an_added_file_s_whole_text_is_read_back_from_its_diff(tmp_path: Path) -> None:
    texts = ["", "one line", "a\nb\n", "a\n\n\nb", "ends with blank\n\n", "\\ not a marker\n-x\n+y\n"]
    for number, text in enumerate(texts):
        folder = tmp_path / str(number)
        folder.mkdir()
        diff, _ = _diff(folder, {}, lambda r: _write(r, {"made.txt": text}))
        assert diff.text_after("made.txt") == text
        assert diff.after("made.txt") is True and diff.after("other.txt") is False


def test_binary_large_and_linked_files_are_named_not_inlined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    big = "x" * (600 * 1024)

    def change(root: Path) -> None:
        _write(root, {"img.png": b"\x89PNG\0\1\3", "big.log": big + "y", "notes.txt": "text now\n"})
        os.symlink(outside, root / "link")

    diff, _ = _diff(tmp_path, {"img.png": b"\x89PNG\0\1\2", "big.log": big + "x", "notes.txt": b"\0binary"}, change)
    by = {f.path: f for f in diff.files}
    assert by["img.png"].kind == "binary" and by["img.png"].diff is None and "named, not inlined" in by["img.png"].note
    assert by["big.log"].kind == "large" and by["big.log"].diff is None and "614,401 bytes" in by["big.log"].note
    assert by["link"].kind == "link" and str(outside) in by["link"].note and by["link"].change == "added"
    assert "it was binary before" in by["notes.txt"].note
    assert "secret" not in diff.unified() and big[:100] not in diff.unified()


def test_version_control_and_caches_are_not_examined_and_say_so(tmp_path: Path) -> None:
    def change(root: Path) -> None:
        _write(root, {".git/HEAD": "ref: other\n", "__pycache__/a.pyc": b"\0", "a.py": "b\n"})

    diff, _ = _diff(tmp_path, {".git/HEAD": "ref: main\n", "a.py": "a\n"}, change)
    assert [f.path for f in diff.files] == ["a.py"]
    assert ".git" in diff.not_examined and "__pycache__" in diff.not_examined


def test_each_bound_says_what_it_cut(tmp_path: Path) -> None:
    long_before = "".join(f"line {n}\n" for n in range(5000))
    diff, _ = _diff(tmp_path, {"long.txt": long_before}, lambda r: _write(r, {"long.txt": long_before.replace("line", "LINE")}))
    item = diff.get("long.txt")
    assert len(item.diff) <= FILE_CHARS and item.note.startswith("its diff is ") and "the first" in item.note
    assert item.diff.endswith("\n")  # cut at a line's end

    root = tmp_path / "many"
    root.mkdir()
    start = snapshot(root)
    _write(root, {f"f{n:03}.txt": f"{n}\n" * 3000 for n in range(30)})
    many = workspace_diff(start, snapshot(root), max_listed=20)
    assert len(many.files) == 20 and many.cut == "10 more changed files not listed (the limit is 20)"
    assert not many.complete and many.after("f029.txt") is None
    total = sum(len(f.diff or "") for f in many.files)
    assert total <= 200_000 and any("not inlined" in (f.note or "") or "trial's limit" in (f.note or "")
                                    for f in many.files)


def _run_case(tmp_path: Path, invoke: object) -> tuple[tr.TrialResult, Path]:
    """The trial, and the result file its run was saved to."""
    def setup(ctx: tr.TrialContext) -> None:
        _write(ctx.workdir, {"app.py": "def add(a, b):\n    return a - b\n"})

    report = tr.evaluate([tr.Case("c", invoke, setup=setup, expect_outcome=[tr.expect.changed_only(["app.py"])])])
    return report.cases[0].trials[0], store.ResultsStore(tmp_path / "results").save(report)


def test_the_result_keeps_the_unified_diff_and_a_saved_run_reads_it_back(tmp_path: Path) -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        (ctx.workdir / "app.py").write_text("def add(a, b):\n    return a + b\n")
        return "fixed"

    trial, path = _run_case(tmp_path, invoke)
    saved = json.loads(path.read_text())["cases"][0]["trials"][0]["files"]
    assert saved["files"][0]["path"] == "app.py" and "+    return a + b" in saved["files"][0]["diff"]
    loaded = store.load_report(path).cases[0].trials[0]
    assert loaded.files == trial.files and loaded.as_run().files == trial.files


def test_a_credential_the_agent_wrote_is_scrubbed_from_the_saved_diff(tmp_path: Path) -> None:
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 3

    def invoke(ctx: tr.TrialContext) -> str:
        (ctx.workdir / "app.py").write_text(f"KEY = '{key}'\n")
        return "done"

    _, path = _run_case(tmp_path, invoke)
    assert key not in path.read_text() and "REDACTED" in path.read_text()


def test_a_trial_without_a_workdir_keeps_no_diff_and_a_failed_setup_none(tmp_path: Path) -> None:
    plain = tr.evaluate([tr.Case("plain", lambda ctx: "hi", expect_outcome=[tr.expect.contains("hi")])]).cases[0].trials[0]
    assert plain.files is None

    def bad_setup(ctx: tr.TrialContext) -> None:
        _write(ctx.workdir, {"a.txt": "a"})
        raise RuntimeError("setup broke")

    broken = tr.evaluate([tr.Case("broken", lambda ctx: "hi", setup=bad_setup,
                                      expect_outcome=[tr.expect.contains("hi")])]).cases[0].trials[0]
    assert broken.error.phase == "setup" and broken.files is None


def test_a_workdir_made_during_invoke_starts_empty(tmp_path: Path) -> None:
    def invoke(ctx: tr.TrialContext) -> str:
        (ctx.workdir / "made.txt").write_text("made\n")
        return "ok"

    trial = tr.evaluate([tr.Case("lazy", invoke, expect_outcome=[tr.expect.contains("ok")])]).cases[0].trials[0]
    assert [(f.path, f.change) for f in trial.files.files] == [("made.txt", "added")]


def test_the_diff_is_taken_before_any_grader_runs(tmp_path: Path) -> None:
    """A verify command that writes files (a test's cache, a report) is not what the agent left."""
    def setup(ctx: tr.TrialContext) -> None:
        _write(ctx.workdir, {"t.sh": "echo ok\n"})

    case = tr.Case("c", lambda ctx: "ok", setup=setup,
                   expect_outcome=[tr.expect.verify("sh t.sh > report.txt"), tr.expect.changed_only("nothing.txt")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.files.files == [] and [v.passed for v in trial.verdicts] == [True, True]
    assert shutil.which("patch")  # (the round-trip tests above need GNU patch: installed with the base system)
