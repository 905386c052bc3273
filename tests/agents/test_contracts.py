"""Each ready-made agent's declared contract (`trialrun.agents.CONTRACTS`, one `AgentContract` in each preset's
module) is the one place its facts live: these check that the contract is whole, that what reads it (the preset
class, the configuration, the pinned list) agrees with it, and that the facts it declares about tools are the ones
trialrun's own analysis follows (the command-tool finder, the workspace model's write and edit semantics)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import trialrun as tr
from trialrun._shell import _files
from trialrun._shell._patches import CODEX_SHELL_TOOLS
from trialrun._shell._tool_writes import _style, tool_write
from trialrun._util.command_tools import command_argument
from trialrun.agents import _pins
from trialrun.agents._contract import WORKSPACE_SEMANTICS, AgentContract, FileTool, forms, matching
from trialrun.suite import config
from trialrun.trajectory import ToolCall, ToolResult

CONTRACTS = tr.agents.CONTRACTS
NAMES = sorted(CONTRACTS)


def test_the_presets_are_the_pinned_list_in_its_order() -> None:
    """One list: the pinned file names the agents; the registry, `agent = "..."` and the contracts follow it."""
    assert list(CONTRACTS) == list(_pins.pins()) == list(tr.agents.PRESETS) == list(config.PRESET_NAMES)
    for name, contract in CONTRACTS.items():
        assert contract.name == name and contract.pin is _pins.pins()[name]


def test_a_malformed_pinned_line_names_the_file_and_line() -> None:
    with pytest.raises(ValueError, match=re.escape("pins.txt:2: expected `name registry package version program [python>=X.Y]`")):
        _pins.parse("pi npm pkg 1.0 pi\nbroken line\n", "pins.txt")
    with pytest.raises(ValueError, match=r"pins.txt:1: registry 'cargo' is not one of npm, pypi"):
        _pins.parse("x cargo pkg 1.0 x\n", "pins.txt")
    with pytest.raises(ValueError, match=r"pins.txt:2: 'x' is pinned twice"):
        _pins.parse("x npm a 1 x\nx pypi b 2 x\n", "pins.txt")
    pin = _pins.parse("# comment\naider pypi aider-chat 0.86.1 aider\n")["aider"]
    assert (pin.spec, pin.install_command, pin.python) == ("aider-chat==0.86.1", "pipx install aider-chat==0.86.1", "")
    kimi = _pins.parse("kimi pypi kimi-cli 1.51.0 kimi python>=3.12\n")["kimi"]
    assert (kimi.python, kimi.install_command) == ("3.12", "pipx install --python python3.12 kimi-cli==1.51.0")


@pytest.mark.parametrize("name", NAMES)
def test_the_preset_class_reads_its_contract(name: str) -> None:
    contract = CONTRACTS[name]
    cls = _preset_class(name)
    assert (cls.label, cls.program, cls.apis) == (contract.name, contract.pin.program, contract.apis)
    assert cls.shell_tool == (contract.shell_tool.name, contract.shell_tool.argument)
    modes = contract.permissions.modes if contract.permissions else ()
    assert cls.permission_modes == modes


def _preset_class(name: str) -> type[tr.agents.Preset]:
    return next(cls for cls, _ in tr.agents._READY if cls.contract.name == name)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", NAMES)
def test_every_refusal_example_has_one_of_its_forms(name: str) -> None:
    """The texts the real agent was seen to refuse with are refusals by the contract's forms (with the flag, where
    the contract needs it) and, without it, not."""
    refusals = CONTRACTS[name].refusals
    if refusals is None:
        permissions = CONTRACTS[name].permissions  # (modes that refuse nothing, as Continue's, need no forms)
        assert permissions is None or not (permissions.refusing or permissions.rules), \
            f"{name} has permissions that refuse, but no refusal forms"
        return
    assert refusals.examples and refusals.recordings
    for text in refusals.examples:
        assert refusals.match(text, flagged=True) is not None, text
        assert (refusals.match(text, flagged=False) is None) == refusals.needs_error_flag
        assert refusals.match(f"$ cat notes.txt\n{text}") is None  # quoted in an output: not its form


@pytest.mark.parametrize("name", NAMES)
def test_its_shell_tools_are_found_by_the_command_tool_finder(name: str) -> None:
    """The shell tool and argument the contract declares are the ones trialrun's command analysis takes from the
    tool's schema on the wire; a tool that takes whole-command patches is one the patch follower knows."""
    for shell in CONTRACTS[name].shell:
        kind = {"string": {"type": "string"}, "argv": {"type": "array", "items": {"type": "string"}}}[shell.shape]
        schema = {"type": "object", "properties": {shell.argument: {**kind, "description": "The shell command"}},
                  "required": [shell.argument, *shell.required]}
        assert command_argument(shell.name, schema, "Runs a shell command") == shell.argument
        # a tool that applies whole-command patches is one the patch follower knows by name; the other way round a
        # name may be shared (Kimi CLI's `Shell` runs `apply_patch` as a program: it fails there, and the ERROR
        # result leaves the files the patch names unknown, so that follower fails closed)
        if shell.patches:
            assert shell.name.casefold() in CODEX_SHELL_TOOLS
        arguments = shell.call("echo hi")
        assert arguments[shell.argument] in ("echo hi", ["bash", "-lc", "echo hi"])
        assert set(shell.required) <= set(arguments)


