"""The one scrubber (`trialrun._scrub`): every key shape, the environment's secret values in every escaping, JSON
that stays valid, streams scrubbed after reassembly, and look-alikes left alone."""

from __future__ import annotations

import json

import pytest

from trialrun._scrub import (
    REDACTED,
    add_secret,
    is_secret_name,
    scrub_body,
    scrub_headers,
    scrub_json,
    scrub_text,
    scrub_url,
)

SHAPES = {
    "openai": "sk-abcdefghijklmnopqrstuvwx0123",
    "openai-project": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstu",
    "github-ghp": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github-gho": "gho_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github-ghs": "ghs_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github-pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUV",
    "slack": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "slack-user": "xoxp-123456789012-1234567890123-AbCdEfGhIjKl",
    "aws-key-id": "AKIAIOSFODNN7EXAMPLE",
    "aws-session-key-id": "ASIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
}
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQyNTUxOQAAACD==\n-----END OPENSSH PRIVATE KEY-----"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_every_key_shape_is_scrubbed_as_text_and_inside_json(name: str) -> None:
    key = SHAPES[name]
    assert scrub_text(f"the key {key} leaked") == "the key REDACTED leaked"
    nested = json.dumps({"arguments": json.dumps({"text": f"line\n{key}\tend"})})  # JSON in JSON, after an escape
    scrubbed = scrub_text(nested)
    assert key not in scrubbed
    assert json.loads(json.loads(scrubbed)["arguments"]) == {"text": "line\nREDACTED\tend"}


