"""ProcessAgent with small Python programs as the agent: argv, environment, exit status, output, and kills."""

from __future__ import annotations

import json
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

import trialrun as tr
from trialrun._contain.keeper import session_members

# A real agent in another process: the official openai SDK, pointed at the endpoint by the variables trialrun sets.
SDK_AGENT = textwrap.dedent("""
    import os, sys, subprocess, openai
    client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object",
              "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]
    messages = [{"role": "user", "content": sys.argv[1]}]
    for _ in range(5):
        reply = client.chat.completions.create(model=os.environ["TRIALRUN_MODEL"], messages=messages, tools=tools)
        message = reply.choices[0].message
        if not message.tool_calls:
            print(message.content)
            break
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            import json
            done = subprocess.run(json.loads(call.function.arguments)["command"], shell=True, capture_output=True, text=True)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": done.stdout + done.stderr})
""")


def _case(agent: tr.ProcessAgent, prompt: str, model: object, **kwargs: object) -> tr.Case:
    kwargs.setdefault("expect_outcome", [tr.expect.not_contains("Traceback")])
    return tr.Case(name="agent", invoke=lambda ctx: agent(prompt, ctx, model=model), **kwargs)  # type: ignore[arg-type]


def _trial(agent: tr.ProcessAgent, prompt: str, model: object, **kwargs: object) -> tr.TrialResult:
    return tr.evaluate([_case(agent, prompt, model, **kwargs)]).cases[0].trials[0]


def _script(tmp_path: Path, text: str) -> str:
    path = tmp_path / "agent.py"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_an_sdk_agent_talks_to_the_served_model_and_its_trajectory_is_read_off_the_wire(tmp_path: Path) -> None:
    agent = tr.ProcessAgent([sys.executable, _script(tmp_path, SDK_AGENT), "{prompt}"], model_name="gpt-4.1-mini")
    model = tr.ScriptedModel([tr.tool_call("bash", command="echo hi > marker.txt"), tr.reply("made marker.txt")])
    trial = _trial(agent, "make a marker", model, expect_outcome=[tr.expect.contains("made marker.txt")],
                   expect_trajectory=[tr.expect.called("bash", {"command": "echo hi > marker.txt"})])
    assert trial.passed, trial.verdicts
    assert trial.output == "made marker.txt"
    assert [c.name for c in trial.trajectory.tool_calls] == ["bash"]
    assert trial.trajectory.prompt == "make a marker"


def test_the_prompt_is_one_argument_never_shell_code(tmp_path: Path) -> None:
    prompt = "it's a \"test\"; touch pwned $(touch pwned2) `touch pwned3` && echo *"
    agent = tr.ProcessAgent([sys.executable, "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", "{prompt}", "--x"])
    trial = _trial(agent, prompt, tr.ScriptedModel([tr.reply("unused")]))
    assert json.loads(trial.output) == [prompt, "--x"]
    # nothing ran: no file appeared in the workdir or here
    assert not list(Path.cwd().glob("pwned*"))


def test_a_prompt_is_appended_when_no_argument_names_it(tmp_path: Path) -> None:
    agent = tr.ProcessAgent(f"{sys.executable} -c 'import sys; print(sys.argv[1:])'")
    trial = _trial(agent, "hello there", tr.ScriptedModel([tr.reply("unused")]))
    assert trial.output == "['hello there']"


