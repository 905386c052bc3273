"""A run knows whether it was deterministic by looking: each trial records the kinds of model it really talked to
(the transports know what they are), the result file keeps them, and compare reads a run as deterministic only when
every trial that talked to a model talked to a script or a replay. A transport made but never called does not
count; a trial that called no model at all says so ([]); a transport trialrun cannot name is "other" (live to
compare) unless it says what it is. The config snapshot's spec is read only for files from before trials recorded
their models, and its prefixes are kept in step with the suite's."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from _coin_model import coin_model

import trialrun as tr
from trialrun.models import Cassette, ScriptedModel, reply
from trialrun.report._models_used import SPEC_KINDS, case_determinism, run_models
from trialrun.report.compare import compare
from trialrun.suite.config import MODEL_KINDS, parse_model_spec

ASK = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _ask(client: httpx.Client, url: str = "https://api.openai.com/v1/chat/completions") -> str:
    return str(client.post(url, json=ASK).json()["choices"][0]["message"]["content"])


class _Table(httpx.MockTransport):
    """A mock of the user's own that says it answers like a script."""

    model_kind = "scripted"


def _chat(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]})


def _kinds(invoke: Any, **case: Any) -> list[Any]:
    case.setdefault("expect_outcome", [tr.expect.satisfies(lambda output: True)])
    report = tr.evaluate([tr.Case(name="c", invoke=invoke, **case)], trials=2, include_live_canary=True)
    return [t.models for t in report.cases[0].trials]


def test_each_trial_records_the_models_it_talked_to(tmp_path: Path) -> None:
    assert _kinds(lambda ctx: _ask(ctx.http_client(ctx.scripted([reply("hi")])))) == [["scripted"]] * 2
    assert _kinds(lambda ctx: _ask(ctx.http_client(httpx.MockTransport(_chat)))) == [["other"]] * 2
    assert _kinds(lambda ctx: _ask(ctx.http_client(_Table(_chat)))) == [["scripted"]] * 2
    assert _kinds(lambda ctx: (ctx.scripted([reply("never asked")]), "no call")[1]) == [[], []]  # made, not used

    cassette = tmp_path / "c.yaml"
    with httpx.Client(transport=Cassette(cassette, "record", upstream=ScriptedModel([reply("hi")]))) as client:
        _ask(client)
    assert _kinds(lambda ctx: _ask(ctx.http_client(ctx.cassette(cassette)))) == [["replay"]] * 2

    with coin_model(lambda prompt: 1.0, seed=1) as coin:  # the network (loopback) through httpx's own transport
        url = coin.spec.removeprefix("openai-compatible:").rpartition("#")[0] + "/chat/completions"
        assert _kinds(lambda ctx: _ask(ctx.http_client(), url), mode="live_canary") == [["live"]] * 2
        assert _kinds(lambda ctx: _ask(ctx.http_client(tr.LiveModel()), url), mode="live_canary") == [["live"]] * 2


def _report(models: list[str] | None, snapshot: dict[str, Any] | None = None) -> tr.RunReport:
    trials = [tr.TrialResult(trial=n, passed=True, models=models) for n in (1, 2)]
    case = tr.CaseResult.from_trials("c", trials, tags=[], mode="deterministic")
    return tr.RunReport.build([case], trial_count=2, started_at=datetime(2026, 1, 1, tzinfo=timezone.utc),
                              duration_s=0, config_snapshot=snapshot or {})


@pytest.mark.parametrize("models, snapshot, kind", [
    (["scripted"], {"model": "openai:gpt-4.1"}, "deterministic"),  # what the trials did wins over the configuration
    (["replay", "scripted"], {}, "deterministic"),
    (["scripted", "live"], {}, "live"),
    (["other"], {"model": "scripted:m.yaml"}, "live"),
    ([], {"model": "scripted:m.yaml"}, "unknown"),  # it called no model: nothing says it was deterministic
    (None, {"model": "scripted:m.yaml"}, "deterministic"),  # a 1.0 file: its configuration is all there is
    (None, {"model": "openai-compatible:http://h/v1#m"}, "live"),
    (None, {"model": "claude-sonnet-4"}, "unknown"),  # the eval skill's files name a model, not a kind
    (["scripted"], {"model": "scripted:m.yaml", "judge": "openai:gpt-4.1"}, "live"),  # a live judge scored it
    (["scripted"], {"model": "scripted:m.yaml", "judge": "heuristic"}, "deterministic"),
])
def test_a_run_is_deterministic_only_when_its_trials_say_so(models: list[str] | None, snapshot: dict[str, Any],
                                                            kind: str) -> None:
    report = _report(models, snapshot)
    assert case_determinism(report.cases[0], snapshot) == kind
    assert run_models(report).kind == kind


def test_compare_says_which_runs_were_deterministic_and_why() -> None:
    scripted, live, silent = _report(["scripted"]), _report(["live"]), _report([])
    assert compare(scripted, scripted).pairing == "deterministic"
    assert compare(scripted, live).pairing == "mixed" and compare(live, scripted).pairing == "mixed"
    assert compare(live, live).pairing == "live"
    unknown = compare(silent, live)
    assert unknown.pairing == "unknown" and unknown.cases[0].chance is not None  # judged as live
    assert unknown.models_before is not None and "no trial talked to a model trialrun observed" in unknown.models_before.basis


def test_the_spec_prefixes_compare_reads_agree_with_the_suite_s() -> None:
    assert set(SPEC_KINDS) == set(MODEL_KINDS)
    for kind in MODEL_KINDS:
        target = "http://h/v1#m" if kind == "openai-compatible" else "x"
        assert (SPEC_KINDS[kind] == "live") == parse_model_spec(f"{kind}:{target}").live, kind


def test_the_result_file_keeps_the_models_and_a_1_0_file_still_loads(tmp_path: Path) -> None:
    from trialrun.report.store import load_report

    report = _report(["scripted"])
    path = tmp_path / "results_20260101_000000.json"
    path.write_text(report.model_dump_json())
    assert json.loads(path.read_text())["schema_version"] == "1.1"
    assert load_report(path).cases[0].trials[0].models == ["scripted"]
    old = json.loads(path.read_text())
    old["schema_version"] = "1.0"
    del old["cases"][0]["trials"][0]["models"]
    path.write_text(json.dumps(old))
    assert load_report(path).cases[0].trials[0].models is None
