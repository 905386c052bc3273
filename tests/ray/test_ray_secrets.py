"""A credential a Ray worker's transport learnt (a LiveModel's `api_key` built on the worker) is scrubbed from what
the driver writes, though the driver never saw that transport: the worker hands its registered credentials back."""

from __future__ import annotations

from pathlib import Path

import httpx

import trialrun as tr
from trialrun import expect
from trialrun.report.store import ResultsStore

TOKEN = "ray-worker-only-credential-5b2"  # no key shape, in no environment variable, built only on the worker


def _upstream(request: httpx.Request) -> httpx.Response:
    message = {"role": "assistant", "content": "the key is " + request.headers["authorization"].removeprefix("Bearer ")}
    return httpx.Response(200, json={"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                                     "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})


def _echoes_its_key(ctx: tr.TrialContext) -> tr.Run:
    model = ctx.observe(tr.LiveModel("https://models.internal.example/v1", api_key=TOKEN,
                                     transport=httpx.MockTransport(_upstream)))
    return tr.Agent(model).run(f"Say my key back: {TOKEN}")


def test_a_credential_learnt_on_a_worker_is_scrubbed_by_the_driver(ray_cluster: str, tmp_path: Path) -> None:
    from trialrun._scrub import registered_secrets

    assert TOKEN not in registered_secrets()  # the driver has not seen it (the case runs on the workers only)
    case = tr.Case(name="echoes", invoke=_echoes_its_key, expect_outcome=[expect.contains("nothing like it")])
    report = tr.evaluate([case], trials=2, executor=tr.RayExecutor())
    assert [t.output for t in report.cases[0].trials] == [f"the key is {TOKEN}"] * 2  # in memory, as locally
    assert TOKEN in registered_secrets()  # handed back with the results
    saved = ResultsStore(tmp_path).save(report).read_text(encoding="utf-8")
    assert TOKEN not in saved and "the key is REDACTED" in saved