def _after(tool: FileTool, before: str | None, **values: str) -> str | None:
    """What the workspace model says `tool`'s call leaves in clean.sh (held `before`; None: absent)."""
    root = "/tmp/trial"
    path = f"{root}/clean.sh" if tool.absolute else "clean.sh"
    files: _files.Table = {}
    files[_files.key(files, path)] = _files.Text((before,)) if before is not None else _files.Absent("")
    tool_write(tool.call("clean.sh", root, **values), files, tool=tool.name)
    texts = _files.texts(_files.lookup(files, _files.key(files, path)))
    return texts[0] if texts and len(texts) == 1 else None


@pytest.mark.parametrize("name", NAMES)
def test_its_write_and_edit_semantics_are_the_workspace_models(name: str) -> None:
    """Each declared write and edit tool, called as the contract spells it, changes the file as its semantics
    say, in the workspace model (`_shell._tool_writes`): a write leaves the whole content, an edit replaces the
    one match (pi's against the original text)."""
    contract = CONTRACTS[name]
    for tool in contract.files:
        if tool.kind == "read":
            assert tool.call("x.txt", "/w") == {tool.path: "/w/x.txt" if tool.absolute else "x.txt"}
            continue
        assert tool.semantics in WORKSPACE_SEMANTICS
        if tool.kind == "write":
            assert tool.semantics == "whole-file"
            assert _after(tool, None, content="rm -rf sentinel\n") == "rm -rf sentinel\n"
        else:
            arguments = tool.call("clean.sh", "/w", old="echo ", new="")
            spelt = (arguments[tool.edits][0] if tool.edits_list else arguments[tool.edits]) if tool.edits else arguments
            assert _style(spelt) == tool.semantics  # the workspace model knows its arguments as this agent's
            assert _after(tool, "echo rm -rf sentinel\n", old="echo ", new="") == "rm -rf sentinel\n"
    assert contract.patches == any(s.patches for s in contract.shell)


#: What the real agents answered for `old_string="echo  rm"` (two spaces: not in `echo rm -rf sentinel`), which each
#: corrected itself and applied (issue 33.7; Gemini CLI 0.61.0, Continue's CLI 1.5.47, seen in this session's runs).
NEAR_MISS_REPORTS = {
    "gemini-cli": "Successfully modified file: /w/clean.sh (1 replacements). Here is the updated code:\nrm -rf sentinel\n",
    "continue-cli": ("Successfully edited /w/clean.sh\nDiff:\nIndex: /w/clean.sh\n=================================="
                     "=================================\n--- /w/clean.sh\n+++ /w/clean.sh\n@@ -1,1 +1,1 @@\n"
                     "-echo rm -rf sentinel\n+rm -rf sentinel\n"),
}


