"""The real agents are where `.ci/install-agents` puts them, at the pinned versions; a missing one fails in CI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _agents import AGENTS, agents_bin_dir, find_agent, in_ci, installed_version, require_agent

import trialrun as tr
from trialrun.agents import CONTRACTS, _pins

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
    done = subprocess.run([program, *CONTRACTS[name].version_args], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=60,
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
    # (the folder of the PyPI agents' linked programs after it, when there are some)
    pypi = any(pin.registry == "pypi" for pin in _pins.pins().values())
    expected = f"{agents_bin_dir()}\n" + (f"{agents_bin_dir().parent.parent / 'bin'}\n" if pypi else "")
    assert done.stdout == expected and done.stderr == ""


# -- the script itself, on fake installs (nothing here reaches a registry) ------------------------------------------

SCRIPT = ROOT / "src" / "trialrun" / "agents" / "install.sh"
TOOLS = ("bash", "tail", "mkdir", "readlink", "ln", "dirname", "cat")


def _tools(folder: Path, *more: str) -> Path:
    """A folder of the tools the script uses (and `more`), to be the whole PATH: no npm, node or python3 else."""
    folder.mkdir(parents=True, exist_ok=True)
    for tool in (*TOOLS, *more):
        found = shutil.which(tool)
        assert found, tool
        (folder / tool).symlink_to(found)
    return folder


def _script(tmp_path: Path, pinned: str, path: Path, *names: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pinned.txt").write_text(pinned)
    env = {"PATH": str(path), "HOME": str(tmp_path), "TRIALRUN_AGENTS_DIR": str(tmp_path / "cache"),
           "TRIALRUN_PINNED": str(tmp_path / "pinned.txt")}
    return subprocess.run(["bash", str(SCRIPT), *names], capture_output=True, text=True, env=env, timeout=60,
                          stdin=subprocess.DEVNULL)


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_the_script_installs_the_list_the_contracts_read() -> None:
    """One list and one installer: the script's default is the file the contracts' pins come from (beside it),
    `trialrun agents install` runs it (`_pins.INSTALLER`), and `.ci/install-agents` only hands over to it."""
    assert 'PINNED="${TRIALRUN_PINNED:-$HERE/pinned.txt}"' in SCRIPT.read_text()
    assert SCRIPT.parent / "pinned.txt" == _pins.PINNED_FILE and SCRIPT == _pins.INSTALLER
    ci = (ROOT / ".ci" / "install-agents").read_text()
    assert 'exec bash "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/src/trialrun/agents/install.sh" "$@"' in ci
    assert {name: pin.spec for name, pin in _pins.pins().items()} == {
        name: contract.pin.spec for name, contract in tr.agents.CONTRACTS.items()}


@pytest.mark.parametrize(("line", "said"), [
    ("pi npm @x/pi 1.0", "pinned.txt:2: expected `name registry package version program [python>=X.Y]`, got: pi "
                         "npm @x/pi 1.0"),
    ("pi pypi pi 1.0 pi 3.12", "pinned.txt:2: expected `name registry package version program [python>=X.Y]`"),
    ("pi cargo pi 1.0 pi", "pinned.txt:2: pi: registry 'cargo' is not npm or pypi"),
])
def test_a_bad_pinned_line_is_named(tmp_path: Path, line: str, said: str) -> None:
    done = _script(tmp_path, f"# the list\n{line}\n", _tools(tmp_path / "bin"))
    assert done.returncode == 1 and said in done.stderr and done.stdout == ""


def test_an_npm_agent_off_its_pin_is_installed_with_every_pin(tmp_path: Path) -> None:
    """Each pinned npm package is checked against its package.json (the first one too); one off its pin runs
    `npm install` of the whole list (here a stand-in npm that records its arguments and fails)."""
    bin_dir = _tools(tmp_path / "bin", "node")
    _executable(bin_dir / "npm", f'#!/bin/sh\necho "$@" > {tmp_path}/npm-args; echo registry down >&2; exit 1\n')
    cache = tmp_path / "cache" / "node_modules"
    for package, version in (("@x/first", "0.9.0"), ("second", "2.0.0")):  # the first is off its pin
        (cache / package).mkdir(parents=True)
        (cache / package / "package.json").write_text(json.dumps({"name": package, "version": version}))
    done = _script(tmp_path, "first npm @x/first 1.0.0 first\nsecond npm second 2.0.0 second\n", bin_dir)
    assert done.returncode == 1 and "npm install failed" in done.stderr and "registry down" in done.stderr
    assert "@x/first@1.0.0 second@2.0.0" in (tmp_path / "npm-args").read_text()


def test_only_the_agents_named_are_installed(tmp_path: Path) -> None:
    """`install.sh second`: only second's package goes to npm (the first is off its pin and left alone); a name
    not in the list is refused, listing the known ones, before anything is installed."""
    bin_dir = _tools(tmp_path / "bin", "node")
    _executable(bin_dir / "npm", f'#!/bin/sh\necho "$@" > {tmp_path}/npm-args; exit 1\n')
    pinned = "first npm @x/first 1.0.0 first\nsecond npm second 2.0.0 second\nthird pypi third 1.0 third\n"
    done = _script(tmp_path, pinned, bin_dir, "second")
    assert done.returncode == 1 and "npm install failed" in done.stderr
    args = (tmp_path / "npm-args").read_text().split()
    assert "second@2.0.0" in args and not any(arg.startswith("@x/first") for arg in args)
    (tmp_path / "npm-args").unlink()
    done = _script(tmp_path, pinned, bin_dir, "second", "fourth")
    assert done.returncode == 1 and "no agent 'fourth' in" in done.stderr and "(known: first second third)" in done.stderr
    assert not (tmp_path / "npm-args").exists()


def test_no_npm_is_named(tmp_path: Path) -> None:
    done = _script(tmp_path, "first npm @x/first 1.0.0 first\n", _tools(tmp_path / "bin"))
    assert done.returncode == 1 and "npm (and node) is not on PATH" in done.stderr


def test_a_python_agent_in_its_venv_at_its_pin_is_left_alone(tmp_path: Path) -> None:
    """A PyPI agent in its own venv at the pinned version: nothing is installed, its program is linked into the
    cache's bin folder (never the venv's python onto PATH), and that folder is printed; a second run the same."""
    venv = tmp_path / "cache" / "venvs" / "mini"
    _executable(venv / "bin" / "python", '#!/bin/sh\n[ "$3" = mini-swe-agent ] && echo 2.4.6\n')
    program = _executable(venv / "bin" / "mini", "#!/bin/sh\necho mini\n")
    tools = _tools(tmp_path / "bin")
    for _ in range(2):
        done = _script(tmp_path, "mini pypi mini-swe-agent 2.4.6 mini\n", tools)
        assert (done.returncode, done.stderr, done.stdout) == (0, "", f"{tmp_path / 'cache' / 'bin'}\n")
        assert os.readlink(tmp_path / "cache" / "bin" / "mini") == str(program)
    assert sorted(p.name for p in (tmp_path / "cache" / "bin").iterdir()) == ["mini"]


def test_a_python_agent_off_its_pin_needs_python3(tmp_path: Path) -> None:
    venv = tmp_path / "cache" / "venvs" / "mini"
    _executable(venv / "bin" / "python", "#!/bin/sh\necho 2.0.0\n")
    done = _script(tmp_path, "mini pypi mini-swe-agent 2.4.6 mini\n", _tools(tmp_path / "bin"))
    assert done.returncode == 1 and "no Python >= 3.10 here" in done.stderr and "install mini (mini-swe-agent==2.4.6)" \
        in done.stderr


def test_a_python_agent_needing_a_newer_python_says_so(tmp_path: Path) -> None:
    tools = _tools(tmp_path / "bin")
    _executable(tools / "python3", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    done = _script(tmp_path, "kimi pypi kimi-cli 1.51.0 kimi python>=3.99\n", tools)
    assert done.returncode == 1 and "no Python >= 3.99 here" in done.stderr and "kimi (kimi-cli==1.51.0)" in done.stderr


def test_a_python_agent_off_its_pin_is_installed_into_its_venv(tmp_path: Path) -> None:
    """Off its pin: `python -m pip install PACKAGE==VERSION` in its own venv (a stand-in venv python that records
    what it was asked; a failure shows its log)."""
    venv = tmp_path / "cache" / "venvs" / "mini"
    _executable(venv / "bin" / "python", f'#!/bin/sh\n[ "$1" = -c ] && echo 2.0.0 && exit 0\necho "$@" >> '
                                         f'{tmp_path}/pip-args; echo no such version >&2; exit 1\n')
    tools = _tools(tmp_path / "bin")
    _executable(tools / "python3", f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')  # a Python >= 3.10
    done = _script(tmp_path, "mini pypi mini-swe-agent 2.4.6 mini\n", tools)
    assert done.returncode == 1 and f"installing mini-swe-agent==2.4.6 into {venv} failed" in done.stderr
    assert "no such version" in done.stderr
    assert (tmp_path / "pip-args").read_text().split()[-1] == "mini-swe-agent==2.4.6"


# -- one agent, the way a user installs it: `trialrun agents install pi`, then `trialrun run` finds it ---------------

def test_trialrun_agents_install_pi_then_a_run_finds_it(tmp_path: Path) -> None:
    """Into a fresh agent cache, from npm's own cache (`npm_config_offline`: nothing here reaches the registry; CI
    warmed it with .ci/install-agents), in under a minute; then the coding-agent tutorial's project (agent = "pi",
    a scripted model) runs pi from that cache, with no pi on PATH: the trial's verdicts come from what pi did."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        message = "npm and node are needed to install pi"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    cache = tmp_path / "agents"
    env = {**os.environ, "TRIALRUN_AGENTS_DIR": str(cache), "npm_config_offline": "true",
           "PATH": os.pathsep.join(folder for folder in os.environ["PATH"].split(os.pathsep)
                                   if not (Path(folder) / "pi").exists())}
    env.pop("TRIALRUN_PINNED", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "trialrun", "agents", "install", "pi"], env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr[-2000:]
    program = cache / "node_modules" / ".bin" / "pi"
    assert f"pi {AGENTS['pi'].version}: {program}" in done.stdout and took < 60, (took, done.stdout)
    listed = subprocess.run([sys.executable, "-m", "trialrun", "agents", "--json", "pi"], env=env, capture_output=True,
                            text=True, timeout=60)
    row = json.loads(listed.stdout)[0]
    assert (row["where"], row["path"], row["version"]) == ("cache", str(program), AGENTS["pi"].version)

    project = tmp_path / "coding-agent"
    shutil.copytree(ROOT / "examples" / "tutorials" / "coding-agent", project, ignore=shutil.ignore_patterns("results"))
    ran = subprocess.run([sys.executable, "-m", "trialrun", "run", "marker"], cwd=project, env=env,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    saved = json.loads((project / "results" / "latest.json").read_text())
    assert saved["config_snapshot"]["agent_version"].startswith(AGENTS["pi"].version) or \
        AGENTS["pi"].version in saved["config_snapshot"]["agent_version"]
    (test,) = saved["tests"]
    assert test["passed"], test
