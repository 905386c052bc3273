"""The whole recorded corpus (issue 9, item 5): every cassette in tests/fixtures/provider-traffic decodes to at least
one turn, or is listed here with the reason it has none, and that reason is checked against the file.

Before compressed bodies were undone, `!!binary` header values read and Gemini's proto names accepted, 53 of these 86
files decoded to a turn; now all but the two listed below do.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _wire_helpers import PROVIDER_TRAFFIC

from trialrun.models._cassette_io import load_exchanges
from trialrun.wire import codec_for, decode_trajectory

FILES = sorted(PROVIDER_TRAFFIC.glob("*/*.yaml"))

#: Files with no turn, and why. Each reason is checked: these hold only traffic no trialrun codec reads.
NO_TURNS = {
    "bedrock-binary-headers/agents__TestBedrockNativeToolCalling.test_bedrock_agent_kickoff_with_tools_mocked.yaml":
        "Bedrock Converse API only (/model/{id}/converse): trialrun has no codec for it",
    "bedrock-binary-headers/test_strict_tool_calls__test_bedrock_mixed_strict_tool_run.yaml":
        "Bedrock Converse API only (/model/{id}/converse): trialrun has no codec for it",
}


def _name(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_every_cassette_decodes_to_a_turn_or_says_why_not() -> None:
    decoded, empty = [], []
    for path in FILES:
        trajectory = decode_trajectory(load_exchanges(path))
        (decoded if trajectory.turns else empty).append(_name(path))
        if trajectory.turns:
            assert _name(path) not in NO_TURNS, f"{_name(path)} now decodes: take it off NO_TURNS"
    print(f"\n{len(decoded)}/{len(FILES)} recorded cassettes decode to at least one turn")
    assert sorted(empty) == sorted(NO_TURNS)
    assert len(decoded) == len(FILES) - len(NO_TURNS) and len(FILES) >= 86


@pytest.mark.parametrize("name", sorted(NO_TURNS))
def test_the_stated_reason_for_no_turns_holds(name: str) -> None:
    exchanges = load_exchanges(PROVIDER_TRAFFIC / name)
    assert exchanges and all(e.path.endswith("/converse") and codec_for(e.path) is None for e in exchanges)
    assert decode_trajectory(exchanges).notes == []  # traffic that is not a model API trialrun knows, not an error


def test_the_corpus_holds_the_recordings_the_issue_asks_for() -> None:
    """Real files of each kind item 5 names: gzip bodies, `!!binary` header values, Gemini proto-style parts."""
    import yaml

    gzip_files = binary_header_files = proto_files = 0
    for path in FILES:
        interactions = yaml.safe_load(path.read_text()).get("interactions") or []
        responses = [i["response"] for i in interactions]
        gzip_files += any(
            isinstance((r.get("body") or {}).get("string"), bytes)
            and "gzip" in str({k.lower(): v for k, v in r.get("headers", {}).items()}.get("content-encoding"))
            for r in responses
        )
        binary_header_files += any(
            isinstance(value, bytes)
            for i in interactions for values in (i["request"].get("headers") or {}).values() for value in values
        )
        proto_files += any('"function_response"' in str(i["request"].get("body")) for i in interactions)
    assert (gzip_files >= 30, binary_header_files >= 3, proto_files >= 3) == (True, True, True), (
        gzip_files, binary_header_files, proto_files)
