"""`trialrun regrade` on runs of the reference agent (the bundled quickstart): a run graded again by the current
suite from the exchanges it kept, with no agent run. The truth is read from outside trialrun's grading: the
scripted model file (which tools each test's "model" calls) and the verdicts of the original run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from trialrun.report.exchanges import sidecar_path
from trialrun.report.store import load_report

RESULTS = Path("state") / "eval"


def _suite(project: Path) -> list[dict]:
    return json.loads((project / RESULTS / "tests.json").read_text())


def _write_suite(project: Path, tests: list[dict]) -> None:
    (project / RESULTS / "tests.json").write_text(json.dumps(tests, indent=2))


def _result_files(project: Path) -> list[Path]:
    return sorted((project / RESULTS).glob("results_*.json"))


def _verdicts(path: Path) -> dict[tuple[str, int], dict[str, tuple[bool, float | None]]]:
    report = load_report(path)
    return {(case.name, trial.trial): {v.grader: (v.passed, v.score) for v in trial.verdicts}
            for case in report.cases for trial in case.trials}


def _passed(path: Path) -> dict[tuple[str, int], bool]:
    report = load_report(path)
    return {(case.name, trial.trial): trial.passed for case in report.cases for trial in case.trials}


def _script_tools(project: Path) -> dict[str, list[str]]:
    """Each test's tool calls as the scripted model file says it makes them (not as trialrun decoded them)."""
    script = yaml.safe_load((project / "model_v1.yaml").read_text())
    return {test: [step["tool_call"]["name"] for step in steps if "tool_call" in step] for test, steps in script.items()}


def test_an_unchanged_suite_regrades_to_the_same_verdicts(project: Path, cli) -> None:
    assert cli("run", "all", "-k", "2").exit_code == 1
    (original,) = _result_files(project)
    done = cli("regrade")
    assert done.exit_code == 1, done.output  # the run had failing tests; so has its regrade
    regraded = next(p for p in _result_files(project) if p != original)
    assert _verdicts(regraded) == _verdicts(original)
    report, before = load_report(regraded), load_report(original)
    assert report.regraded_from == before.run_id and report.run_id != before.run_id
    assert report.config_snapshot["regraded_from"] == before.run_id
    assert report.config_snapshot["executor"] == "local"
    # the trajectories were read again off the exchanges: the same calls, with the agent's own record (the policy's
    # refusal of `rm -rf`, which no exchange shows) carried over
    for case_before, case_after in zip(before.cases, report.cases):
        for a, b in zip(case_before.trials, case_after.trials):
            assert [(c.name, c.arguments) for c in b.trajectory.all_tool_calls] == \
                   [(c.name, c.arguments) for c in a.trajectory.all_tool_calls]
            assert [t.exchange for t in b.trajectory.turns] == [t.exchange for t in a.trajectory.turns]
            assert [d.rule for d in b.trajectory.denials] == [d.rule for d in a.trajectory.denials]
    assert "10 trial(s) regraded, 0 changed, 0 kept as they were" in done.output
    # the grader that reads the workdir is named, not re-run: its verdict is kept, marked so
    assert "refuse-dangerous-command trials 1-2: never_ran('rm -rf'): kept its verdict" in done.output
    kept = [v for v in report.case("refuse-dangerous-command").trials[0].verdicts if v.grader == "never_ran('rm -rf')"]
    assert kept[0].details == {"regrade": "kept"} and kept[0].reason.startswith(f"kept from {before.run_id}")
    # the regraded run is a run: a result file of the published schema (`trialrun schema --results`), its exchanges
    # came with it, and report and compare show it
    import jsonschema

    jsonschema.validate(json.loads(regraded.read_text()), json.loads(cli("schema", "--results").stdout))
    assert sidecar_path(regraded).is_file()
    shown = cli("report", regraded.stem, "--exit-zero")
    assert f"(regraded from {before.run_id}; no agent ran)" in shown.output
    # a regrade runs no agent: latest.json stays on the agent's last run (and the regrade says so)
    assert "latest.json still points at the last run of the agent" in done.output
    assert (project / RESULTS / "latest.json").resolve() == original.resolve()
    compared = cli("compare", original.stem, regraded.stem)
    assert f"regraded_from: (none) -> {before.run_id}" in compared.output, compared.output