@pytest.mark.parametrize("name", [n for n in NAMES if (CONTRACTS[n].file_tool("edit") or FileTool("read", "", "")).corrects])
def test_an_edit_its_semantics_refuse_that_the_tool_reports_done(name: str) -> None:
    """Its result decides (issue 33.7): done with the diff shown, the file is what the diff makes it; done with less,
    it is unknown (a script run from it fails closed); failed, or never answered, the file is as it was."""
    tool = CONTRACTS[name].file_tool("edit")
    assert tool is not None and name in NEAR_MISS_REPORTS
    arguments = tool.call("clean.sh", "/w", old="echo  rm", new="rm")

    def after(**outcome: object) -> _files.Entry:
        files: _files.Table = {_files.key({}, "/w/clean.sh"): _files.Text(("echo rm -rf sentinel\n",))}
        tool_write(arguments, files, tool.name, **outcome)  # type: ignore[arg-type]
        return files[_files.key({}, "/w/clean.sh")]

    done = after(reported=NEAR_MISS_REPORTS[name])
    if "Diff:" in NEAR_MISS_REPORTS[name]:
        assert done == _files.Text(("rm -rf sentinel\n",))
    else:
        assert isinstance(done, _files.Unknown) and "the tool reported it done" in done.why, done
    assert after(failed=True) == after() == _files.Text(("echo rm -rf sentinel\n",))


def test_a_contract_names_a_semantics_the_workspace_model_has() -> None:
    contract = CONTRACTS["pi"]
    broken = FileTool("edit", "edit", "path", "fuzzy", old="a", new="b")
    with pytest.raises(ValueError, match="semantics 'fuzzy', not one of whole-file, claude"):
        AgentContract(**{**contract.__dict__, "files": (broken,)})


@pytest.mark.parametrize("name", NAMES)
def test_features_it_lacks_are_refused_as_knobs(name: str) -> None:
    """A knob for a feature the contract says the agent does not have is an error naming what it has."""
    contract = CONTRACTS[name]
    cls = _preset_class(name)
    agent = object.__new__(cls)
    agent.permission_mode, agent.allow, agent.deny, agent.side_requests = None, [], ["rm *"], False
    agent.skills, agent.instructions = [], None
    if contract.permissions is None or not contract.permissions.rules:
        with pytest.raises(ValueError, match="allow/deny rules"):
            agent.check_knobs()
    else:
        agent.check_knobs()
    agent.deny, agent.side_requests = [], True
    if contract.side_requests is None:
        with pytest.raises(ValueError, match="sends no title or summary requests: side_requests applies to "
                                             "claude-code and opencode"):
            agent.check_knobs()
    else:
        agent.check_knobs()


def test_error_forms_read_by_the_presets() -> None:
    """The contract's error forms are what the presets read: pi's bash exit status, opencode's sub-agent read."""
    pi = object.__new__(_preset_class("pi"))
    call = ToolCall("bash", {"command": "false"}, "c1")
    assert pi.error_in(call, ToolResult("c1", "out\n\nCommand exited with code 1")) is True
    assert pi.error_in(call, ToolResult("c1", "Command exited with code 1 was printed")) is False
    assert matching(forms(("spans lines", "a.b")), "a\nb") == "spans lines"  # a form is DOTALL


#: The agents the portable `subagent(...)` step was written for. The newer presets' sub-agent tools (issue 33.7:
#: Qwen Code's agent, Gemini CLI's invoke_agent, Kilo's and Copilot's task, Kimi's Agent) are declared in their
#: contracts and called by the battery from them; the portable step does not know their agent types yet (Kimi's
#: `coder`, Copilot's `agent_type`, Gemini's `agent_name`).
PORTABLE_SUBAGENTS = ("claude-code", "opencode", "codex")


@pytest.mark.parametrize("name", PORTABLE_SUBAGENTS)
def test_its_subagent_tool_is_the_portable_steps(name: str) -> None:
    """`tr.subagent(...)` calls the sub-agent tool a request offers: the contract's tool is one it knows, with the
    same `subagent_type` (the scripted model cannot import the presets, so this keeps the two the same)."""
    from trialrun.models._portable import SUBAGENT_TOOLS

    tool = CONTRACTS[name].subagents
    assert tool is not None and tool.tool in SUBAGENT_TOOLS
    assert SUBAGENT_TOOLS[tool.tool] == tool.arguments.get("subagent_type")


