"""An LLM judge for the rubric's output_quality (0, 0.25 or 0.5), spoken over the same wire as any model.

The judge is a model transport like any other, so a scripted judge makes judged suites deterministic in tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from ..agent.loop import DEFAULT_BASE_URLS
from ..expect.rubric import QUALITY_LEVELS
from ..trajectory import Run
from ..wire import Message, codec_named

__all__ = ["llm_judge", "JUDGE_SYSTEM", "parse_quality"]

JUDGE_SYSTEM = (
    "You grade an AI agent's final response against success criteria. Reply with exactly one number: "
    "0 (irrelevant or hallucinated), 0.25 (partially correct) or 0.5 (fully correct)."
)
#: The first number in a reply ("0.50", "Score: 0.25", ".5", "1/2" reads 1): whole, not a piece of a longer one.
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


def parse_quality(text: str) -> float:
    """The judge's score: the first number in its reply, which must be 0, 0.25 or 0.5 however it is written
    ("0.50", "0.250", "Score: .5"). ValueError, quoting the reply, when there is no number or it is another value:
    a judge that answers "1" or "0.3" has not followed the scale, and rounding would invent a grade.

    >>> parse_quality("0.50"), parse_quality("Score: 0.250 (partially correct)"), parse_quality("0")
    (0.5, 0.25, 0.0)
    """
    match = _NUMBER.search(text)
    if not match:
        raise ValueError(f"the judge answered {text[:120]!r}, with no number; expected 0, 0.25 or 0.5")
    value = float(match.group())
    for level in QUALITY_LEVELS:
        if abs(value - level) < 1e-9:
            return level
    reply = "" if text.strip() == match.group() else f" (reply: {text[:120]!r})"
    raise ValueError(f"the judge answered {match.group()}{reply}; expected 0, 0.25 or 0.5")


def llm_judge(
    transport: Callable[[], Any] | Any,
    *,
    api: str = "openai-chat",
    model_name: str = "gpt-4.1-mini",
    prompt: str | None = None,
) -> Callable[[str, str, Run], Awaitable[float]]:
    """A judge for `expect.rubric(judge=...)`. `transport` is an httpx transport, or a factory of one per call."""
    codec = codec_named(api)
    url = DEFAULT_BASE_URLS[api] + codec.request_path(model_name)

    async def judge(criteria: str, response: str, run: Run) -> float:
        question = (f"Prompt given to the agent:\n{prompt}\n\n" if prompt else "") + (
            f"Success criteria:\n{criteria or '(none given: judge whether the response addresses the prompt)'}\n\n"
            f"Agent's final response:\n{response}\n\nScore (0, 0.25 or 0.5):"
        )
        body = codec.encode_request(model=model_name, messages=[Message("user", question)], tools=[], system=JUDGE_SYSTEM, max_tokens=16)
        current = transport() if callable(transport) and not isinstance(transport, (httpx.BaseTransport, httpx.AsyncBaseTransport)) else transport
        headers = {"content-type": "application/json"}
        if api == "anthropic":
            headers["anthropic-version"] = "2023-06-01"
        async with httpx.AsyncClient(transport=current) as client:
            reply = await client.post(url, content=json.dumps(body).encode(), headers=headers)
        if reply.status_code >= 400:
            raise RuntimeError(f"the judge model answered HTTP {reply.status_code}: {reply.text[:200]}")
        return parse_quality(codec.decode_response(reply.content, False).text)

    return judge


