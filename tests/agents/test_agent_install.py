"""The real agents are where `.ci/install-agents` puts them, at the pinned versions; a missing one fails in CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from _agents import AGENTS, agents_bin_dir, find_agent, in_ci, installed_version, require_agent

ROOT = Path(__file__).resolve().parents[2]


def _empty_environment(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    monkeypatch.setenv("TRIALRUN_AGENTS_DIR", str(folder))
    monkeypatch.setenv("PATH", str(folder))


def test_a_missing_agent_fails_in_ci_naming_the_install_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _empty_environment(monkeypatch, tmp_path)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception) as failed:
        require_agent("codex")
    assert ".ci/install-agents" in str(failed.value) and "@openai/codex@0.171.0" in str(failed.value)
    assert str(tmp_path / "node_modules" / ".bin") in str(failed.value)


def test_a_missing_agent_skips_outside_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _empty_environment(monkeypatch, tmp_path)
    for value in ("", "false", "0"):
        monkeypatch.setenv("CI", value)
        assert not in_ci()
        with pytest.raises(pytest.skip.Exception, match="opencode-ai@1.18.33"):
            require_agent("opencode")


def test_the_install_folder_comes_before_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache, elsewhere = tmp_path / "cache", tmp_path / "bin"
    (cache / "node_modules" / ".bin").mkdir(parents=True)
    elsewhere.mkdir()
    for folder in (cache / "node_modules" / ".bin", elsewhere):
        program = folder / "pi"
        program.write_text("#!/bin/sh\n")
        program.chmod(0o755)
    monkeypatch.setenv("TRIALRUN_AGENTS_DIR", str(cache))
    monkeypatch.setenv("PATH", str(elsewhere))
    assert agents_bin_dir() == cache / "node_modules" / ".bin"
    assert find_agent("pi") == str(cache / "node_modules" / ".bin" / "pi")
    (cache / "node_modules" / ".bin" / "pi").unlink()
    assert find_agent("pi") == str(elsewhere / "pi")


def test_installed_versions_are_read_from_the_install_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TRIALRUN_AGENTS_DIR", str(tmp_path))
    assert installed_version("claude-code") is None
    manifest = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('{"name": "@anthropic-ai/claude-code", "version": "2.1.197"}')
    assert installed_version("claude-code") == "2.1.197"


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_the_installed_agent_is_the_pinned_version(name: str, tmp_path: Path) -> None:
    """Runs the real program (`--version`), with a temporary HOME and config folders: never the user's own."""
    program = require_agent(name)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "CODEX_HOME": str(tmp_path),
           "CLAUDE_CONFIG_DIR": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path),
           "XDG_CACHE_HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path), "DISABLE_AUTOUPDATER": "1",
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "PI_OFFLINE": "1"}
    done = subprocess.run([program, *AGENTS[name].version_args], env={**env, "MSWEA_CONFIGURED": "true"}, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, start_new_session=True)
    assert done.returncode == 0, done.stderr[-500:]
    assert AGENTS[name].version in done.stdout + done.stderr


def test_install_agents_is_quiet_when_everything_is_installed() -> None:
    """With every pinned package in place the script only prints the folder of the executables (and, the versions
    being right, never reaches npm: nothing here may use the network)."""
    for name in AGENTS:
        require_agent(name)
    wrong = {name: installed_version(name) for name in AGENTS if installed_version(name) != AGENTS[name].version}
    if wrong:
        message = f"{agents_bin_dir().parent} holds other versions than the pinned ones: {wrong}; run .ci/install-agents"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    done = subprocess.run([str(ROOT / ".ci" / "install-agents")], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{agents_bin_dir()}\n" and done.stderr == ""