def test_environment_points_every_style_of_client_at_the_endpoint_with_a_dummy_key(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-users-real-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real")
    agent = tr.ProcessAgent([sys.executable, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
                            env={"EXTRA": "1"}, api="anthropic", model_name="claude-x")
    seen: dict[str, str] = {}

    def invoke(ctx: tr.TrialContext) -> object:
        seen["workdir"] = str(ctx.workdir)
        return agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))

    result = tr.evaluate([tr.Case(name="env", invoke=invoke, expect_outcome=[tr.expect.not_contains("Traceback")])]).cases[0].trials[0]
    env = json.loads(result.output)
    base = env["TRIALRUN_ENDPOINT"]
    assert base.startswith("http://127.0.0.1:")
    assert env["OPENAI_BASE_URL"] == base + "/v1" and env["ANTHROPIC_BASE_URL"] == base
    assert env["GOOGLE_GEMINI_BASE_URL"] == base
    assert {env[k] for k in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY")} == {"trialrun-dummy-key"}
    assert (env["TRIALRUN_API"], env["TRIALRUN_MODEL"], env["EXTRA"]) == ("anthropic", "claude-x", "1")
    assert env["PWD"] == seen["workdir"]


def test_stdin_is_closed_and_it_runs_in_the_trials_workdir(tmp_path: Path) -> None:
    agent = tr.ProcessAgent([sys.executable, "-c", "import os, sys; print(repr(sys.stdin.read()), os.getcwd())"])
    seen: dict[str, str] = {}

    def invoke(ctx: tr.TrialContext) -> object:
        seen["workdir"] = str(ctx.workdir)
        return agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))

    result = tr.evaluate([tr.Case(name="w", invoke=invoke, expect_outcome=[tr.expect.not_contains("Traceback")])]).cases[0].trials[0]
    assert result.output == f"'' {seen['workdir']}"


def test_a_non_zero_exit_is_a_trial_error_showing_the_stderr_tail(tmp_path: Path) -> None:
    code = "import sys; sys.stderr.write('x' * 10000 + '\\nboom: no API route\\n'); sys.exit(3)"
    trial = _trial(tr.ProcessAgent([sys.executable, "-c", code], stderr_tail=200), "p", tr.ScriptedModel([tr.reply("x")]))
    assert not trial.passed
    assert trial.error is not None and trial.error.type == "AgentError"
    assert "exited with status 3" in trial.error.message
    assert "boom: no API route" in trial.error.message
    assert "characters cut" in trial.error.message and len(trial.error.message) < 600


def test_run_records_exit_code_stderr_and_duration(tmp_path: Path) -> None:
    agent = tr.ProcessAgent([sys.executable, "-c", "import sys, time; time.sleep(0.2); print('out'); print('err', file=sys.stderr)"])
    case = tr.Case(name="r", invoke=lambda ctx: None, expect_outcome=[tr.expect.not_contains("Traceback")])
    ctx = tr.TrialContext(case, 1)
    try:
        run = agent.run("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))
    finally:
        ctx.close()
    assert (run.output, run.exit_code, run.stderr.strip(), run.status) == ("out", 0, "err", "completed")
    assert run.duration_s is not None and 0.2 <= run.duration_s < 10


def test_output_from_a_file_or_a_function(tmp_path: Path) -> None:
    writes = [sys.executable, "-c", "open('answer.txt', 'w').write('from the file'); print('stdout text')"]
    trial = _trial(tr.ProcessAgent(writes, output="file:answer.txt"), "p", tr.ScriptedModel([tr.reply("x")]))
    assert trial.output == "from the file"
    trial = _trial(tr.ProcessAgent(writes, output=lambda stdout, ctx: stdout.upper()), "p", tr.ScriptedModel([tr.reply("x")]))
    assert trial.output == "STDOUT TEXT\n"
    missing = _trial(tr.ProcessAgent(writes, output="file:nope.txt"), "p", tr.ScriptedModel([tr.reply("x")]))
    assert missing.error is not None and "nope.txt" in missing.error.message


# A process that puts a child in a process group of its own (as a job-control shell does), which a process-group
# kill misses; both sleep, and write their pids so the test can look for them afterwards.
FORKER = textwrap.dedent("""
    import os, subprocess, sys, time
    child = subprocess.Popen(["sleep", "300"], process_group=0) if sys.version_info >= (3, 11) else \\
        subprocess.Popen(["sleep", "300"], preexec_fn=lambda: os.setpgid(0, 0))
    open("pids", "w").write(f"{os.getpid()} {child.pid}")
    print("started", flush=True)
    time.sleep(300)
""")


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _pids(workdir: Path) -> list[int]:
    return [int(p) for p in (workdir / "pids").read_text().split()]


def test_a_timeout_kills_every_process_it_started_even_in_another_process_group(tmp_path: Path) -> None:
    agent = tr.ProcessAgent([sys.executable, _script(tmp_path, FORKER)], timeout_s=1.5)
    seen: dict[str, list[int]] = {}

    def invoke(ctx: tr.TrialContext) -> object:
        async def go() -> object:
            try:
                return await agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))
            finally:
                seen["pids"] = _pids(ctx.workdir)
        return go()

    started = time.monotonic()
    trial = tr.evaluate([tr.Case(name="t", invoke=invoke, expect_outcome=[tr.expect.not_contains("Traceback")])]).cases[0].trials[0]
    assert time.monotonic() - started < 15
    assert trial.error is not None and trial.error.type == "AgentError" and "timed out after 1.5s" in trial.error.message
    assert seen["pids"] and not [pid for pid in seen["pids"] if _alive(pid)]


