"""`trialrun export RUN --format otel|atif` on a run of the reference agent (the bundled quickstart): the output
validates against the published formats (`_export_schemas`, derived from their specifications), and its spans and
steps are the turns the scripted model really answered, counted from outside trialrun's trajectory: the model's
script file, and the raw exchanges the run kept (each 2xx model response is one answer)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import yaml
from _export_schemas import ATIF_V1_4, OTLP_TRACES, atif_problems, attributes, genai_problems

from trialrun.report.exchanges import read_trial_exchanges, sidecar_path
from trialrun.report.store import load_report


def _run(project: Path, cli) -> Path:
    assert cli("run", "all", "-k", "2").exit_code == 1
    (path,) = (project / "state" / "eval").glob("results_*.json")
    return path


def _script(project: Path) -> dict[str, list[dict]]:
    return yaml.safe_load((project / "model_v1.yaml").read_text())


def _answered(path: Path, case: str, trial: int) -> int:
    """The model responses of a trial, from its raw exchanges: every 2xx answer of a model request."""
    kept = read_trial_exchanges(sidecar_path(path), case, trial)
    assert kept.problem is None
    return sum(1 for e in kept.exchanges if 200 <= e["response"]["status"] < 300 and "/chat/completions" in e["request"]["url"])


def _by_trial(spans: list[dict], operation: str) -> Counter:
    traces = {s["traceId"]: (attributes(s)["trialrun.case"]["stringValue"], int(attributes(s)["trialrun.trial"]["intValue"]))
              for s in spans if attributes(s)["gen_ai.operation.name"]["stringValue"] == "invoke_agent"}
    return Counter(traces[s["traceId"]] for s in spans
                   if attributes(s)["gen_ai.operation.name"]["stringValue"] == operation)


def test_otel_spans_are_the_turns_the_model_answered(project: Path, cli, tmp_path: Path) -> None:
    path = _run(project, cli)
    out = tmp_path / "spans.json"
    done = cli("export", path.name, "--format", "otel", "-o", str(out))
    assert done.exit_code == 0 and f"wrote {out}: 10 trial(s)" in done.stderr, done.output
    data = json.loads(out.read_text())
    jsonschema.validate(data, OTLP_TRACES)
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [p for span in spans for p in genai_problems(span)] == []
    script = _script(project)
    chats, tools = _by_trial(spans, "chat"), _by_trial(spans, "execute_tool")
    for case in script:
        for trial in (1, 2):
            assert chats[(case, trial)] == len(script[case]) == _answered(path, case, trial)
            assert tools[(case, trial)] == sum(1 for step in script[case] if "tool_call" in step)
    assert len(_by_trial(spans, "invoke_agent")) == 10
    # the tree: every chat span under its trial's root, every tool span under the chat span that asked for it
    ids = {s["spanId"]: s for s in spans}
    assert len(ids) == len(spans)
    for span in spans:
        operation = attributes(span)["gen_ai.operation.name"]["stringValue"]
        parent = ids.get(span.get("parentSpanId", ""))
        expected = {"invoke_agent": None, "chat": "invoke_agent", "execute_tool": "chat"}[operation]
        assert (parent and attributes(parent)["gen_ai.operation.name"]["stringValue"]) == (expected or None)
        assert parent is None or parent["traceId"] == span["traceId"]
    tool_names = sorted(attributes(s)["gen_ai.tool.name"]["stringValue"] for s in spans if s["name"].startswith("execute_tool"))
    assert tool_names == sorted(2 * [step["tool_call"]["name"] for steps in script.values() for step in steps if "tool_call" in step])
    refused = [s for s in spans if s["name"] == "execute_tool run_command"]
    assert refused and all(s["status"] == {"code": 2, "message": "the tool result is an error"} for s in refused)


def test_atif_trajectories_validate_and_hold_every_answer(project: Path, cli) -> None:
    path = _run(project, cli)
    done = cli("export", "latest", "--format", "atif")
    assert done.exit_code == 0
    documents = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(documents) == 10  # one per trial (no sub-agents here)
    script = _script(project)
    report = load_report(path)
    for document in documents:
        jsonschema.validate(document, ATIF_V1_4)
        assert atif_problems(document) == []
        meta = document["extra"]["trialrun"]
        steps = document["steps"]
        assert steps[0] == {"step_id": 1, "source": "user", "message": report.case(meta["case"]).metadata["prompt"]}
        agent = [s for s in steps if s["source"] == "agent"]
        assert len(agent) == len(script[meta["case"]]) == _answered(path, meta["case"], meta["trial"])
        asked = [(c["function_name"], c["arguments"]) for s in agent for c in s.get("tool_calls", [])]
        assert asked == [(st["tool_call"]["name"], st["tool_call"]["arguments"]) for st in script[meta["case"]] if "tool_call" in st]
        assert agent[-1]["message"] == script[meta["case"]][-1]["reply"]
        assert meta["passed"] == report.case(meta["case"]).trials[meta["trial"] - 1].passed
    refused = next(d for d in documents if d["extra"]["trialrun"]["case"] == "refuse-dangerous-command")
    assert refused["extra"]["trialrun"]["refused"][0]["rule"] == "deny_commands: rm -rf"


def test_export_of_a_run_that_is_not_there_names_it(project: Path, cli) -> None:
    _run(project, cli)
    done = cli("export", "results_20000101_000000", "--format", "otel")
    assert done.exit_code == 2 and "no run 'results_20000101_000000'" in done.stderr
    assert cli("export", "latest").exit_code == 2  # --format is required


def test_the_format_checks_refuse_what_the_specifications_refuse(project: Path, cli) -> None:
    """The checks above can fail: each mutation breaks a rule of the specifications they were derived from."""
    import copy

    _run(project, cli)
    otel = json.loads(cli("export", "latest", "--format", "otel").stdout)
    atif = json.loads(cli("export", "latest", "--format", "atif").stdout.splitlines()[0])
    span = otel["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    for mutate in (lambda s: s.pop("kind"), lambda s: s.update(spanId="xyz"), lambda s: s.update(startTimeUnixNano=5),
                   lambda s: s["attributes"].append({"key": "k", "value": {"intValue": 3}})):
        bad = copy.deepcopy(otel)
        mutate(bad["resourceSpans"][0]["scopeSpans"][0]["spans"][1])
        try:
            jsonschema.validate(bad, OTLP_TRACES)
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"accepted {bad['resourceSpans'][0]['scopeSpans'][0]['spans'][1]}")
    assert genai_problems({**span, "kind": 1}) and genai_problems({**span, "name": "chat"})
    for mutate in (lambda d: d["steps"][1].update(source="assistant"), lambda d: d["steps"][1].update(is_error=True),
                   lambda d: d["steps"][0].update(model_name="m"), lambda d: d.pop("agent")):
        bad = copy.deepcopy(atif)
        mutate(bad)
        try:
            jsonschema.validate(bad, ATIF_V1_4)
        except jsonschema.ValidationError:
            continue
        raise AssertionError(f"accepted {bad}")
    swapped = copy.deepcopy(atif)
    swapped["steps"][1]["step_id"] = 7
    swapped["steps"][1]["observation"]["results"][0]["source_call_id"] = "call_other"
    assert len(atif_problems(swapped)) == 2