def test_a_changed_grader_flips_exactly_the_verdicts_it_should(project: Path, cli) -> None:
    assert cli("run", "all", "-k", "2").exit_code == 1
    (original,) = _result_files(project)
    tools = _script_tools(project)
    tests = _suite(project)
    for test in tests:  # every test now also requires read_file: those whose model never calls it must fail
        test.setdefault("expect", [])
        test["expect"] = [*test["expect"], {"called": "read_file"}] if isinstance(test["expect"], list) else \
            [*({k: v} for k, v in test["expect"].items()), {"called": "read_file"}]
    _write_suite(project, tests)
    done = cli("regrade")
    assert done.exit_code == 1
    regraded = next(p for p in _result_files(project) if p != original)
    before, after = _passed(original), _passed(regraded)
    flipped = {key for key in before if before[key] != after[key]}
    expected = {key for key in before if before[key] and "read_file" not in tools[key[0]]}
    assert flipped == expected and expected == {("list-dir", 1), ("list-dir", 2)}, done.output
    for (case, _), verdicts in _verdicts(regraded).items():
        assert verdicts["called('read_file')"][0] == ("read_file" in tools[case])
    assert "list-dir trials 1-2: passed 1.00 -> failed 1.00: called('read_file') new, fails" in done.output


def test_a_changed_workdir_grader_is_unregradable_never_passed(project: Path, cli) -> None:
    assert cli("run", "refuse-dangerous-command").exit_code == 1
    tests = _suite(project)
    target = next(t for t in tests if t["id"] == "refuse-dangerous-command")
    target["expect"] = [{"never_ran": "shred"}]  # a grader the run never had, and one that reads the workdir
    _write_suite(project, tests)
    done = cli("regrade")
    assert "never_ran('shred'): FAILED, unregradable" in done.output, done.output
    report = load_report(max(_result_files(project)))
    (verdict,) = [v for v in report.cases[0].trials[0].verdicts if v.grader == "never_ran('shred')"]
    assert not verdict.passed and verdict.details == {"regrade": "unregradable"}
    assert "1 verdict(s) not regradable" in done.output


def test_a_run_without_exchanges_is_refused_naming_the_file(project: Path, cli) -> None:
    assert cli("run", "read-file", "--no-exchanges").exit_code == 0
    (original,) = _result_files(project)
    done = cli("regrade")
    assert done.exit_code == 2
    assert f"{sidecar_path(original)}: no such file" in done.stderr and "nothing was regraded" in done.stderr
    assert _result_files(project) == [original]


def test_a_malformed_sidecar_line_keeps_that_trial_and_names_the_line(project: Path, cli) -> None:
    assert cli("run", "read-file", "list-dir").exit_code == 0
    (original,) = _result_files(project)
    sidecar = sidecar_path(original)
    lines = sidecar.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if '"case":"list-dir"' in line)
    lines[number - 1] = lines[number - 1][:-40] + "}"  # a line cut and closed: not JSON any more
    sidecar.write_text("\n".join(lines) + "\n")
    tests = _suite(project)
    for test in tests:
        test["expect"] = [{"contains": "zebra"}]  # no answer says zebra: it fails every trial regraded
    _write_suite(project, tests)
    done = cli("regrade")
    assert f"list-dir trial 1: kept as it was: no stored exchanges: {sidecar.name} line {number}: not valid JSON" \
           in done.output, done.output
    regraded = max(_result_files(project))
    assert _verdicts(regraded)[("list-dir", 1)] == _verdicts(original)[("list-dir", 1)]  # nothing lost
    assert _verdicts(regraded)[("read-file", 1)]["contains('zebra')"][0] is False  # the other one was regraded
    assert "1 kept as they were" in done.output


def test_a_test_the_suite_no_longer_has_is_kept_and_named(project: Path, cli) -> None:
    assert cli("run", "read-file", "list-dir").exit_code == 0
    (original,) = _result_files(project)
    _write_suite(project, [t for t in _suite(project) if t["id"] != "list-dir"])
    done = cli("regrade")
    assert re.search(r"list-dir: not in state/eval/tests\.json \(its tests: read-file, .*\): kept as it was, 1 "
                     r"trial\(s\) not regraded", done.output), done.output
    regraded = max(_result_files(project))
    assert load_report(regraded).case("list-dir") == load_report(original).case("list-dir")


def test_a_regraded_run_can_be_regraded_again(project: Path, cli) -> None:
    assert cli("run", "read-file").exit_code == 0
    assert cli("regrade").exit_code == 0
    again = cli("regrade")
    assert again.exit_code == 0 and "1 trial(s) regraded" in again.output, again.output
    assert len(_result_files(project)) == 3


def test_verbose_after_the_command_as_before_it(project: Path, cli) -> None:
    import logging

    for args in (("run", "read-file", "-v"), ("run", "-v", "read-file"), ("-v", "run", "read-file", "--debug")):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        assert f"INFO trialrun.cli: config file: {project / 'trialrun.toml'}" in result.stderr, args
        assert result.stderr.count("config file:") == 1  # one handler, however many flags
        assert ("DEBUG trialrun.models:" in result.stderr) == ("--debug" in args)
        assert logging.getLogger("trialrun").handlers == []  # removed when the command is done
    assert load_report(max(_result_files(project))).config_snapshot["executor"] == "local"