def test_a_case_timeout_cancels_the_agent_and_kills_its_session(tmp_path: Path) -> None:
    agent = tr.ProcessAgent([sys.executable, _script(tmp_path, FORKER)], timeout_s=None)
    seen: dict[str, object] = {}

    def invoke(ctx: tr.TrialContext) -> object:
        seen["workdir"] = ctx.workdir

        async def go() -> object:
            try:
                return await agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))
            finally:
                seen["pids"] = _pids(ctx.workdir)
        return go()

    trial = tr.evaluate([tr.Case(name="t", invoke=invoke, timeout_s=1.5, expect_outcome=[tr.expect.not_contains("Traceback")])]).cases[0].trials[0]
    assert trial.error is not None and trial.error.type == "TimeoutError"
    pids = seen["pids"]
    assert isinstance(pids, list) and len(pids) == 2
    assert not [pid for pid in pids if _alive(pid)]
    assert not session_members(pids[0])


def test_background_children_left_behind_die_with_the_trial(tmp_path: Path) -> None:
    code = "import subprocess, os; p = subprocess.Popen(['sleep', '300']); open('pids', 'w').write(str(p.pid)); print('bye')"
    seen: dict[str, list[int]] = {}
    agent = tr.ProcessAgent([sys.executable, "-c", code])

    def invoke(ctx: tr.TrialContext) -> object:
        async def go() -> object:
            run = await agent("p", ctx, model=tr.ScriptedModel([tr.reply("x")]))
            seen["pids"] = _pids(ctx.workdir)
            return run
        return go()

    trial = tr.evaluate([tr.Case(name="b", invoke=invoke, expect_outcome=[tr.expect.contains("bye")])]).cases[0].trials[0]
    assert trial.passed
    assert not _alive(seen["pids"][0])


def test_arguments_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="argv is empty"):
        tr.ProcessAgent([])
    with pytest.raises(ValueError, match="api must be one of"):
        tr.ProcessAgent(["x"], api="cohere")
    with pytest.raises(ValueError, match="output must be"):
        tr.ProcessAgent(["x"], output="stderr")
    with pytest.raises(ValueError, match="sandbox must be one of"):
        tr.ProcessAgent(["x"], sandbox="docker")


def test_a_missing_program_is_a_clear_error(tmp_path: Path) -> None:
    trial = _trial(tr.ProcessAgent(["no-such-agent-program-x", "{prompt}"]), "p", tr.ScriptedModel([tr.reply("x")]))
    assert trial.error is not None and trial.error.type == "AgentNotFound"
    assert "no-such-agent-program-x" in trial.error.message


