"""Issue 33.4: the programs that delete or overwrite files read their options as the programs do
(`trialrun._shell._option_tables`): long options and GNU abbreviations of them, options that imply others (`rsync
--del`), subcommands with their own options (`git clean --fo`), and the options that run a command (`tar --to-com`).

Two kinds of truth, neither of them trialrun's: each table against the installed program's own list of options
(`--help`, `git CMD -h`), and each disguise RUN for real in a temporary folder: the matcher must say it runs the
pattern exactly when the program really destroyed the file the pattern is about. Every command here is also in the
shared corpus (tests/corpus/commands.yaml), as a disguise that must match or a look-alike that must not.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from trialrun._shell import match_command
from trialrun._shell._option_tables import TABLES

CORPUS = yaml.safe_load((Path(__file__).resolve().parent / "corpus" / "commands.yaml").read_text(encoding="utf-8"))
PAIRS = {section: {(e["pattern"], e["command"]) for e in CORPUS[section]} for section in ("must_match", "must_not_match")}

# -- the tables against the programs' own lists -----------------------------------------------------------------------

#: program (or `git SUB`) -> the command that prints its options
HELP = {name: [*name.split(), "-h"] if name.startswith("git ") else [name, "--help"]
        for name in TABLES if not name.endswith("*") and name not in ("git", "find", "curl", "wget")}
_LONG = re.compile(r"(?:^|[\s,])--(\[no-\])?([A-Za-z0-9][\w-]*)")


def _required(program: str) -> None:
    if shutil.which(program) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{program} is not installed (CI installs it: .ci/run)")
        pytest.skip(f"{program} is not installed")


def _listed(argv: list[str]) -> set[str]:
    """The long options a program lists in its help (the option column of each line that starts with a dash)."""
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env={**os.environ, "LC_ALL": "C"})
    names: set[str] = set()
    for line in (done.stdout + done.stderr).splitlines():
        stripped = line.strip()
        if not stripped.startswith("-"):
            continue
        column = re.split(r"\s{2,}", stripped, maxsplit=1)[0]
        for negated, name in _LONG.findall(column):
            if name.isupper() or "-" in name and name.split("-", 1)[1].isupper():
                continue  # a placeholder (rsync's `--no-OPTION`)
            names.add(name)
            if negated:
                names.add("no-" + name)
    return names


def _table_longs(name: str) -> set[str]:
    return {token.split("=", 1)[0].rstrip(":") for token in TABLES[name].get("longs", "").split()}


@pytest.mark.parametrize("name", sorted(HELP))
def test_each_table_knows_every_long_option_its_program_lists(name: str) -> None:
    """A long option missing from a table would make a prefix look unambiguous when the program finds it ambiguous,
    or send it to the wrong option: the table must hold all of them (it may hold a few more: aliases a program's help
    leaves out, negations)."""
    _required(name.split()[0])
    listed = _listed(HELP[name])
    assert listed, f"{HELP[name]} listed no long options"
    assert listed <= _table_longs(name), f"{name}: the table lacks {sorted(listed - _table_longs(name))}"


# -- each disguise run for real ---------------------------------------------------------------------------------------

#: (pattern, command, the shell test that is true when what the pattern is about was destroyed). Run in a folder
#: holding build/ (a tree), f.txt (data), s/ and d/ (d/extra is in d only, d/ex.log too), a git repository `repo`
#: with an untracked file and a branch `old` whose commit is on no other branch, and a.tar.
REAL = [
    # rsync: each of these deletes what the source lacks (popt takes no abbreviations: `--delet` runs nothing)
    ("rsync --delete", "rsync -a --del s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delete-after s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delete-before s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delete-during s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delete-delay s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delete-excluded s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -av --delete-excluded --exclude='*.log' s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delet s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --dele s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --max-delete=5 s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --delete-missing-args s/ d/", "! test -e d/extra"),
    ("rsync --delete", "rsync -a --remove-source-files s/ d/", "! test -e d/extra"),
    ("rm -rf", "rsync -e 'sh -c \"rm -rf build\"' -a s/ h:d", "! test -e build"),
    # find
    ("find -delete", "find build -delete", "! test -e build/keep.txt"),
    ("find -delete", "find . -name keep.txt -delete", "! test -e build/keep.txt"),
    ("find -delete", "find . -name -delete", "! test -e build/keep.txt"),
    ("rm", "find build -name keep.txt -execdir rm {} +", "! test -e build/keep.txt"),
    ("rm", "find build -name keep.txt -exec rm {} \\;", "! test -e build/keep.txt"),
    # git clean and git branch: parse-options takes unambiguous prefixes, per subcommand
    ("git clean -f", "git -C repo clean --fo", "! test -e repo/untracked"),
    ("git clean -f", "git -C repo clean --forc -d", "! test -e repo/untracked"),
    ("git clean -f", "git -C repo clean -fdx", "! test -e repo/untracked"),
    ("git clean -f", "git -C repo clean -n", "! test -e repo/untracked"),
    ("git clean -f", "git -C repo clean --dry-run -d", "! test -e repo/untracked"),
    ("git branch -D", "git -C repo branch --delete --force old", "! git -C repo rev-parse -q --verify old"),
    ("git branch -D", "git -C repo branch --del --forc old", "! git -C repo rev-parse -q --verify old"),
    ("git branch -D", "git -C repo branch -d old", "! git -C repo rev-parse -q --verify old"),
    # tar: --remove-files by any prefix; the options that run a command, by any prefix, in a cluster, old style
    ("tar --remove-files", "tar --remove -cf out.tar build", "! test -e build"),
    ("tar --remove-files", "tar --remove-f -cf out.tar build", "! test -e build"),
    ("tar --remove-files", "tar -cf out.tar build", "! test -e build"),
    ("rm -rf", "tar --to-com='rm -rf build' -xf a.tar", "! test -e build"),
    ("rm -rf", "tar -xf a.tar --checkpoint=1 --checkpoint-act=exec='rm -rf build'", "! test -e build"),
    ("rm -rf", "tar -cI 'sh -c \"rm -rf build; gzip\"' -f out.tar f.txt", "! test -e build"),
    ("rm -rf", "tar cIf 'sh -c \"rm -rf build; gzip\"' out.tar f.txt", "! test -e build"),
    ("rm -rf", "tar --use-comp='sh -c \"rm -rf build; gzip\"' -cf out.tar f.txt", "! test -e build"),
    # shred, truncate, cp and mv over a file, rm
    ("shred -u", "shred --remove f.txt", "! test -e f.txt"),
    ("shred -u", "shred --rem=wipe f.txt", "! test -e f.txt"),
    ("shred -u", "shred -zu f.txt", "! test -e f.txt"),
    ("shred -u", "shred -n 1 f.txt", "! test -e f.txt"),
    ("truncate -s 0", "truncate --size=0 f.txt", "! test -s f.txt"),
    ("truncate -s 0", "truncate --si 0 f.txt", "! test -s f.txt"),
    ("truncate -s 0", "truncate -s0 f.txt", "! test -s f.txt"),
    ("truncate -s 0", "truncate -cs 0 f.txt", "! test -s f.txt"),
    ("truncate -s 0", "truncate -s 10 f.txt", "! test -s f.txt"),
    ("cp --remove-destination", "cp --remove-d s/a f.txt", "test \"$(cat f.txt)\" = source"),
    ("mv -f", "mv --forc s/a f.txt", "test \"$(cat f.txt)\" = source"),
    ("rm -rf", "rm --rec --fo build", "! test -e build"),
    ("rm -rf", "rm --recursive --force build", "! test -e build"),
]


def _folder(root: Path) -> None:
    (root / "build" / "sub").mkdir(parents=True)
    (root / "build" / "keep.txt").write_text("keep\n")
    (root / "build" / "sub" / "x").write_text("x\n")
    (root / "f.txt").write_text("data\n")
    (root / "s").mkdir()
    (root / "s" / "a").write_text("source\n")
    (root / "d").mkdir()
    (root / "d" / "extra").write_text("only here\n")
    (root / "d" / "ex.log").write_text("log\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", "repo"]
    subprocess.run(["git", "init", "-q", "repo"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "one"], cwd=root, check=True)
    subprocess.run([*git, "checkout", "-q", "-b", "old"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "two"], cwd=root, check=True)
    subprocess.run([*git, "checkout", "-q", "-"], cwd=root, check=True)
    (root / "repo" / "untracked").write_text("u\n")
    subprocess.run(["tar", "-cf", "a.tar", "f.txt"], cwd=root, check=True)


@pytest.mark.parametrize(("pattern", "command", "destroyed"), REAL, ids=[f"{p} <- {c}" for p, c, _ in REAL])
def test_the_matcher_says_what_the_program_really_did(tmp_path: Path, pattern: str, command: str,
                                                      destroyed: str) -> None:
    for program in ("rsync", "git", "tar", "shred", "truncate"):
        _required(program)
    assert (pattern, command) in PAIRS["must_match"] | PAIRS["must_not_match"], "add it to the corpus too"
    _folder(tmp_path)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "HOME": str(tmp_path)}
    subprocess.run(["sh", "-c", command], cwd=tmp_path, capture_output=True, timeout=60, env=env)
    really = subprocess.run(["sh", "-c", destroyed], cwd=tmp_path, capture_output=True, env=env).returncode == 0
    verdict = match_command(pattern, command)
    assert verdict.matched == really, (f"the program {'did' if really else 'did not'} destroy it; the matcher: "
                                       f"{verdict.reason}")
    assert ((pattern, command) in PAIRS["must_match"]) == really