def test_the_executor_is_recorded_without_credentials() -> None:
    from trialrun.suite._build import executor_name

    assert [executor_name(e) for e in (None, "", "local", "ray", "ray://head:10001", "ray://me:pw@head:10001")] == \
           ["local", "local", "local", "ray", "ray://head:10001", "ray://head:10001"]


def test_a_copied_latest_json_regrades_the_run_it_copies(project: Path, cli) -> None:
    assert cli("run", "read-file").exit_code == 0
    (original,) = _result_files(project)
    latest = project / RESULTS / "latest.json"
    latest.unlink()
    latest.write_text(original.read_text())  # where the file system has no symlinks, latest.json is a copy
    done = cli("regrade", str(latest))
    assert done.exit_code == 0 and f"({original.name})" in done.output, done.output
    assert load_report(max(_result_files(project))).regraded_from == load_report(original).run_id


SDK_AGENT = '''
import openai

def run(prompt, ctx):
    """A plain SDK agent in this process: the official openai client over the trial's observed transport."""
    client = openai.OpenAI(api_key="sk-test", http_client=ctx.http_client(ctx.model))
    tools = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object",
              "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
    messages = [{"role": "user", "content": prompt}]
    while True:
        message = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=tools).choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "Meeting with Sam on Tuesday"})
'''


def test_an_in_process_sdk_agent_regrades_from_its_traffic(project: Path, cli) -> None:
    (project / "sdk_agent.py").write_text(SDK_AGENT)
    assert cli("run", "read-file", "list-dir", "--agent", "sdk_agent:run", "-k", "2").exit_code in (0, 1)
    (original,) = _result_files(project)
    tests = _suite(project)
    for test in tests:
        test["expect"] = [{"called": {"tool": "read_file", "args": {"path": "notes.txt"}}}, {"contains": "Sam"}]
    _write_suite(project, tests)
    done = cli("regrade")
    assert "4 trial(s) regraded" in done.output, done.output
    verdicts = _verdicts(max(_result_files(project)))
    script = yaml.safe_load((project / "model_v1.yaml").read_text())
    for (case, _), graded in verdicts.items():
        asked = [s["tool_call"]["arguments"] for s in script[case] if "tool_call" in s]
        assert graded["called('read_file', args={'path': 'notes.txt'})"][0] == ({"path": "notes.txt"} in asked)
        assert graded["contains('Sam')"][0] == ("Sam" in script[case][-1]["reply"])
        assert {k: v for k, v in graded.items() if k.startswith("rubric")} == \
               {k: v for k, v in _verdicts(original)[(case, _)].items() if k.startswith("rubric")}
    assert {case for (case, _), graded in verdicts.items() if all(p for p, _ in graded.values())} == {"read-file"}


def test_the_sidecar_index_reads_each_trial_as_the_viewer_reads_it(project: Path, cli) -> None:
    """The regrade reads the sidecar once (`SidecarIndex`), where the viewer searches it per trial: same answers,
    for whole lines, a corrupt one, one cut short by a kill, a trial that is not there, and no file at all."""
    from trialrun.report.exchanges import SidecarIndex, read_trial_exchanges

    assert cli("run", "all", "-k", "2").exit_code == 1
    (original,) = _result_files(project)
    sidecar = sidecar_path(original)
    lines = sidecar.read_text().splitlines()
    lines[3] = lines[3][:-30] + "}"
    sidecar.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:-20])  # the last line cut short, no newline
    keys = [(c.name, t.trial) for c in load_report(original).cases for t in c.trials] + [("gone", 1)]

    def seen(found) -> tuple:
        return found.problem, found.exchanges, found.notes, found.found

    index = SidecarIndex.scan(sidecar)
    answers = {key: seen(index.read(*key)) for key in keys}
    assert answers == {key: seen(read_trial_exchanges(sidecar, *key)) for key in keys}
    assert sum(1 for problem, *_ in answers.values() if problem) == 3  # corrupt, cut short, not there
    missing = sidecar.with_name("results_20000101_000000.exchanges.ndjson")
    assert seen(SidecarIndex.scan(missing).read("read-file", 1)) == seen(read_trial_exchanges(missing, "read-file", 1))


def test_the_same_news_of_many_trials_is_one_line() -> None:
    from datetime import datetime, timezone

    from trialrun.report.results import RunReport
    from trialrun.suite._regrade import Regrade

    done = Regrade(RunReport.build([], trial_count=1, started_at=datetime.now(timezone.utc), duration_s=0))
    done.notes += [("a", n, "kept") for n in (1, 2, 3, 5)] + [("a", 4, "changed"), ("b", None, "gone")]
    assert done.lines == ["a trials 1-3, 5: kept", "a trial 4: changed", "b: gone"]
