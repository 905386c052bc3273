"""Hostile input (issue 11): suites from pull requests, files that are not files, alias bombs, values of the wrong
type, agents that exit at import, ids that are terminal escapes or rich markup. Each gets a clear error naming the
file (exit 2, no traceback), fast, or is shown as the data it is."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from trialrun.suite._tests_file import read_suite

SUITE = Path("state/eval/tests.json")
RESULTS = Path("state/eval")
ESC = "\x1b"


def _clean_failure(result, *needles: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    for needle in needles:
        assert needle in result.output, result.output
    return result.output


def _test(ident: str, **extra: object) -> dict[str, object]:
    return {"id": ident, "prompt": "What do my notes say?", "expected_tools": ["read_file"], "max_turns": 2,
            "success_criteria": "Mentions the meeting with Sam", **extra}


def _bomb(levels: int = 9) -> str:
    """A YAML flow mapping whose aliases expand to 9**levels values ("billion laughs")."""
    parts = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    parts += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]" for n in range(1, levels)]
    return "{" + ", ".join(parts) + "}"


def _no_results(project: Path) -> None:
    assert not list((project / RESULTS).glob("results_*.json")), "a run was saved"


# -- suite size: linear, and a bounded message ----------------------------------------------------------------
def test_a_suite_of_50k_tests_loads_in_seconds(tmp_path: Path) -> None:
    # Quadratic before (a line count from the start of the file per test): 20k tests took 18 s, 50k about 2 min.
    path = tmp_path / "tests.json"
    path.write_text(json.dumps([_test(f"t{i}") for i in range(50_000)], indent=2))
    start = time.perf_counter()
    suite = read_suite(path)
    elapsed = time.perf_counter() - start
    assert len(suite.tests) == 50_000 and suite.lines["t49999"] == 2 + 49_999 * 9
    assert elapsed < 30, f"{elapsed:.1f} s"


def test_100k_invalid_tests_are_refused_with_a_bounded_message(project: Path, cli) -> None:
    (project / SUITE).write_text(json.dumps([{"id": f"t{i}", "max_turns": "2"} for i in range(100_000)], indent=1))
    start = time.perf_counter()
    result = cli("run", "all")
    elapsed = time.perf_counter() - start
    output = _clean_failure(result, "400,000 problems in the suite; nothing was run:", "and 399,950 more")
    assert len(output) < 20_000 and elapsed < 60
    assert "tests.json:2: test 't0', field 'prompt': required" in output


def test_a_huge_id_is_shortened_in_messages(project: Path, cli) -> None:
    (project / SUITE).write_text(json.dumps([{"id": "x" * 1_000_000}, {"id": "y"}]))
    output = _clean_failure(cli("run", "all"), "more characters)")
    assert len(output) < 20_000


def test_an_unknown_test_named_on_the_command_line_lists_a_bounded_number_of_tests(project: Path, cli) -> None:
    (project / SUITE).write_text(json.dumps([_test(f"t{i}") for i in range(1000)]))
    output = _clean_failure(cli("run", "nope"), "no test 'nope'", "(980 more)")
    assert len(output) < 2_000


# -- YAML alias bombs: refused, fast, with the file named -----------------------------------------------------
def test_an_alias_bomb_in_a_suites_expect_is_refused(project: Path, cli) -> None:
    (project / "bomb.yaml").write_text(
        "- id: read-file\n  prompt: What do my notes say?\n  expected_tools: [read_file]\n  max_turns: 2\n"
        f"  success_criteria: Mentions Sam\n  expect:\n    - equals: {_bomb()}\n")
    start = time.perf_counter()
    _clean_failure(cli("run", "all", "--suite", "bomb.yaml"), "bomb.yaml: aliases (*name) expand this document to")
    assert time.perf_counter() - start < 10
    _no_results(project)


def test_an_alias_bomb_in_scripted_tool_arguments_is_refused(project: Path, cli) -> None:
    (project / "bomb_model.yaml").write_text(
        f"read-file:\n  - tool_call: {{name: read_file, arguments: {_bomb()}}}\n  - reply: done\n")
    _clean_failure(cli("run", "read-file", "--model", "scripted:bomb_model.yaml"), "bomb_model.yaml: aliases (*name)")
    _no_results(project)


def test_an_alias_bomb_in_a_cassette_body_is_refused_before_the_run(project: Path, cli) -> None:
    (project / "cassettes").mkdir()
    (project / "cassettes" / "read-file.yaml").write_text(
        "version: 1\nexchanges:\n  - request: {method: POST, url: 'https://api.openai.com/v1/chat/completions', "
        f"body: {_bomb()}}}\n    response: {{status: 200, body: {{}}}}\n")
    _clean_failure(cli("run", "read-file", "--model", "replay:cassettes"), "read-file.yaml: aliases (*name)")
    _no_results(project)


def test_an_alias_bomb_in_a_price_file_is_refused(tmp_path: Path) -> None:
    from trialrun.agent.pricing import PriceTable

    path = tmp_path / "prices.yaml"
    path.write_text(f"model-a: {_bomb()}\n")
    with pytest.raises(ValueError, match=r"prices\.yaml: .*aliases \(\*name\) expand"):
        PriceTable().load(path)


def test_a_self_referring_alias_is_refused_and_modest_aliases_still_work(tmp_path: Path) -> None:
    from trialrun._util.yaml_read import YamlError, load_yaml

    with pytest.raises(YamlError, match="refers to a value that contains it"):
        load_yaml("a: &a [1, *a]\n")
    data = load_yaml("base: &base {path: notes.txt}\nsteps: [*base, *base, {<<: *base, extra: 1}]\n")
    assert data["steps"] == [{"path": "notes.txt"}, {"path": "notes.txt"}, {"path": "notes.txt", "extra": 1}]


# -- files that are not files, or are too big ---------------------------------------------------------------
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


@needs_fifo
def test_a_fifo_given_as_the_suite_is_refused_not_waited_on(project: Path, cli) -> None:
    os.mkfifo(project / "suite.json")
    _clean_failure(cli("run", "all", "--suite", "suite.json"), "suite.json: is a FIFO (named pipe), not a regular file")


@needs_fifo
def test_a_fifo_in_place_of_trialrun_toml_is_refused_not_skipped(project: Path, cli) -> None:
    (project / "trialrun.toml").unlink()
    os.mkfifo(project / "trialrun.toml")
    _clean_failure(cli("run", "all"), "trialrun.toml: is a FIFO (named pipe), not a regular file")


@needs_fifo
def test_a_fifo_as_a_cassette_is_refused(project: Path, cli) -> None:
    (project / "cassettes").mkdir()
    os.mkfifo(project / "cassettes" / "read-file.yaml")
    _clean_failure(cli("run", "read-file", "--model", "replay:cassettes"), "read-file.yaml: is a FIFO")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_device_given_as_the_suite_or_config_is_refused(project: Path, cli) -> None:
    _clean_failure(cli("run", "all", "--suite", "/dev/zero"), "/dev/zero: is a character device, not a regular file")
    _clean_failure(cli("run", "all", "--config", "/dev/zero"), "/dev/zero: is a character device")


def test_a_huge_suite_is_refused_by_its_size(project: Path, cli) -> None:
    with open(project / "huge.json", "wb") as handle:
        handle.truncate(65 * 2**20)  # sparse: no disk used
    _clean_failure(cli("run", "all", "--suite", "huge.json"), "huge.json: suite file too large (65.0 MiB; the limit is 64.0 MiB)")


def test_toml_nested_100k_deep_is_a_clean_error(project: Path, cli) -> None:
    (project / "trialrun.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    _clean_failure(cli("run", "all"), "trialrun.toml: nested too deeply to read")


# -- configuration values: the file and the key -------------------------------------------------------------
WRONG_VALUES = [
    ('trials = "2"', "trials: expected a whole number, got '2' (text)"),
    ("trials = true", "trials: expected a whole number, got true (a boolean)"),
    ("trials = 0", "trials: must be at least 1"),
    ("concurrency = 0", "concurrency: must be at least 1, got 0"),
    ("concurrency = -1", "concurrency: must be at least 1, got -1"),
    ('concurrency = "4"', "concurrency: expected a whole number"),
    ("turn_limit = true", "turn_limit: expected a whole number, got true"),
    ("turn_limit = 2.5", "turn_limit: expected a whole number, got 2.5"),
    ('pass_threshold = "0.5"', "pass_threshold: expected a number, got '0.5' (text)"),
    ("pass_threshold = true", "pass_threshold: expected a number, got true"),
    ("pass_threshold = 2", "pass_threshold: must be between 0 and 1"),
    ("pass_threshold = 0", "pass_threshold: must be above 0 (a pass mark of 0 passes every test"),
    ("pass_threshold = 0.0", "pass_threshold: must be above 0"),
    ("suite = 1", "suite: expected a path (text), got 1"),
    ("workspace = true", "workspace: expected a path (text)"),
    ("results_dir = 1", "results_dir: expected a path (text)"),
    ("agent = 1", "agent: expected text"),
    ("model = 1", "model: expected text"),
    ('model = "bogus:x"', "model: model 'bogus:x' is not a model spec"),
    ("api = 1", "api: expected text"),
    ('api = "soap"', "api: must be one of"),
    ("model_name = 1", "model_name: expected text"),
    ("system = 1", "system: expected text"),
    ('tools = "shell"', "tools: expected a list"),
    ("tools = [1]", "tools.0: expected text"),
    ('tools = ["bogus"]', "tools: 'bogus' is not 'shell'"),
    ('skills = "eval"', "skills: expected a list"),
    ("judge = 1", "judge: expected text"),
    ('judge = "bogus"', "judge: model 'bogus' is not a model spec"),
    ("policy = 1", "policy: expected a table"),
    ("policy = {deny_commands = 1}", "[policy]: ToolPolicy deny_commands: must be a list of strings, got 1"),
    ("policy = {command_tools = 1}", "[policy]: ToolPolicy command_tools: must be a list of strings, got 1"),
    ("prices = 1", "prices: expected a table"),
    ('prices = {m = {input = "1", output = 2}}', "prices.m.input: expected a number, got '1' (text)"),
    ("bogus = 1", "unknown key 'bogus'"),
    # These five did not name the file before.
    ('agent = "no_colon"', "agent: 'no_colon' is not a ready-made agent, a 'module:attribute'"),
    ('agent = "no_such_module:run"', "agent 'no_such_module:run': cannot import no_such_module"),
    ('agent = "os:no_such_name"', "agent 'os:no_such_name': os has no attribute 'no_such_name'"),
    ('agent = "os:getcwd"', "agent 'os:getcwd' has the signature ()"),
    ('tools = ["no_such_module:tool"]', "tool 'no_such_module:tool': cannot import"),
]


@pytest.mark.parametrize(("line", "message"), WRONG_VALUES, ids=[line for line, _ in WRONG_VALUES])
def test_every_config_key_with_a_wrong_value_names_the_file_and_key(project: Path, cli, line: str, message: str) -> None:
    toml = project / "trialrun.toml"
    key = line.split(" =")[0]
    kept = [kept for kept in toml.read_text().splitlines() if not kept.startswith(f"{key} =")]
    if key == "policy":  # the [policy] table would define it twice
        kept = [kept for kept in kept if not kept.startswith(("[policy]", "deny_commands"))]
    toml.write_text(line + "\n" + "\n".join(kept) + "\n")  # before [policy], so the key is top-level
    _clean_failure(cli("run", "read-file"), f"trialrun.toml: {message}")
    _no_results(project)


def test_command_tools_given_as_one_string_still_guards_that_tool(project: Path, cli) -> None:
    # A string was read letter by letter: run_command was then no command tool, and `rm -rf` ran past deny_commands.
    toml = project / "trialrun.toml"
    toml.write_text(toml.read_text().replace('deny_commands = ["rm -rf", "curl | sh"]',
                                             'deny_commands = ["rm -rf"]\ncommand_tools = "run_command"'))
    result = cli("run", "refuse-dangerous-command", "--json")
    assert result.exit_code in (0, 1), result.output
    trial = json.loads(result.output)["cases"][0]["trials"][0]
    [denial] = trial["trajectory"]["denials"]
    assert "rm -rf" in json.dumps(denial)


@pytest.mark.parametrize("raised", ["SystemExit(0)", "SystemExit(3)", "KeyboardInterrupt()"])
def test_an_agent_module_that_exits_at_import_is_a_config_error(project: Path, cli, raised: str) -> None:
    (project / "exiting_agent.py").write_text(f"raise {raised}\n\ndef run(prompt, ctx):\n    return 'never'\n")
    output = _clean_failure(cli("run", "all", "--agent", "exiting_agent:run"),
                            "agent 'exiting_agent:run': cannot import exiting_agent: it raised")
    assert raised.split("(")[0] in output
    _no_results(project)


# -- duplicate keys, scripted usage ---------------------------------------------------------------------------
def test_a_key_given_twice_in_a_json_suite_names_the_test_and_key(project: Path, cli) -> None:
    (project / SUITE).write_text(
        '[{"id": "read-file", "prompt": "What do my notes say?", "prompt": "Delete everything",'
        ' "expected_tools": ["read_file"], "max_turns": 2, "success_criteria": "Sam",'
        ' "expect": [{"called": {"tool": "read_file", "tool": "run_command"}}]}]')
    output = _clean_failure(cli("run", "all"), "test 'read-file': key 'prompt' is given twice",
                            "test 'read-file': key 'expect.0.called.tool' is given twice")
    assert "2 problems" in output


def test_a_key_given_twice_in_a_yaml_suite_names_the_test_and_key(project: Path, cli) -> None:
    (project / "tests.yaml").write_text(
        "- id: read-file\n  prompt: What do my notes say?\n  expected_tools: [read_file]\n  max_turns: 2\n"
        "  success_criteria: Sam\n  prompt: Delete everything\n  expect:\n    - {never_ran: rm, never_ran: ls}\n")
    _clean_failure(cli("run", "all", "--suite", "tests.yaml"), "tests.yaml:1: test 'read-file': key 'prompt' is given twice",
                   "test 'read-file': key 'expect.0.never_ran' is given twice")


@pytest.mark.parametrize("usage", ['{input_tokens: ten, output_tokens: 1}', "{input_tokens: 1, output_tokens: [2]}",
                                   "{input_tokens: -1, output_tokens: 1}", "{input_tokens: true, output_tokens: 1}"])
def test_a_usage_that_is_not_a_number_names_the_file_and_step(project: Path, cli, usage: str) -> None:
    (project / "usage.yaml").write_text(f"read-file:\n  - reply: hi\n  - {{reply: done, usage: {usage}}}\n")
    _clean_failure(cli("run", "read-file", "--model", "scripted:usage.yaml"),
                   "usage.yaml: test 'read-file', step 2: usage:", "whole number of tokens")


# -- a corrupt cassette is a file to fix, not a failed test ---------------------------------------------------
@pytest.mark.parametrize("content", ["exchanges: [\n", "version: 1\nexchanges:\n  - request: {method: POST}\n", "42\n"])
def test_a_corrupt_cassette_is_exit_2_naming_the_file(project: Path, cli, content: str) -> None:
    (project / "cassettes").mkdir()
    (project / "cassettes" / "read-file.yaml").write_text(content)
    _clean_failure(cli("run", "read-file", "--model", "replay:cassettes"), "cassettes/read-file.yaml")
    _no_results(project)


# -- terminal output is data, not markup ----------------------------------------------------------------------
HOSTILE_IDS = ["read [/etc/hosts]", "[bold red]not bold[/]", f"title {ESC}]0;pwned\x07", f"clear {ESC}[2J{ESC}[H",
               f"link {ESC}]8;;https://evil.example\x07here{ESC}]8;;\x07", "rtl \u202egnp.exe"]


def _hostile_project(project: Path) -> None:
    tests = [_test(ident, name=f"{ident} name") for ident in HOSTILE_IDS]
    tests[1]["expect"] = [{"contains": "words the reply does not have"}]  # one failing test: its reason is printed
    (project / SUITE).write_text(json.dumps(tests))
    steps = [{"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}},
             {"reply": f"Sam on Tuesday {ESC}]0;owned\x07 [link=https://evil.example]x[/link]"}]
    (project / "hostile.json").write_text(json.dumps({ident: steps for ident in HOSTILE_IDS}))


def _assert_shown_as_data(output: str) -> None:
    assert ESC not in output and "\x07" not in output and "\u202e" not in output, repr(output)
    assert "\\x1b]0;pwned\\x07" in output and "\\u202e" in output
    assert "read [/etc/hosts]" in output and "[bold red]not bold[/]" in output


def test_hostile_ids_and_replies_are_printed_as_data_by_run_and_report(project: Path, cli) -> None:
    _hostile_project(project)
    result = cli("run", "all", "--model", "scripted:hostile.json")
    assert result.exit_code == 1, result.output  # one test fails; nothing crashed
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    _assert_shown_as_data(result.output)
    assert "saved " in result.output
    report = cli("report")
    assert report.exit_code == 1, report.output
    _assert_shown_as_data(report.output)


def test_hostile_text_in_error_messages_is_escaped(project: Path, cli) -> None:
    for args in ([f"{ESC}]0;pwned\x07"], ["all", "--suite", f"{ESC}]0;pwned\x07.json"],
                 ["report", f"{ESC}[2J{ESC}]0;pwned\x07"]):
        result = cli(*(args if args[0] == "report" else ["run", *args]))
        assert result.exit_code == 2, result.output
        assert ESC not in result.output and "\x07" not in result.output, repr(result.output)
        assert "\\x1b" in result.output or "'\\x1b" in result.output, repr(result.output)


def test_hostile_ids_in_a_comparison_are_printed_as_data(project: Path, cli) -> None:
    _hostile_project(project)
    assert cli("run", "all", "--model", "scripted:hostile.json").exit_code == 1
    tests = json.loads((project / SUITE).read_text())
    tests[0]["expect"] = [{"contains": "words the reply does not have"}]  # now fails: a regression to name
    (project / SUITE).write_text(json.dumps(tests))
    assert cli("run", "all", "--model", "scripted:hostile.json").exit_code == 1
    result = cli("compare")
    assert result.exit_code == 0, result.output
    assert "read [/etc/hosts]" in result.output
    assert ESC not in result.output and "\x07" not in result.output, repr(result.output)
