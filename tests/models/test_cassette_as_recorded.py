"""Cassettes as their recorders wrote them (issue 9, item 5): compressed bodies, `!!binary` header values.

vcrpy stores bodies as they crossed the wire: gzip bytes as `!!binary` with `Content-Encoding: gzip`. botocore hands
it header values as bytes, stored as `!!binary` too. The files under tests/fixtures/provider-traffic/*-gzip and
bedrock-binary-headers are such real recordings (see SOURCES.md); the values asserted here were read in those files.
A body whose encoding cannot be undone stays as recorded WITH its header, and the trajectory says so by name.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
import yaml

from trialrun.models import Cassette, read_trajectory
from trialrun.models._cassette_io import load_exchanges

TRAFFIC = Path(__file__).resolve().parents[1] / "fixtures" / "provider-traffic"
CHAT_URL = "https://api.openai.com/v1/chat/completions"

pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")


def _bodies(path: Path) -> list[dict[str, Any]]:
    return [json.loads(exchange.request_body) for exchange in load_exchanges(path)]


def _calls(trajectory: Any) -> list[list[tuple[str, dict[str, Any]]]]:
    return [[(call.name, call.arguments) for call in turn.tool_calls] for turn in trajectory.turns]


def _results(trajectory: Any) -> list[list[str]]:
    return [[result.content for result in turn.tool_results] for turn in trajectory.turns]


# -- gzip bodies: loading ---------------------------------------------------------------------------------------------

def test_gzip_bodies_are_decompressed_on_load_and_lose_the_headers_of_the_compressed_bytes() -> None:
    path = TRAFFIC / "openai-chat-gzip" / "test_tools__test_tool_use_chain_of_two_calls.yaml"
    raw = yaml.safe_load(path.read_text())["interactions"][0]["response"]
    assert raw["headers"]["Content-Encoding"] == ["gzip"] and isinstance(raw["body"]["string"], bytes)  # as recorded
    exchange = load_exchanges(path)[0]
    assert json.loads(exchange.response_body)["object"] == "chat.completion"
    assert {k.lower() for k in exchange.response_headers} & {"content-encoding", "content-length"} == set()
    assert exchange.response_headers["Content-Type"] == "application/json"


@pytest.mark.parametrize("relative, calls, results, final", [
    ("openai-chat-gzip/test_tools__test_tool_use_chain_of_two_calls.yaml",
     [[("lookup_population", {"country": "Crumpet"})], [("can_have_dragons", {"population": 123124})], []],
     [["123124"], ["true"], []], "YES"),
    ("openai-responses-gzip/test_openai_responses__test_responses_tool_use.yaml",
     [[("multiply", {"a": 1231, "b": 2331})], []], [["2869461"], []], "1231 * 2331 = 2,869,461"),
    ("anthropic-gzip/test_call_with_tool_error__anthropic_claude_sonnet_4_0.yaml",
     [[("passphrase_test_tool", {"passphrase": "portal"})], [("passphrase_test_tool", {"passphrase": "cake"})], []],
     [["Incorrect passhrase: The correct passphrase is 'cake'. Try again."], ["The cake is a lie."], []],
     "Success! Using the correct passphrase 'cake', the secret phrase retrieved is: \"The cake is a lie.\""),
    ("gemini-gzip/test_call_with_tool_error__google_gemini_2_5_flash.yaml",
     [[("passphrase_test_tool", {"passphrase": "portal"})], []],
     [["Incorrect passhrase: The correct passphrase is 'cake'. Try again."], []],
     "The passphrase 'portal' is incorrect. The correct passphrase is 'cake'."),
], ids=["openai-chat", "openai-responses", "anthropic", "gemini"])
def test_gzip_cassettes_decode_to_the_tool_calls_they_hold(
    relative: str, calls: list[Any], results: list[Any], final: str
) -> None:
    trajectory = read_trajectory(TRAFFIC / relative)
    assert trajectory.notes == []
    assert _calls(trajectory) == calls
    assert _results(trajectory) == results
    assert trajectory.turns[-1].text == final


# -- gzip bodies: replay through the official SDKs ---------------------------------------------------------------------

def test_gzip_chat_cassette_replays_through_the_openai_sdk() -> None:
    path = TRAFFIC / "openai-chat-gzip" / "test_tools__test_tool_use_chain_of_two_calls.yaml"
    cassette = Cassette(path)
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=cassette), max_retries=0)
    first, second, third = (client.chat.completions.create(**body) for body in _bodies(path))
    calls = [(c.id, c.function.name, json.loads(c.function.arguments)) for c in first.choices[0].message.tool_calls]
    assert calls == [("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", {"country": "Crumpet"})]
    assert second.choices[0].message.tool_calls[0].function.name == "can_have_dragons"
    assert third.choices[0].message.content == "YES"
    assert (cassette.problems, cassette.unused) == ([], 0)
    assert _calls(cassette.trajectory()) == _calls(read_trajectory(path))


def test_gzip_responses_cassette_replays_through_the_openai_sdk_async() -> None:
    import asyncio

    path = TRAFFIC / "openai-responses-gzip" / "test_openai_responses__test_responses_tool_use.yaml"
    cassette = Cassette(path)
    client = openai.AsyncOpenAI(api_key="sk-test", http_client=httpx.AsyncClient(transport=cassette), max_retries=0)

    async def main() -> tuple[Any, Any]:
        first, second = _bodies(path)
        return await client.responses.create(**first), await client.responses.create(**second)

    first, second = asyncio.run(main())
    calls = [(o.name, json.loads(o.arguments)) for o in first.output if o.type == "function_call"]
    assert calls == [("multiply", {"a": 1231, "b": 2331})]
    assert second.output_text == "1231 * 2331 = 2,869,461"
    assert cassette.problems == []


def test_gzip_anthropic_cassette_replays_through_the_anthropic_sdk() -> None:
    path = TRAFFIC / "anthropic-gzip" / "test_call_with_tool_error__anthropic_claude_sonnet_4_0.yaml"
    cassette = Cassette(path)
    client = anthropic.Anthropic(api_key="test", http_client=httpx2.Client(transport=cassette), max_retries=0)
    messages = [client.messages.create(**body) for body in _bodies(path)]
    uses = [[(b.name, b.input) for b in m.content if b.type == "tool_use"] for m in messages]
    assert uses == [[("passphrase_test_tool", {"passphrase": "portal"})],
                    [("passphrase_test_tool", {"passphrase": "cake"})], []]
    assert (cassette.problems, cassette.unused) == ([], 0)


def test_gzip_gemini_cassette_replays_through_the_google_genai_sdk() -> None:
    from google import genai
    from google.genai import types

    path = TRAFFIC / "gemini-gzip" / "test_call_with_tool_error__google_gemini_2_5_flash.yaml"
    cassette = Cassette(path)
    options = types.HttpOptions(api_version="v1beta", httpx_client=httpx.Client(transport=cassette))
    client = genai.Client(api_key="test-key", http_options=options)
    answers = [
        client.models.generate_content(
            model="gemini-2.5-flash", contents=body["contents"], config=types.GenerateContentConfig(tools=body["tools"])
        )
        for body in _bodies(path)
    ]
    assert [(c.name, c.args) for c in answers[0].function_calls] == [("passphrase_test_tool", {"passphrase": "portal"})]
    assert answers[1].text == "The passphrase 'portal' is incorrect. The correct passphrase is 'cake'."
    assert (cassette.problems, cassette.unused) == ([], 0)


def test_replay_serves_decoded_bytes_without_the_encoding_header() -> None:
    path = TRAFFIC / "openai-chat-gzip" / "test_tools__test_tool_use_chain_of_two_calls.yaml"
    exchange = load_exchanges(path)[0]
    with httpx.Client(transport=Cassette(path)) as client:
        response = client.post(exchange.url, content=exchange.request_body)
    assert "content-encoding" not in response.headers
    assert json.loads(response.content)["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "lookup_population"


# -- !!binary header values (botocore) ----------------------------------------------------------------------------------

def test_binary_header_values_are_read_as_text() -> None:
    path = TRAFFIC / "bedrock-binary-headers" / "agents__TestBedrockNativeToolCalling.test_bedrock_agent_kickoff_with_tools_mocked.yaml"
    raw = yaml.safe_load(path.read_text())["interactions"][0]["request"]["headers"]
    assert raw["Content-Type"] == [b"application/json"]  # what botocore handed vcrpy
    first, second = load_exchanges(path)
    assert first.request_headers["Content-Type"] == "application/json"
    assert first.request_headers["amz-sdk-request"] == "attempt=1"
    # The tool call and its result the Bedrock Converse traffic holds (no trialrun codec reads Converse yet).
    content = json.loads(first.response_body)["output"]["message"]["content"]
    assert [c["toolUse"]["name"] for c in content if "toolUse" in c] == ["calculator"]
    answered = json.loads(second.request_body)["messages"][-1]["content"][0]["toolResult"]
    assert answered["content"] == [{"text": "The result of 15 * 8 is 120"}]


def test_a_binary_header_file_decodes_and_replays_its_model_traffic() -> None:
    path = TRAFFIC / "bedrock-binary-headers" / "test_bedrock__test_bedrock_model_thinking_part_from_other_model.yaml"
    exchanges = load_exchanges(path)
    assert exchanges[1].request_headers["content-type"] == "application/json"  # was !!binary
    trajectory = read_trajectory(path)
    assert len(trajectory.turns) == 1 and trajectory.turns[0].text.startswith("Here’s a simple, safe way to cross:")
    cassette = Cassette(path)
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=cassette), max_retries=0)
    response = client.responses.create(**json.loads(exchanges[0].request_body))
    assert response.output_text.startswith("Here’s a simple, safe way to cross:")
    with httpx.Client(transport=cassette) as raw:  # the Converse exchange, whose recorded path is percent-encoded
        converse = raw.post(exchanges[1].url, content=exchanges[1].request_body)
    assert converse.status_code == 200 and json.loads(converse.content)["stopReason"] == "end_turn"
    assert (cassette.problems, cassette.unused) == ([], 0)


# -- encodings written here: every coding, and the ones that cannot be undone -----------------------------------------

COMPLETION = {
    "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "call_1", "type": "function",
                                 "function": {"name": "read_file", "arguments": "{\"path\": \"notes.txt\"}"}}]}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
}
REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "read the notes"}],
           "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {
               "type": "object", "properties": {"path": {"type": "string"}}}}}]}


def _vcr_file(tmp_path: Path, body: bytes, encoding: str | None, request_encoding: str | None = None) -> Path:
    """A vcrpy cassette (bytes become `!!binary`, as vcrpy writes them) of one chat completion."""
    request_body: Any = json.dumps(REQUEST)
    request_headers: dict[str, list[Any]] = {"Content-Type": ["application/json"]}
    if request_encoding:
        request_body, request_headers["Content-Encoding"] = gzip.compress(request_body.encode()), [request_encoding]
    headers: dict[str, list[Any]] = {"Content-Type": ["application/json"], "Content-Length": [str(len(body))]}
    if encoding:
        headers["Content-Encoding"] = [encoding]
    data = {"interactions": [{
        "request": {"method": "POST", "uri": CHAT_URL, "headers": request_headers, "body": request_body},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": headers, "body": {"string": body}},
    }], "version": 1}
    path = tmp_path / "cassette.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _raw_deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


@pytest.mark.parametrize("encoding, encode", [
    ("gzip", gzip.compress),
    ("deflate", zlib.compress),
    ("deflate", _raw_deflate),
    ("gzip, deflate", lambda data: zlib.compress(gzip.compress(data))),
    ("identity", lambda data: data),
], ids=["gzip", "deflate-zlib", "deflate-raw", "gzip-then-deflate", "identity"])
def test_each_coding_is_undone_on_load(tmp_path: Path, encoding: str, encode: Any) -> None:
    path = _vcr_file(tmp_path, encode(json.dumps(COMPLETION).encode()), encoding)
    trajectory = read_trajectory(path)
    # the one recorded call has no later request to carry its result: that is the only note
    assert trajectory.notes == ["tool call 'read_file' (id call_1) never got a result"]
    assert _calls(trajectory) == [[("read_file", {"path": "notes.txt"})]]


def test_a_gzip_request_body_is_undone_so_replay_matches_the_plain_request(tmp_path: Path) -> None:
    path = _vcr_file(tmp_path, gzip.compress(json.dumps(COMPLETION).encode()), "gzip", request_encoding="gzip")
    assert json.loads(load_exchanges(path)[0].request_body) == REQUEST
    cassette = Cassette(path)
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=cassette), max_retries=0)
    completion = client.chat.completions.create(**REQUEST)
    assert completion.choices[0].message.tool_calls[0].function.name == "read_file"
    assert cassette.problems == []


def test_a_stale_gzip_header_over_plain_text_is_dropped(tmp_path: Path) -> None:
    path = _vcr_file(tmp_path, json.dumps(COMPLETION).encode(), "gzip")  # stored decoded, header kept
    exchange = load_exchanges(path)[0]
    assert "Content-Encoding" not in exchange.response_headers
    assert _calls(read_trajectory(path)) == [[("read_file", {"path": "notes.txt"})]]


def _without(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make `modules` unimportable, as on a machine without those packages."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.parametrize("encoding, missing, needs", [
    ("br", ("brotli", "brotlicffi"), "undoing br needs the package 'brotli' (pip install brotli), which is not installed"),
    ("zstd", ("zstandard", "compression.zstd"), "undoing zstd needs the package 'zstandard' (pip install zstandard)"),
])
def test_an_encoding_without_its_package_is_a_note_naming_the_exchange_and_the_encoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str, missing: tuple[str, ...], needs: str
) -> None:
    _without(monkeypatch, *missing)
    recorded = b"\x8b\x7f\x80compressed\xff\x00bytes"
    path = _vcr_file(tmp_path, recorded, encoding)
    exchange = load_exchanges(path)[0]
    assert exchange.response_body == recorded and exchange.response_headers["Content-Encoding"] == encoding  # as recorded
    trajectory = read_trajectory(path)
    assert trajectory.turns == []
    assert len(trajectory.notes) == 1
    note = trajectory.notes[0]
    assert note.startswith(f"exchange 1 (POST /v1/chat/completions): response body has Content-Encoding '{encoding}'")
    assert needs in note


def test_replay_of_a_body_that_cannot_be_undone_serves_the_recorded_bytes_with_their_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without(monkeypatch, "brotli", "brotlicffi")
    recorded = b"\x8b\x7f\x80compressed\xff\x00bytes"
    cassette = Cassette(_vcr_file(tmp_path, recorded, "br"))
    with httpx.Client(transport=cassette) as client:  # this httpx has no br decoder either: it passes the bytes on
        response = client.post(CHAT_URL, json=REQUEST)
    assert (response.headers["content-encoding"], response.content) == ("br", recorded)  # consistent: encoded bytes, with the header
    assert cassette.problems == []
    assert "response body has Content-Encoding 'br'" in cassette.trajectory().notes[0]


@pytest.mark.parametrize("encoding, body, says", [
    ("gzip", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\xff\xfe\xfd", "gzip data is corrupt"),
    ("compress", b"\x1f\x9d\x90\xff", "the coding 'compress' is not one trialrun can undo (gzip, deflate, br, zstd)"),
], ids=["corrupt-gzip", "unknown-coding"])
def test_corrupt_or_unknown_encodings_are_notes_not_an_empty_success(
    tmp_path: Path, encoding: str, body: bytes, says: str
) -> None:
    trajectory = read_trajectory(_vcr_file(tmp_path, body, encoding))
    assert trajectory.turns == []
    assert trajectory.notes and f"Content-Encoding '{encoding}'" in trajectory.notes[0] and says in trajectory.notes[0]


# -- live traffic observed while it streams -----------------------------------------------------------------------------

class _Chunks(httpx.SyncByteStream):
    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    def __iter__(self) -> Any:
        yield from self.chunks


def test_a_streamed_live_body_that_cannot_be_undone_is_recorded_with_its_header(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without(monkeypatch, "zstandard", "compression.zstd")
    recorded = b"\x28\xb5\x2f\xfd not really zstd"

    def provider(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json", "content-encoding": "zstd"},
                              stream=_Chunks(recorded[:5], recorded[5:]))

    model = Cassette(tmp_path / "live.yaml", mode="live", upstream=httpx.MockTransport(provider))
    with httpx.Client(transport=model) as client, client.stream("POST", CHAT_URL, json=REQUEST) as response:
        b"".join(response.iter_raw())
    exchange = model.exchanges[0]
    assert (exchange.response_headers["content-encoding"], exchange.response_body) == ("zstd", recorded)
    assert "response body has Content-Encoding 'zstd'" in model.trajectory().notes[0]


def test_a_streamed_live_gzip_body_is_recorded_decoded_without_its_header(tmp_path: Path) -> None:
    compressed = gzip.compress(json.dumps(COMPLETION).encode())

    def provider(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "application/json", "content-encoding": "gzip"},
                              stream=_Chunks(compressed[:10], compressed[10:]))

    model = Cassette(tmp_path / "live.yaml", mode="live", upstream=httpx.MockTransport(provider))
    client = openai.OpenAI(api_key="sk-test", http_client=httpx.Client(transport=model), max_retries=0)
    assert client.chat.completions.create(**REQUEST).choices[0].message.tool_calls[0].function.name == "read_file"
    exchange = model.exchanges[0]
    assert "content-encoding" not in exchange.response_headers
    assert _calls(model.trajectory()) == [[("read_file", {"path": "notes.txt"})]]


def test_a_read_live_body_httpx_could_not_decode_keeps_its_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(httpx._decoders.SUPPORTED_DECODERS, "br", raising=False)  # as on a machine without brotli
    recorded = b"\x8b\x7f\x80compressed\xff\x00bytes"

    def provider(request: httpx.Request) -> httpx.Response:  # content=: httpx reads it at once, passing br through
        return httpx.Response(200, headers={"content-type": "application/json", "content-encoding": "br"},
                              content=recorded)

    model = Cassette(tmp_path / "live.yaml", mode="live", upstream=httpx.MockTransport(provider))
    with httpx.Client(transport=model) as client:
        client.post(CHAT_URL, json=REQUEST)
    exchange = model.exchanges[0]
    assert (exchange.response_headers["content-encoding"], exchange.response_body) == ("br", recorded)
    assert "response body has Content-Encoding 'br'" in model.trajectory().notes[0]
