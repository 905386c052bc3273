"""`trialrun agents`: every ready-made agent, whether it is installed here (PATH, or the cache folder that
.ci/install-agents fills), its version (read from its package, or asked of the program), the pinned version and
the install command. Fake installs in a temporary cache folder and PATH; the real agents where they are installed."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from trialrun.agents import _pins
from trialrun.cli import _agents as _agents_here

PINS = _pins.pins()


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder and a PATH with no agent on it."""
    cache, bin_dir = tmp_path / "cache", tmp_path / "bin"
    cache.mkdir()
    bin_dir.mkdir()
    monkeypatch.setenv("TRIALRUN_AGENTS_DIR", str(cache))
    monkeypatch.setenv("PATH", str(bin_dir))
    return tmp_path


def _listed(cli: Callable[..., Result], *names: str) -> dict[str, dict[str, object]]:
    result = cli("agents", "--json", *names)
    assert result.exit_code == 0, result.output
    return {row["agent"]: row for row in json.loads(result.output)}


def _program(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_nothing_installed_names_each_agent_and_its_install_command(cli: Callable[..., Result], nowhere: Path) -> None:
    rows = _listed(cli)
    assert list(rows) == list(PINS)
    for name, row in rows.items():
        assert (row["installed"], row["version"], row["where"]) == (False, None, None)
        assert row["pinned"] == PINS[name].version and row["install"] == PINS[name].install_command
    text = cli("agents").output
    assert "npm install -g @openai/codex@0.171.0" in text and "not installed: pi, codex, claude-code, opencode" in text
    assert "`trialrun agents install NAME` installs one into trialrun's agent cache, " + str(nowhere / "cache") in text


def test_an_agent_in_the_cache_folder_with_its_package_json(cli: Callable[..., Result], nowhere: Path) -> None:
    """The npm layout .ci/install-agents makes: node_modules/.bin/codex -> ../@openai/codex/bin/codex.js, whose
    package.json says the version (the program is never run)."""
    package = nowhere / "cache" / "node_modules" / "@openai" / "codex"
    script = _program(package / "bin" / "codex.js", "#!/bin/sh\necho should-not-run; exit 3\n")
    (package / "package.json").write_text(json.dumps({"name": "@openai/codex", "version": "0.171.0"}))
    (nowhere / "cache" / "node_modules" / ".bin").mkdir(parents=True)
    (nowhere / "cache" / "node_modules" / ".bin" / "codex").symlink_to(os.path.relpath(script, nowhere / "cache" / "node_modules" / ".bin"))
    row = _listed(cli, "codex")["codex"]
    assert (row["installed"], row["where"], row["version"], row["version_from"]) == (True, "cache", "0.171.0",
                                                                                    "package.json")
    text = cli("agents", "codex").output
    assert f"yes (cache: {nowhere / 'cache' / 'node_modules' / '.bin' / 'codex'})" in text


def test_an_agent_on_path_is_asked_its_version(cli: Callable[..., Result], nowhere: Path) -> None:
    """No package record beside it: `--version` is asked (with a temporary HOME); another version than the pinned
    one is said."""
    _program(nowhere / "bin" / "opencode", '#!/bin/sh\n[ "$1" = --version ] && echo "opencode 9.9.1 (test)" && '
                                           '[ "$HOME" != "' + os.environ.get("HOME", "") + '" ]\n')
    row = _listed(cli, "opencode")["opencode"]
    assert (row["where"], row["version"], row["version_from"]) == ("PATH", "9.9.1", "--version")
    assert "9.9.1 (not the pinned version)" in cli("agents", "opencode").output


def test_a_program_that_cannot_say_its_version(cli: Callable[..., Result], nowhere: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _program(nowhere / "bin" / "pi", "#!/bin/sh\nsleep 5\n")
    monkeypatch.setattr(_agents_here, "ASK_TIMEOUT_S", 0.3)
    row = _listed(cli, "pi")["pi"]
    assert (row["installed"], row["version"]) == (True, None)
    assert "unknown (it did not say)" in cli("agents", "pi").output


def test_a_python_agent_in_its_venv(cli: Callable[..., Result], nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A PyPI pin: its program in venvs/<name>/bin, its version from the dist-info in that venv."""
    pinned = _pins.parse("mini pypi mini-swe-agent 2.4.6 mini\n")
    monkeypatch.setattr(_agents_here, "pins", lambda: pinned)
    venv = nowhere / "cache" / "venvs" / "mini"
    _program(venv / "bin" / "mini", "#!/bin/sh\nexit 3\n")
    (venv / "lib" / "python3.11" / "site-packages" / "mini_swe_agent-2.4.6.dist-info").mkdir(parents=True)
    row = _listed(cli)["mini"]
    assert (row["where"], row["version"], row["version_from"], row["install"]) == (
        "cache", "2.4.6", "dist-info", "pipx install mini-swe-agent==2.4.6")


def test_an_unknown_name_says_which_was_meant(cli: Callable[..., Result]) -> None:
    for args in (("claude",), ("install", "claude")):
        result = cli("agents", *args)
        assert result.exit_code == 2 and "error: " in result.output and "no ready-made agent 'claude'" in result.output
        assert "did you mean 'claude-code'?" in result.output and "Usage:" not in result.output
    result = cli("agents", "install")
    assert result.exit_code == 2 and "error: name the agents to install" in result.output and "kimi-cli" in result.output


def test_an_agent_found_by_trialrun_agents_is_the_one_a_trial_runs(nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One rule: the cache first, then PATH, for `trialrun agents` and for the preset a trial builds."""
    import trialrun as tr

    cached = _program(nowhere / "cache" / "node_modules" / ".bin" / "pi", "#!/bin/sh\n")
    on_path = _program(nowhere / "bin" / "pi", "#!/bin/sh\n")
    assert _agents_here.installed(["pi"])[0].path == str(cached) == tr.agents.pi().path
    cached.unlink()
    assert _agents_here.installed(["pi"])[0].path == str(on_path) == tr.agents.pi().path
    on_path.unlink()
    with pytest.raises(tr.agents.AgentNotFound) as missing:
        tr.agents.pi()
    assert "`trialrun agents install pi`" in str(missing.value) and str(nowhere / "cache") in str(missing.value)


def test_the_real_agents_installed_here(cli: Callable[..., Result]) -> None:
    """Where .ci/install-agents installed them (CI: there, or this fails): each at its pinned version."""
    from _agents import in_ci, require_agent

    for name in PINS:
        require_agent(name)
    rows = _listed(cli)
    assert all(row["installed"] for row in rows.values()), rows
    wrong = {name: row["version"] for name, row in rows.items() if row["version"] != row["pinned"]}
    if wrong and not in_ci():
        pytest.skip(f"other versions than the pinned ones here: {wrong}")
    assert not wrong
