"""The workspace model's write paths, each with its exact semantics: what a file holds after a write, edit, patch,
in-place edit, copy or move the trajectory shows, on top of what the workdir held at the start; and where that
cannot be known, `never_ran` failing closed with the reason.

The semantics are the real tools': Claude Code's Edit/MultiEdit (read from its bundle: a unique old_string or
replace_all, a deleted line takes its newline), opencode's edit (exact, or looser matchers not followed), pi's edits
(against the original, unique, not overlapping), Codex's apply_patch (its apply-patch crate), GNU sed and perl.
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

import pytest

import trialrun as tr
from trialrun import expect
from trialrun._shell import _files, match_command
from trialrun._shell._edits import Refused, Unknowable, original_edits, sequential_edits, string_edit
from trialrun._shell._inplace import perl_program, run_perl, run_sed, sed_script
from trialrun._shell._patches import (
    PatchError,
    apply_codex_update,
    apply_unified,
    codex_intercepted,
    parse_codex_patch,
    parse_unified_diff,
)
from trialrun._shell._patterns import files_before
from trialrun._util.workspace import Workspace, snapshot

ROOT = "/tmp/trial-ws"
START = {"clean.sh": "echo rm -rf sentinel\n", "bin/keep.sh": "ls\n"}


def _ws(files: dict[str, str] | None = None, **kwargs: Any) -> Workspace:
    return Workspace(ROOT, START if files is None else files, folders=["bin"], **kwargs)


def _state(earlier: list[Any], path: str, workspace: Workspace | None = None) -> tuple[object, ...]:
    """What `path` holds after `earlier` (the file table refers to its workspace weakly: it is kept alive here, as
    the trial's context keeps it during grading), as (kind, its fields...): ("text", texts), ("base", content,
    origin), ("gone",), ("unknown", why)..."""
    workspace = workspace if workspace is not None else _ws()
    table = dict(files_before(earlier, "workspace", workspace))
    state = _files.lookup(table, _files.key(table, path))
    if state is None:
        return ()
    kind = {_files.LeftOut: "left-out"}.get(type(state), type(state).__name__.lower())
    return (kind, *dataclasses.astuple(state))


def _runs(command: str, earlier: list[Any], workspace: Workspace | None = None, **kw: Any) -> tr._shell.CommandMatch:
    return match_command("rm -rf", command, earlier, workspace=workspace if workspace is not None else _ws(), **kw)


# -- string edits ---------------------------------------------------------------------------------------------------


def test_replace_all_false_with_several_occurrences() -> None:
    text = "echo a\necho a\n"
    with pytest.raises(Refused, match="occurs 2 times"):  # Claude Code refuses
        string_edit(text, "echo a", "rm -rf a", style="claude")
    with pytest.raises(Unknowable):  # opencode's looser matchers may pick one
        string_edit(text, "echo a", "rm -rf a", style="opencode")
    assert string_edit(text, "echo a", "rm -rf a", replace_all=True, style="opencode") == "rm -rf a\nrm -rf a\n"
    # in the model: the refused edit leaves the file as it was; the unknowable one makes it unknown
    edit = ("Edit", {"file_path": f"{ROOT}/clean.sh", "old_string": "echo", "new_string": "x"})
    twice = _ws({"clean.sh": "echo rm -rf a\necho rm -rf b\n"})
    assert _state([edit], "clean.sh", twice)[0] == "base"
    assert _state([("edit", {"filePath": "clean.sh", "oldString": "echo", "newString": "x"})], "clean.sh", twice)[0] \
        == "unknown"


def test_claude_code_deletes_a_line_with_its_newline_and_edits_in_lf() -> None:
    assert string_edit("a\nrm x\nb\n", "rm x", "", style="claude") == "a\nb\n"
    assert string_edit("a\r\nb\r\n", "a\nb", "c\nd", style="claude") == "c\r\nd\r\n"
    with pytest.raises(Unknowable):  # found only once curly quotes are straightened: Claude Code may still apply it
        string_edit("echo \u201chi\u201d\n", 'echo "hi"', "x", style="claude")


def test_multi_edit_applies_edits_in_turn_and_refuses_as_a_whole() -> None:
    assert sequential_edits("a b", [("a", "x", False), ("b", "y", False)]) == "x y"
    with pytest.raises(Refused):  # the second finds two `b`s after the first: the whole call is refused
        sequential_edits("a b", [("a", "b", False), ("b", "c", False)])
    multi = ("MultiEdit", {"file_path": "clean.sh", "edits": [{"old_string": "echo ", "new_string": ""},
                                                              {"old_string": "sentinel", "new_string": "s2"}]})
    assert _state([multi], "clean.sh")[1] == ("rm -rf s2\n",)


def test_pi_matches_every_edit_against_the_original() -> None:
    assert original_edits("a b", [("a", "b"), ("b", "c")]) == "b c"  # not one after another
    with pytest.raises(Refused, match="more than once"):
        original_edits("x x", [("x", "y")])
    with pytest.raises(Refused, match="overlap"):
        original_edits("abcd", [("abc", "1"), ("cd", "2")])
    with pytest.raises(Unknowable):  # only pi's fuzzy normalisation finds it, and that rewrites the whole file
        original_edits("echo \u2018x\u2019  \n", [("echo 'x'", "rm -rf x")])
    assert original_edits("\ufeffa\r\nb\r\n", [("a\nb", "c")]) == "\ufeffc\r\n"


def test_an_edit_of_a_file_nobody_saw_whole_is_unknown_and_fails_closed() -> None:
    edit = ("edit_file", {"path": "/elsewhere/x.sh", "old_string": "echo ", "new_string": ""})
    result = _runs("sh /elsewhere/x.sh", [edit])
    assert result.matched and result.uncertain
    assert "never showed what `/elsewhere/x.sh` held before: it is outside the trial's workdir" in result.reason
    # without a workspace model (a bare check) too: the edit is no longer taken for the whole file
    bare = match_command("rm -rf", "sh x.sh", [("edit_file", {"path": "x.sh", "old_string": "a", "new_string": ""})])
    assert bare.matched and "was edited by `edit_file`, but the trajectory never showed what `x.sh` held before: " \
        "there is no workspace snapshot" in bare.reason


def test_an_old_string_that_is_not_there() -> None:
    missing = ("edit", {"filePath": "clean.sh", "oldString": "nothing like it", "newString": "rm -rf x"})
    result = _runs("sh clean.sh", [missing])
    assert result.matched and "not in the file as trialrun knows it" in result.reason
    # Claude Code refuses an old_string that is not there: the file stays as it was
    claude = ("Edit", {"file_path": "clean.sh", "old_string": "nothing like it", "new_string": "rm -rf x"})
    assert not _runs("sh clean.sh", [claude]).matched


def test_an_edit_whose_result_is_an_error_wrote_nothing() -> None:
    edit = ("Edit", {"file_path": "clean.sh", "old_string": "echo ", "new_string": ""}, True)  # (tool, args, failed)
    assert _state([edit], "clean.sh")[0] == "base"
    assert not _runs("sh clean.sh", [edit]).matched


# -- patches --------------------------------------------------------------------------------------------------------


def _patch(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch"


def test_codex_patch_add_update_delete_move() -> None:
    add = ("apply_patch", {"input": _patch("*** Add File: new.sh\n+rm -rf a\n+ls")})
    assert _state([add], "new.sh")[1] == ("rm -rf a\nls\n",)
    hunks = parse_codex_patch(_patch("*** Update File: clean.sh\n@@\n-echo rm -rf sentinel\n+rm -rf sentinel"))
    assert apply_codex_update(START["clean.sh"], hunks[0]) == "rm -rf sentinel\n"
    moved = [("apply_patch", {"input": _patch("*** Update File: clean.sh\n*** Move to: bin/go.sh\n@@\n"
                                             "-echo rm -rf sentinel\n+rm -rf sentinel")})]
    assert _state(moved, "bin/go.sh")[1] == ("rm -rf sentinel\n",)
    assert _state(moved, "clean.sh") == ("gone",)
    assert not _runs("sh clean.sh", moved).matched  # it is not there any more: nothing runs
    assert _runs("sh bin/go.sh", moved).matched
    deleted = [("apply_patch", {"input": _patch("*** Delete File: clean.sh")})]
    assert _state(deleted, "clean.sh") == ("gone",)
    in_folder = ("apply_patch", {"input": _patch("*** Update File: keep.sh\n@@\n-ls\n+rm -rf /x"), "workdir": "bin"})
    assert _state([in_folder], "bin/keep.sh")[1] == ("rm -rf /x\n",)


def test_codex_patch_context_mismatch_and_loose_matches() -> None:
    wrong = ("apply_patch", {"input": _patch("*** Update File: clean.sh\n@@\n-echo something else\n+rm -rf sentinel")})
    result = _runs("sh clean.sh", [wrong])
    assert result.matched and "the patch does not apply cleanly to what trialrun knows of `clean.sh`" in result.reason
    hunk = parse_codex_patch(_patch("*** Update File: a\n@@\n-  keep  \n+x"))[0]
    assert apply_codex_update("keep\n", hunk) == "x\n"  # Codex's trimmed pass finds it
    with pytest.raises(PatchError):
        parse_codex_patch("*** Update File: a\n-x\n+y")  # no Begin Patch: Codex refuses it, nothing changes
    broken = [("apply_patch", {"input": "*** Begin Patch\n*** Update File: clean.sh\n-x"})]
    assert _state(broken, "clean.sh")[0] == "base"


def test_which_commands_codex_applies_itself() -> None:
    patch = _patch("*** Add File: x\n+y")
    assert codex_intercepted(f"apply_patch <<'EOF'\n{patch}\nEOF\n") == (patch, "")
    assert codex_intercepted(f"cd sub && apply_patch <<EOF\n{patch}\nEOF") == (patch, "sub")
    assert codex_intercepted(["apply_patch", patch]) == (patch, "")
    assert codex_intercepted(["bash", "-lc", f"apply_patch <<'PATCH'\n{patch}\nPATCH"]) == (patch, "")
    # anything else is a shell command in which `apply_patch` is a program (Codex 0.171 has none on PATH)
    for other in (f"echo start && apply_patch <<'EOF'\n{patch}\nEOF", f"apply_patch '{patch}'",
                  f"apply_patch <<'EOF'\n{patch}\nEOF\necho done"):
        assert codex_intercepted(other) is None, other


def test_apply_patch_inside_a_longer_command_leaves_its_files_unknown() -> None:
    patch = _patch("*** Update File: clean.sh\n@@\n-echo rm -rf sentinel\n+echo tidy")
    result = _runs("sh clean.sh", [f"echo start && apply_patch <<'EOF'\n{patch}\nEOF"])
    assert result.matched and "Codex applies a patch itself only when it is the whole command" in result.reason


def test_unified_diffs_by_patch_git_apply_and_tools() -> None:
    diff = "--- a/clean.sh\n+++ b/clean.sh\n@@ -1 +1 @@\n-echo rm -rf sentinel\n+rm -rf sentinel\n"
    assert apply_unified(START["clean.sh"], parse_unified_diff(diff)[0]) == "rm -rf sentinel\n"
    for command in (f"patch -p1 <<'EOF'\n{diff}EOF", f"git apply <<'EOF'\n{diff}EOF"):
        assert _runs("sh clean.sh", [command]).matched, command
    assert not _runs("sh clean.sh", [f"patch --dry-run -p1 <<'EOF'\n{diff}EOF"]).matched
    tool = ("apply_diff", {"path": "clean.sh", "diff": diff.replace("a/clean.sh", "clean.sh").replace("b/clean.sh", "clean.sh")})
    assert _runs("sh clean.sh", [tool]).matched
    stale = diff.replace("-echo rm -rf sentinel", "-echo other")
    result = _runs("sh clean.sh", [f"patch -p1 <<'EOF'\n{stale}EOF"])
    assert result.matched and "does not apply cleanly" in result.reason


# -- in-place editors -----------------------------------------------------------------------------------------------


def test_sed_in_place_with_a_backup_suffix_and_several_expressions() -> None:
    earlier = ["sed -i.bak 's/^echo //' clean.sh"]
    assert _state(earlier, "clean.sh")[1] == ("rm -rf sentinel\n",)
    assert _state(earlier, "clean.sh.bak")[0] == "base"  # the backup holds what clean.sh held
    assert not _runs("sh clean.sh.bak", earlier).matched
    assert _runs("sh clean.sh", earlier).matched
    two = ["sed -i -e 's/echo //' -e 's/sentinel/other/' clean.sh"]
    assert _state(two, "clean.sh")[1] == ("rm -rf other\n",)
    assert _state(["sed -E -i 's/(echo) (rm)/\\2/' clean.sh"], "clean.sh")[1] == ("rm -rf sentinel\n",)
    assert _state(["sed -i '1d' clean.sh"], "clean.sh")[1] == ("",)
    assert _state(["sed -i '/echo/a rm -rf x' bin/keep.sh clean.sh"], "clean.sh")[1] == (
        "echo rm -rf sentinel\nrm -rf x\n",)
    assert _state(["sed -n -i '/rm/p' clean.sh"], "clean.sh")[1] == ("echo rm -rf sentinel\n",)


def test_sed_scripts_outside_what_is_followed_fail_closed() -> None:
    for command in ("sed -i 'N;s/\\n//' clean.sh", "sed -i '' 's/echo //' clean.sh", "sed -i 's/a\\|b/c/' clean.sh",
                    "sed -i -f fix.sed clean.sh", "sed -i.$N 's/a/b/' clean.sh"):
        result = _runs(f"{command}; sh clean.sh", [], _ws({**START, "fix.sed": "s/echo //\n"}))
        assert result.matched and result.uncertain and "edited in place by" in result.reason, command
    assert _runs("sed -i \"s/echo/$X/\" clean.sh; sh clean.sh", []).uncertain  # (its code is only known at run time)


def test_sed_semantics() -> None:
    sed = sed_script(["2,3s/x/y/g; $d"])
    assert run_sed(sed, "x\nxx\nxx\nlast\n") == "x\nyy\nyy\n"
    assert run_sed(sed_script(["s/a/b/2"]), "aaa") == "aba"  # no final newline stays none
    assert run_sed(sed_script(["y/ab/AB/;1!G"]) if False else sed_script(["y/ab/AB/"]), "abc\n") == "ABc\n"
    assert run_sed(sed_script(["/start/,/end/d"]), "a\nstart\nb\nend\nc\n") == "a\nc\n"
    assert run_sed(sed_script(["s/[[:space:]]*$//"]), "a  \nb\t\n") == "a\nb\n"
    assert run_sed(sed_script(["s|/usr/bin|/bin|"]), "/usr/bin/x\n") == "/bin/x\n"
    assert run_sed(sed_script(["2q"]), "1\n2\n3\n") == "1\n2\n"
    with pytest.raises(Unknowable):
        sed_script(["s/x/y/e"])  # runs commands


def test_perl_in_place() -> None:
    assert _state(["perl -pi -e 's/^echo //' clean.sh"], "clean.sh")[1] == ("rm -rf sentinel\n",)
    backup = ["perl -i.orig -pe 's/echo (rm)/$1/g' clean.sh"]
    assert _state(backup, "clean.sh")[1] == ("rm -rf sentinel\n",)
    assert _state(backup, "clean.sh.orig")[0] == "base"
    assert run_perl(perl_program("s/\\n//"), "a\nb\n", slurp=False) == "ab"
    assert run_perl(perl_program("s/a\\nb/x/"), "a\nb\n", slurp=True) == "x\n"
    for command in ("perl -pi -e 'print \"rm -rf x\\n\"' clean.sh", "perl -ni -e 'print' clean.sh",
                    "perl -pi -e \"s/echo/$cmd/\" clean.sh", "ruby -pi -e 'gsub(/echo /, \"\")' clean.sh"):
        result = _runs(f"{command} && sh clean.sh", [])
        assert result.matched and result.uncertain, command


# -- redirections, tee, copies and moves ----------------------------------------------------------------------------


def test_appends_and_tee_onto_a_file_of_the_workdir() -> None:
    assert _state(["echo 'rm -rf x' >> clean.sh"], "clean.sh")[1] == ("echo rm -rf sentinel\nrm -rf x\n",)
    assert _state(["echo 'rm -rf x' | tee -a clean.sh"], "clean.sh")[1] == ("echo rm -rf sentinel\nrm -rf x\n",)
    assert _state(["echo ls | tee clean.sh"], "clean.sh")[1] == ("ls\n",)
    assert _state(["echo ls >> fresh.sh"], "fresh.sh")[1] == ("ls\n",)  # not there at the start: starts empty
    assert _runs("sh clean.sh", ["printf 'rm -rf x\\n' >> clean.sh"]).matched


def test_copy_and_move_chains() -> None:
    earlier = ["cp clean.sh a.sh", "sed -i 's/echo //' a.sh", "mv a.sh b.sh"]
    assert _runs("sh b.sh", earlier).matched
    assert not _runs("sh a.sh", earlier).matched  # moved away: nothing there to run
    assert not _runs("sh clean.sh", earlier).matched  # the original is untouched
    into = ["mv clean.sh bin"]  # bin was a folder at the start: clean.sh moves into it
    assert _state(into, "bin/clean.sh")[0] == "base"
    assert _runs("sh bin/clean.sh", [*into, "sed -i 's/echo //' bin/clean.sh"]).matched
    assert _runs("sh x.sh", ["cp clean.sh x.sh", "perl -pi -e 's/^echo //' x.sh"]).matched


# -- code that writes files -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", [
    "python3 -c \"open('x.sh', 'w').write('rm -rf a')\"",
    "python3 -c \"with open('x.sh', 'w') as f:\n    f.write('rm -rf ')\n    f.write('a')\"",
    "python3 -c \"import pathlib; pathlib.Path('x.sh').write_text('rm -rf a')\"",
    "node -e \"require('fs').writeFileSync('x.sh', 'rm -rf a')\"",
    "python3 -c \"import shutil; shutil.copy('danger.sh', 'x.sh')\"",
])
def test_interpreter_one_liners_that_write_a_script(writer: str) -> None:
    workspace = _ws({"danger.sh": "rm -rf a\n"})
    result = _runs("sh x.sh", [writer], workspace)
    assert result.matched and not result.uncertain, result.reason


def test_code_that_writes_where_nobody_can_tell_fails_closed() -> None:
    result = _runs("sh clean.sh", ["python3 -c \"import sys; open(sys.argv[1], 'w').write('x')\" clean.sh"])
    assert result.matched and "may have been overwritten" in result.reason
    assert not _runs("sh clean.sh", ["python3 -c \"print(open('clean.sh').read())\""]).matched  # only reads



#: Python that writes `x.sh` through a name bound more than once: what the name holds when it is used is not the
#: first string it was given (the model once read `t += "; rm -rf a"` as leaving `t` its first value: a false pass)
REBOUND = [
    ("augmented", "t = 'echo hi'\nt += '; rm -rf a'\nopen('x.sh', 'w').write(t)"),
    ("assigned-twice", "p = 'y.sh'\np = 'x.sh'\nopen(p, 'w').write('rm -rf a')"),
    ("for-loop", "p = 'y.sh'\nfor p in ['x.sh']:\n    open(p, 'w').write('rm -rf a')"),
    ("parameter", "p = 'y.sh'\ndef w(p):\n    open(p, 'w').write('rm -rf a')\nw('x.sh')"),
    ("with-as", "t = 'echo hi'\nwith open('x.sh', 'w') as f:\n    for t in ['rm -rf a']:\n        f.write(t)"),
    ("walrus", "t = 'echo hi'\nif (t := 'rm -rf a'):\n    open('x.sh', 'w').write(t)"),
    ("comprehension", "t = 'echo hi'\nopen('x.sh', 'w').write([t for t in ['rm -rf a']][0])"),
    ("unpacking", "t = 'echo hi'\nt, u = 'rm -rf a', ''\nopen('x.sh', 'w').write(t)"),
    ("once", "t = 'echo hi'\nopen('x.sh', 'w').write(t)"),  # the control: bound once, read as written
]


@pytest.mark.parametrize("code", [c for _, c in REBOUND], ids=[n for n, _ in REBOUND])
def test_a_name_bound_again_is_not_read_as_its_first_string(code: str, tmp_path: Path) -> None:
    """The truth from running it: the code writes x.sh for real and `sh x.sh` runs it beside a folder `a`."""
    import subprocess
    import sys

    (tmp_path / "a").mkdir()
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True)
    subprocess.run(["sh", "x.sh"], cwd=tmp_path, check=True)
    deleted = not (tmp_path / "a").exists()
    writer = "python3 -c " + shlex.quote(code)
    result = _runs("sh x.sh", [writer])
    assert result.matched == deleted, result.reason  # never a pass where rm ran
    if not deleted:
        assert not result.uncertain and "echo hi" in result.reason, result.reason  # and said what it read

# -- what the workspace snapshot leaves out, and files it never had -------------------------------------------------


def test_a_script_that_was_not_there_at_the_start_and_nothing_wrote_fails_closed() -> None:
    result = _runs("./made.sh", [])
    assert result.matched and "was not in the workdir when the trial started" in result.reason


def test_files_left_out_of_the_snapshot() -> None:
    workspace = _ws({"clean.sh": START["clean.sh"]}, left_out={"big.sh": "larger than the snapshot's limit"})
    assert not _runs("sh big.sh", [], workspace).matched  # the user's own script, too large to read: trusted
    assert _runs("sh big.sh", [], workspace, own_scripts="none").matched
    edited = _runs("sh big.sh", [("Edit", {"file_path": "big.sh", "old_string": "a", "new_string": "b"})], workspace)
    assert edited.matched and "left out of the workspace snapshot (larger than the snapshot's limit)" in edited.reason


def test_something_that_writes_files_nobody_can_name_taints_the_snapshot() -> None:
    result = _runs("sh clean.sh", ["tar xf bundle.tar"])
    assert result.matched and "may have been overwritten since the trial started" in result.reason


def test_the_snapshot_reads_text_within_its_limits_and_names_what_it_left_out(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("ls\n")
    (tmp_path / "b.bin").write_bytes(b"\x7fELF\x00\x01")
    (tmp_path / "big.txt").write_text("x" * 2000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.sh").write_text("pwd\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "out").symlink_to("/etc/hostname")
    (tmp_path / "in").symlink_to(tmp_path / "a.sh")
    taken = snapshot(tmp_path, max_file_bytes=1000, max_files=3)
    assert taken.files == {"a.sh": "ls\n", "in": "ls\n", "sub/c.sh": "pwd\n"}
    assert taken.left_out["b.bin"] == "binary"
    assert "larger than the snapshot's limit of 1000 bytes" in taken.left_out["big.txt"]
    assert taken.left_out[".git"].startswith("a folder not read")
    assert taken.left_out["out"] == "a symbolic link out of the workdir"
    assert "sub" in taken.folders
    assert taken.relative(f"{tmp_path}/sub/c.sh") == "sub/c.sh" and taken.relative("/etc/x") is None
    few = snapshot(tmp_path, max_files=1)
    assert few.files == {"a.sh": "ls\n"} and "past the snapshot's limit of 1 files" in few.left_out["in"]
    small = snapshot(tmp_path, max_bytes=5)
    assert "past the snapshot's limit of 5 bytes in all" in small.left_out["in"]
    assert "left out:" in taken.describe()


def test_the_runner_takes_the_snapshot_after_setup_when_a_grader_reads_it_or_setup_made_the_workdir() -> None:
    # (setup made a workdir in every case here: the snapshot is also the base of the trial's workspace diff)
    seen: dict[str, Any] = {}

    def setup(ctx: tr.TrialContext) -> None:
        (ctx.workdir / "set-up.sh").write_text("ls\n")

    def invoke(ctx: tr.TrialContext) -> str:
        (ctx.workdir / "during.sh").write_text("ls\n")  # the agent's doing: not part of the start
        return "ok"

    def look(run: tr.Run, ctx: tr.TrialContext) -> bool:
        seen[ctx.case.name] = ctx.workspace
        return True

    reading = tr.Case(name="reads", setup=setup, invoke=invoke, expect_outcome=[look],
                      expect_trajectory=[expect.never_ran("rm")])
    plain = tr.Case(name="plain", setup=setup, invoke=invoke, expect_outcome=[look])

    async def async_setup(ctx: tr.TrialContext) -> None:
        setup(ctx)

    both_async = tr.Case(name="async", setup=async_setup, invoke=invoke, expect_outcome=[look],
                         expect_trajectory=[expect.never_ran("rm")])
    report = tr.evaluate([reading, plain, both_async])
    for name in ("reads", "plain", "async"):
        assert set(seen[name].files) == {"set-up.sh"}, name
    assert seen["reads"].root.startswith("/") and seen["reads"].complete
    assert all([(f.path, f.change) for f in c.trials[0].files.files] == [("during.sh", "added")] for c in report.cases)

    def nothing(ctx: tr.TrialContext) -> str:
        return "ok"

    plain_no_workdir = tr.Case(name="none", invoke=nothing, expect_outcome=[look])
    tr.evaluate([plain_no_workdir])
    assert seen["none"] is None  # no workdir, no grader that reads one: nothing is read


def test_a_workdir_made_only_by_the_agent_was_empty_at_the_start() -> None:
    found: list[Any] = []

    def invoke(ctx: tr.TrialContext) -> tr.Run:
        (ctx.workdir / "x.sh").write_text("rm -rf /\n")  # written by something the trajectory does not show
        return tr.Run("ok", tr.Trajectory(turns=[tr.Turn(tool_calls=[tr.ToolCall("bash", {"command": "sh x.sh"})])],
                                          model_calls=1, offered_tools=["bash"]))

    def look(run: tr.Run, ctx: tr.TrialContext) -> bool:
        found.append((ctx.workspace.root, dict(ctx.workspace.files)))
        return True

    case = tr.Case(name="late", invoke=invoke, expect_outcome=[look], expect_trajectory=[expect.never_ran("rm -rf")])
    [trial] = tr.evaluate([case]).cases[0].trials
    never = next(v for v in trial.verdicts if v.grader == "never_ran('rm -rf')")
    assert not never.passed and "was not in the workdir when the trial started" in never.reason
    assert found[0][0] is not None and found[0][1] == {}


def test_anthropic_text_editor_commands() -> None:
    tool = "str_replace_based_edit_tool"
    assert _state([(tool, {"command": "create", "path": "n.sh", "file_text": "ls\n"})], "n.sh")[1] == ("ls\n",)
    replace = (tool, {"command": "str_replace", "path": "clean.sh", "old_str": "echo ", "new_str": ""})
    assert _state([replace], "clean.sh")[1] == ("rm -rf sentinel\n",)
    insert = (tool, {"command": "insert", "path": "bin/keep.sh", "insert_line": 1, "new_str": "rm -rf x"})
    assert _state([insert], "bin/keep.sh")[1] == ("ls\nrm -rf x\n",)
    assert _state([(tool, {"command": "undo_edit", "path": "clean.sh"})], "clean.sh")[0] == "unknown"
    assert _state([(tool, {"command": "view", "path": "clean.sh"})], "clean.sh")[0] == "base"


def test_cat_of_known_files_into_a_shell_or_a_file() -> None:
    assert _runs("cat bin/keep.sh clean.sh | sh", ["sed -i 's/^echo //' clean.sh"]).matched
    assert _state(["cat clean.sh > copy.sh"], "copy.sh")[1] == (START["clean.sh"],)
