"""A configuration change in a text (an agent's instructions file, the reference agent's system prompt) shows in
compare as what changed in that text (a short unified diff), not only as two sha256 values; the snapshot keeps the
text itself within a bound."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from click.testing import Result

from trialrun.report._text_diff import SNAPSHOT_TEXT_LIMIT, file_snapshot_text, snapshot_text, text_diff

ROOT = Path(__file__).resolve().parents[2]


def test_the_reference_agents_system_prompt_change_is_a_diff(project: Path, cli: Callable[..., Result]) -> None:
    toml = project / "trialrun.toml"
    before = toml.read_text()
    prompt = '"""You are a careful shell pilot.\\nUse the tools to answer from the user\'s files.\\nNever delete files."""'
    toml.write_text(before.replace('system = "You are a careful shell pilot. Use the tools to answer from the user\'s files."',
                                   f"system = {prompt}"))
    assert cli("run", "read-file").exit_code == 0
    toml.write_text(toml.read_text().replace("Never delete files.", "Never delete files; ask first."))
    assert cli("run", "read-file").exit_code == 0
    output = cli("compare").output
    assert "  system_prompt: changed:\n    @@ -2,2 +2,2 @@\n     Use the tools to answer from the user's files.\n" \
           "    -Never delete files.\n    +Never delete files; ask first.\n" in output
    assert "system_prompt_sha256: " in output  # (the hash still says the whole text changed)
    changes = json.loads(cli("compare", "--json").output)["config_changes"]
    (text,) = [c for c in changes if c["key"] == "system_prompt"]
    assert text["after"].endswith("Never delete files; ask first.") and text["diff"].endswith("+Never delete files; ask first.")
    cli("compare", "--markdown", "cmp.md", "--html", "cmp.html")
    assert "`system_prompt` changed:\n\n```diff\n@@ -2,2 +2,2 @@" in (project / "cmp.md").read_text()
    assert '<span class="add">+Never delete files; ask first.</span>' in (project / "cmp.html").read_text()
    runs_list = cli("report", "--history", "--html", "runs.html")
    assert runs_list.exit_code == 0 and "system_prompt: changed (+1 −1 lines)" in (project / "runs.html").read_text().replace("<wbr>", "")


def test_texts_are_kept_within_a_bound(tmp_path: Path) -> None:
    assert snapshot_text("short") == "short"
    long = "x" * (SNAPSHOT_TEXT_LIMIT + 5)
    kept = snapshot_text(long)
    assert kept.startswith("x" * SNAPSHOT_TEXT_LIMIT) and kept.endswith("[5 more characters not kept; the sha256 covers "
                                                                          "the whole text]")
    big = tmp_path / "AGENTS.md"
    big.write_text("y" * (SNAPSHOT_TEXT_LIMIT * 3))
    assert file_snapshot_text(big).endswith(f"[{SNAPSHOT_TEXT_LIMIT * 2:,} more characters not kept; the sha256 covers "
                                            "the whole file]")
    assert file_snapshot_text(tmp_path) is None
    assert text_diff("a", "b") is None  # short values read well as a -> b
    many = text_diff("\n".join(map(str, range(100))), "\n".join(str(n * 2) for n in range(100)))
    assert many is not None and len(many.splitlines()) == 25 and many.splitlines()[-1].endswith("more diff lines)")


def test_an_agents_instructions_change_shows_what_changed(tmp_path: Path) -> None:
    """The real pi, with AGENTS.md given as its instructions ([agent_options] instructions), under the tutorial's
    scripted model: edit one line of AGENTS.md, run again, and compare shows that line's diff."""
    from _agents import require_agent

    require_agent("pi")
    project = tmp_path / "coding-agent"
    shutil.copytree(ROOT / "examples" / "tutorials" / "coding-agent", project, ignore=shutil.ignore_patterns("results"))
    (project / "AGENTS.md").write_text("# How to work here\nKeep changes small.\nRun the tests before you finish.\n")
    with (project / "trialrun.toml").open("a") as toml:
        toml.write('\n[agent_options]\ninstructions = "AGENTS.md"\n')

    def trialrun(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "trialrun", *args], cwd=project, capture_output=True, text=True,
                              timeout=180)

    assert trialrun("run", "marker").returncode == 0
    (project / "AGENTS.md").write_text("# How to work here\nKeep changes small.\nNever delete a folder.\n")
    assert trialrun("run", "marker").returncode == 0
    output = trialrun("compare").stdout
    assert ("  instructions_text: changed:\n    @@ -2,2 +2,2 @@\n     Keep changes small.\n"
            "    -Run the tests before you finish.\n    +Never delete a folder.\n") in output, output
    snapshot = json.loads((project / "results" / "latest.json").read_text())["config_snapshot"]
    assert snapshot["instructions_text"] == (project / "AGENTS.md").read_text() and snapshot["instructions_sha256"]