@pytest.mark.parametrize("text, kept", [
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = REDACTED"),
    (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', '{"SecretAccessKey": "REDACTED"}'),
    (f"AKIAIOSFODNN7EXAMPLE:{AWS_SECRET}", "REDACTED:REDACTED"),  # a bare secret key, beside its key id
    ("Authorization: Bearer abc.def-ghi_jkl012345", "Authorization: Bearer REDACTED"),
    ("curl -H 'authorization: token 0123456789abcdef'", "curl -H 'authorization: token REDACTED'"),
    ("DB password=Hunter2Hunter2 ok", "DB password=REDACTED ok"),
    ('{"client_secret": "s3cr3t-value-42"}', '{"client_secret": "REDACTED"}'),
    (f"key:\n{PEM}\nafter", "key:\nREDACTED\nafter"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0123456789abcdef", "REDACTED"),  # cut short: still all of it
])
def test_contextual_secrets_lose_their_value_and_keep_their_name(text: str, kept: str) -> None:
    assert scrub_text(text) == kept


@pytest.mark.parametrize("text", [
    "task-assessment-framework-v2 and risk-management-plan-2024",  # `sk-` inside a word
    "commit 3f786850e387550fdab836ed7d6dc881de23001b",  # a SHA-1: 40 characters, but lower-case hex
    '{"usage": {"max_tokens": 1000, "prompt_tokens": 12}, "token": "abc"}',
    "the password is short",  # no assignment
    "Bearer of bad news",  # not a token
    "ghp_short and xoxb- and AKIA-not-an-id",
    "see https://example.com/path?page=2&sort=asc",
])
def test_look_alikes_are_left_alone(text: str) -> None:
    assert scrub_text(text) is text  # unchanged, not even copied


def test_the_environment_secret_values_are_scrubbed_in_every_escaping(monkeypatch: pytest.MonkeyPatch) -> None:
    value = 'p@ss "word" <with> \\ specials'
    monkeypatch.setenv("SERVICE_DB_PASSWORD", value)
    monkeypatch.setenv("ACME_API_KEY", "plain0value0without0shape")
    monkeypatch.setenv("HOME_DIR_HINT", "plain0value0not0secret")  # a name that does not look secret
    once = json.dumps(value)[1:-1]
    for written in (value, once, json.dumps(once)[1:-1], repr(value)[1:-1], once.replace("<", "\\u003c"),
                    "p@ss &quot;word&quot; &lt;with&gt; \\ specials"):
        assert scrub_text(f"[{written}]") == f"[{REDACTED}]", written
    assert scrub_text("x plain0value0without0shape y") == "x REDACTED y"
    assert scrub_text("x plain0value0not0secret y") == "x plain0value0not0secret y"
    monkeypatch.setenv("ACME_API_KEY", "changed0value0now0seen")  # a changed environment is seen at once
    assert scrub_text("changed0value0now0seen plain0value0without0shape") == "REDACTED plain0value0without0shape"


def test_added_secrets_and_extra_values_are_scrubbed() -> None:
    add_secret("registered-by-hand-0042")
    assert scrub_text("a registered-by-hand-0042 b") == "a REDACTED b"
    assert scrub_text("a header-credential-99 b", extra=["header-credential-99"]) == "a REDACTED b"
    assert scrub_json({"k": ["v header-credential-99"], "header-credential-99": 1}, extra=["header-credential-99"]) == {
        "k": ["v REDACTED"], "REDACTED": 1}


@pytest.mark.parametrize("name, secret", [
    ("OPENAI_API_KEY", True), ("ANTHROPIC_API_KEY", True), ("GITHUB_TOKEN", True), ("GH_TOKEN", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("AWS_SESSION_TOKEN", True), ("PGPASSWORD", True), ("DB_PASSWORD_FILE", True),
    ("SLACK_BOT_TOKEN", True), ("STRIPE_KEY", True), ("NPM_AUTH", True), ("GOOGLE_APPLICATION_CREDENTIALS", True),
    ("PATH", False), ("HOME", False), ("PWD", False), ("TOKENIZERS_PARALLELISM", False), ("SSH_AUTH_SOCK", False),
    ("KEYBOARD", False), ("LANG", False),
])
def test_which_environment_names_look_secret(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_headers_and_queries() -> None:
    request = scrub_headers({"Authorization": "Bearer x", "X-Api-Key": "k", "x-trace": f"Bearer {'a' * 20}",
                             "content-type": "application/json"})
    assert request == {"Authorization": REDACTED, "X-Api-Key": REDACTED, "x-trace": "Bearer REDACTED",
                       "content-type": "application/json"}
    response = scrub_headers({"Content-Type": "text/event-stream", "set-cookie": "s=1", "openai-organization": "org",
                              "x-ratelimit-remaining-requests": "9", "x-request-id": "r", "retry-after": "1"},
                             response=True)
    assert response == {"Content-Type": "text/event-stream", "x-ratelimit-remaining-requests": "9", "retry-after": "1"}
    url = scrub_url("https://h/v1/x?key=abc&alt=sse&access_token=t0&api-key=z#frag")
    assert url == "https://h/v1/x?key=REDACTED&alt=sse&access_token=REDACTED&api-key=REDACTED#frag"


def _sse(events: list[tuple[str | None, dict]]) -> bytes:
    return "".join((f"event: {name}\n" if name else "") + f"data: {json.dumps(data)}\n\n" for name, data in events).encode()


KEY = SHAPES["anthropic"]


@pytest.mark.parametrize("api", ["anthropic", "openai-responses", "openai-chat-tool-arguments"])
def test_a_key_split_across_stream_events_is_scrubbed_after_reassembly(api: str) -> None:
    pieces = ["my key: ", KEY[:7], KEY[7:20], KEY[20:], " end"]
    if api == "anthropic":
        events = [("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "text_delta", "text": p}}) for p in pieces]
    elif api == "openai-responses":
        events = [("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m1",
                                                  "output_index": 0, "delta": p}) for p in pieces]
    else:
        events = [(None, {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": json.dumps(p)[1:-1]}}]}}]}) for p in pieces]
    body = _sse(events)
    assert scrub_body(body) == body  # as plain bytes no piece is a key...
    scrubbed = scrub_body(body, streamed=True).decode()
    assert all(piece not in scrubbed for piece in pieces[1:4])  # ...reassembled, the key is found and cut out
    assert "REDACTED" in scrubbed and scrubbed.count("data: ") == len(pieces)
    for block in scrubbed.strip().split("\n\n"):  # still a valid stream
        json.loads(block.split("data: ", 1)[1])


def test_a_stream_without_secrets_is_returned_as_it_was() -> None:
    body = _sse([(None, {"choices": [{"delta": {"content": "hello "}}]}), (None, {"choices": [{"delta": {"content": "you"}}]})])
    assert scrub_body(body, streamed=True) is body


def test_the_one_search_for_any_hint_answers_as_a_test_per_hint_would() -> None:
    """Short texts with no hint of a secret are returned at once; whether one is there is found by one regex (the
    hints factored by common prefix), which must agree with a substring test per hint on every text, hints cut
    short, run together and overlapping included, and a text holding a hint must still be scrubbed."""
    import random

    from trialrun._scrub.shapes import ALL_HINTS, ANY_HINT

    hints = ALL_HINTS
    rng = random.Random(15)
    letters = "".join(sorted(set("".join(hints)))) + " ."
    for _ in range(20_000):
        text = "".join(rng.choice(letters) for _ in range(rng.randint(0, 24)))
        for _ in range(rng.randint(0, 2)):
            hint, at = rng.choice(hints), rng.randint(0, len(text))
            text = text[:at] + hint[:rng.randint(1, len(hint))] + text[at:]
        assert (ANY_HINT.search(text) is not None) == any(h in text for h in hints), text
    for hint in hints:
        assert ANY_HINT.search(f"x{hint}y") and not ANY_HINT.search(f"x{hint[:-1]} {hint[-1]}y")
    assert scrub_text('{"output": "the key is sk-proj-abcdefghijklmnopqrstuvwx"}') == '{"output": "the key is REDACTED"}'


def test_a_key_after_a_json_escape_of_a_control_character_is_still_a_key() -> None:
    """Serialised JSON writes a control character before a key as `\\u001b`, `\\b` or `\\f`, which end in a letter
    or digit: the key must still be found there (a result file, a journal, a sidecar line are scrubbed as JSON)."""
    import json as _json

    key = "sk-proj-" + "a1B2" * 6
    for before in ("\x01", "\x08", "\x0c", "\x1b", "\n", "\t", "\r"):
        assert key not in scrub_text(_json.dumps("out: " + before + key, ensure_ascii=False))
    assert scrub_text("x" + key) == "x" + key  # glued to a word it is not a key of its own (as before)