def test_presets_name_their_npm_package_when_the_program_is_absent(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setenv("TRIALRUN_AGENTS_DIR", str(tmp_path))  # an empty agent cache
    for factory, package in ((tr.agents.pi, "@mariozechner/pi-coding-agent"), (tr.agents.codex, "@openai/codex"),
                             (tr.agents.claude_code, "@anthropic-ai/claude-code"), (tr.agents.opencode, "opencode-ai")):
        with pytest.raises(tr.agents.AgentNotFound, match=f"npm install -g {package}"):
            factory()
    with pytest.raises(tr.agents.AgentNotFound, match="is not an executable"):
        tr.agents.pi(path="/nonexistent/pi")


def test_an_agent_that_exits_0_without_calling_the_model_passes_no_trajectory_grader(tmp_path: Path) -> None:
    # No verdict without looking: an agent process that printed nothing and never asked the model (a wrong base
    # URL, a crash swallowed into exit 0) has done nothing any trajectory grader could examine.
    agent = tr.ProcessAgent([sys.executable, "-c", "pass"], model_name="gpt-4.1-mini")
    model = tr.ScriptedModel([tr.shell("echo hi > marker.txt"), tr.reply("done")])
    graders = [tr.expect.never_ran("rm -rf"), tr.expect.not_called("bash"), tr.expect.no_denials(),
               tr.expect.no_tool_errors(), tr.expect.max_turns(5), tr.expect.max_tool_calls(3)]
    trial = _trial(agent, "make a marker", model, expect_trajectory=graders)
    assert trial.error is None and not trial.passed
    assert [v.passed for v in trial.verdicts if v.kind == "trajectory"] == [False] * len(graders)
    assert all("no model traffic was observed" in v.reason for v in trial.verdicts if v.kind == "trajectory")
    # the explicit way to say "it must not call the model" passes on the same run
    assert _trial(agent, "make a marker", model, expect_trajectory=[tr.expect.no_model_calls()]).passed


@pytest.mark.parametrize("options, message", [
    ({"timeout_s": True}, "timeout_s must be a positive number of seconds, got True"),
    ({"env": {"A=B": "x"}}, "env: 'A=B' is not a variable name"),
    ({"env": {"": "x"}}, "env: '' is not a variable name"),
    ({"env": {"X": 1}}, "env X: must be text, got int 1"),
    ({"env": {"X": "a\0b"}}, "env X: holds a NUL byte"),
    ({"argv": ["agent", "a\0b"]}, "argv holds a NUL byte"),
])
def test_what_no_program_could_be_given_is_refused_when_the_agent_is_made(options: dict, message: str) -> None:
    # (before: each ran the suite and failed every trial, or, for True, was a timeout of 1 s)
    argv = options.pop("argv", ["agent"])
    with pytest.raises(ValueError, match=re.escape(message)):
        tr.ProcessAgent(argv, **options)


def test_max_body_bounds_what_the_agents_endpoint_reads() -> None:
    # what the agent itself was told (its HTTP status), not trialrun's reading: 413 over the bound, 200 under it
    post = ("import os, sys, urllib.request, urllib.error\n"
            "url = os.environ['OPENAI_BASE_URL'] + '/chat/completions'\n"
            "for size in (100, 5000):\n"
            "    body = b'{\"model\": \"m\", \"messages\": [], \"pad\": \"' + b'x' * size + b'\"}'\n"
            "    try:\n"
            "        print(size, urllib.request.urlopen(urllib.request.Request(url, body, {'content-type': "
            "'application/json'})).status)\n"
            "    except urllib.error.HTTPError as exc:\n"
            "        print(size, exc.code)\n")
    agent = tr.ProcessAgent([sys.executable, "-c", post], max_body=2000)
    case = tr.Case(name="c", invoke=lambda ctx: agent("p", ctx, model=tr.ScriptedModel([tr.reply("ok")] * 2)),
                   expect_outcome=[tr.expect.contains("5000 413")])
    trial = tr.evaluate([case]).cases[0].trials[0]
    assert trial.passed, (trial.output, trial.error)
    assert "100 200" in str(trial.output)
    with pytest.raises(ValueError, match="max_body must be a positive number of bytes, got True"):
        tr.ProcessAgent(["agent"], max_body=True)