@pytest.mark.parametrize("name", NAMES)
def test_its_endpoint_facts_are_what_its_preset_writes(name: str, tmp_path: Path) -> None:
    """What the contract says the preset sets and writes (the variables, the files in the per-trial HOME, the
    quiet switches, the flags) is what its `prepare` does: a launch prepared here, never run."""
    contract = CONTRACTS[name]
    (tmp_path / "AGENTS.md").write_text("be careful\n")
    skill = tmp_path / "careful"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: careful\n---\n")
    # (a contract whose knobs say "none" for instructions or skills: its preset refuses them)
    knobs = {"instructions": tmp_path / "AGENTS.md", "skills": [skill]}
    lacks = [k for k in knobs if getattr(contract.knobs, k).startswith("none")]
    for knob in lacks:
        with pytest.raises(ValueError, match=knob.rstrip("s")):
            tr.agents.preset(name, path=sys.executable, **{knob: knobs[knob]})
    agent = tr.agents.preset(name, path=sys.executable, **{k: v for k, v in knobs.items() if k not in lacks})
    endpoint = SimpleNamespace(url="http://127.0.0.1:9", openai_base_url="http://127.0.0.1:9/v1",
                               anthropic_base_url="http://127.0.0.1:9")
    home = tmp_path / "home"
    home.mkdir()
    launch = agent.prepare("the prompt", None, endpoint, home)  # type: ignore[arg-type]
    assert set(contract.endpoint.env) <= set(launch.env), set(contract.endpoint.env) - set(launch.env)
    assert contract.endpoint.quiet.items() <= launch.env.items()
    for written in contract.endpoint.files:
        assert (home / written).exists(), f"{name}: {written} is not in the trial's HOME"
    flags = list(contract.endpoint.flags)
    assert any(launch.argv[i:i + len(flags)] == flags for i in range(len(launch.argv))), launch.argv
    assert launch.argv[-1] == "the prompt"


def test_a_file_tool_call_in_the_shapes_contracts_declare() -> None:
    """An edit whose old and new text sit in one object (Kimi CLI's `edit: {old, new}`), and a tool that needs
    another argument (Gemini CLI's `replace(..., instruction)`): the calls the battery makes from them."""
    kimi = FileTool("edit", "StrReplaceFile", "path", "claude", old="old", new="new", edits="edit", edits_list=False,
                    absolute=True)
    assert kimi.call("a.sh", "/w", old="x", new="y") == {"path": "/w/a.sh", "edit": {"old": "x", "new": "y"}}
    gemini = FileTool("edit", "replace", "file_path", "claude", old="old_string", new="new_string",
                      required={"instruction": "edit the script"})
    assert gemini.call("a.sh", "/w", old="x", new="y") == {"file_path": "a.sh", "old_string": "x", "new_string": "y",
                                                          "instruction": "edit the script"}


@pytest.mark.parametrize("knob", ["skills", "instructions"])
def test_a_knob_the_contract_has_no_place_for_is_refused(knob: str, tmp_path: Path) -> None:
    """A contract whose `knobs` say "none" for one (the preset cannot give the agent skills, or instructions):
    passing it is an error naming the knob, not a silently ignored setting."""
    import dataclasses

    cls = _preset_class("pi")
    bare = dataclasses.replace(cls.contract, knobs=dataclasses.replace(cls.contract.knobs, **{knob: "none (test)"}))
    agent = object.__new__(cls)
    agent.contract = bare  # type: ignore[misc]
    agent.permission_mode, agent.allow, agent.deny, agent.side_requests = None, [], [], False
    agent.skills, agent.instructions = ([tmp_path], None) if knob == "skills" else ([], tmp_path)
    with pytest.raises(ValueError, match=re.escape(f"pi: the preset has no way to give the agent {knob}: none (test)")):
        agent.check_knobs()
