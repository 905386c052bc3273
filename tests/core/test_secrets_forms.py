"""Issue 22's forms of a secret (`_scrub`, `_scrub_shapes`, `_scrub_forms`): an AWS secret key beside its key id
after a JSON escape or `=`, `\\/`-escaped, an AWS session token; `Cookie:`/`Set-Cookie:` values, `X-Auth-Token`-style
headers and `?key=` values written in a body; a known credential base64-encoded at each of the three alignments
inside a longer base64 text, and URL-encoded with lower-case hex. Each is also checked for what it must leave alone.

The expected forms are worked out here independently of the scrubber: a value's base64 inside a longer text is
found by encoding it between two different fillers and keeping the characters that agree."""

from __future__ import annotations

import base64
import json
import re
import secrets
from urllib.parse import quote

import pytest

from trialrun._scrub import REDACTED, add_secret, scrub_text

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize("written", [
    f"{AWS_ID}\n{AWS_SECRET}", f"{AWS_ID}\t{AWS_SECRET}", f"key_id={AWS_ID} key={AWS_SECRET}",
    f"{AWS_ID},{AWS_SECRET}", f"{AWS_ID}\n\n{AWS_SECRET}\n",
])
def test_an_aws_secret_key_beside_its_id_is_scrubbed_in_every_escaping(written: str) -> None:
    for text in (written, json.dumps(written), json.dumps(json.dumps(written)), json.dumps(written).replace("/", "\\/")):
        scrubbed = scrub_text(text)
        assert AWS_SECRET not in scrubbed and "bPxRfiCY" not in scrubbed and AWS_ID not in scrubbed, scrubbed


@pytest.mark.parametrize("text", [
    '{"AccessKeyId": "ASIAIOSFODNN7EXAMPLE", "SecretAccessKey": "wJalrXUtnFEMI\\/K7MDENG\\/bPxRfiCYEXAMPLEKEY"}',
    json.dumps('{"SecretAccessKey": "wJalrXUtnFEMI\\/K7MDENG\\/bPxRfiCYEXAMPLEKEY"}'),
    "aws secret-access-key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
])
def test_a_named_aws_secret_key_is_scrubbed_whole_when_slashes_are_escaped(text: str) -> None:
    scrubbed = scrub_text(text)
    assert "K7MDENG" not in scrubbed and "bPxRfiCY" not in scrubbed and REDACTED in scrubbed, scrubbed


def test_an_aws_session_token_is_scrubbed() -> None:
    token = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD" + "a1B2" * 20
    for text in (f"aws_session_token = {token}", json.dumps({"SessionToken": token}), f"x-amz-security-token: {token}"):
        assert "IQoJb3JpZ2lu" not in scrub_text(text), text


@pytest.mark.parametrize("text, kept", [
    ("Cookie: theme=dark; sid=s3ss10n-c00kie-value; lang=en", "Cookie: theme=dark; sid=REDACTED; lang=en"),
    ("Set-Cookie: session=abcdef0123456789; Path=/; Domain=example.com; HttpOnly",
     "Set-Cookie: session=REDACTED; Path=/; Domain=example.com; HttpOnly"),
    ('{"headers": {"Cookie": "sid=s3ss10n-c00kie-value"}}', '{"headers": {"Cookie": "sid=REDACTED"}}'),
    ("X-Auth-Token: 0123456789abcdef", "X-Auth-Token: REDACTED"),
    ('{"X-Auth-Token": "0123456789abcdef", "X-Request-Id": "req-0123456789"}',
     '{"X-Auth-Token": "REDACTED", "X-Request-Id": "req-0123456789"}'),
    ("private-token: glpat-0123456789abcdef", "private-token: REDACTED"),
    ("x-api-key: k3y-v4lue-0123", "x-api-key: REDACTED"),
    ("GET /v1/items?page=2&key=q1w2e3r4t5y6&sort=asc", "GET /v1/items?page=2&key=REDACTED&sort=asc"),
    ("<a href=\"/x?a=1&amp;access_token=q1w2e3r4t5y6\">", "<a href=\"/x?a=1&amp;access_token=REDACTED\">"),
    ('{"url": "/x?a=1\\u0026sig=q1w2e3r4t5y6"}', '{"url": "/x?a=1\\u0026sig=REDACTED"}'),
])
def test_cookies_credential_headers_and_query_values_in_a_body(text: str, kept: str) -> None:
    assert scrub_text(text) == kept
    assert REDACTED in scrub_text(json.dumps(text))


@pytest.mark.parametrize("text", [
    '{"usage": {"max_tokens": 1000, "input_tokens": 12345678, "prompt_tokens": 12}}',
    "the key-points: ordinary words here",
    "monkey-patching: works differently here",
    "see https://example.com/path?page=2&sort=asc&lang=english",
    "the cookie jar: chocolate",
    "x-request-id: 0123456789abcdef",
    "commit 3f786850e387550fdab836ed7d6dc881de23001b",
])
def test_what_the_new_rules_leave_alone(text: str) -> None:
    assert scrub_text(text) is text


def _aligned_runs(value: bytes, urlsafe: bool) -> list[str]:
    """The characters of base64(... + value + ...) that do not depend on the bytes around it, per alignment."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    runs = []
    for align in range(3):
        one = encode(b"\x00" * align + value + b"\x00\x00").decode()
        other = encode(b"\xff" * align + value + b"\xff\xff").decode()
        agreed = "".join(a if a == b else " " for a, b in zip(one, other)).split()
        runs.append(max(agreed, key=len))
    return runs


@pytest.mark.parametrize("urlsafe", [False, True])
def test_a_registered_value_is_scrubbed_from_any_longer_base64_text_at_each_alignment(urlsafe: bool) -> None:
    value = "tok-" + secrets.token_hex(6) + "/?>~"  # `/`, `?`, `>`, `~`: the two alphabets differ on them
    assert add_secret(value, source="a test")
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    for prefix in (b"", b"a", b"ab", b"abc", b"TOKEN=", b"token: "):
        blob = encode(prefix + value.encode() + b"\n and more text after it").decode()
        runs = [run for run in _aligned_runs(value.encode(), urlsafe) if run in blob]
        assert runs, "the test's own reckoning must find the value in the blob"
        scrubbed = scrub_text(f'{{"body_base64": "{blob}"}}')
        assert not any(run in scrubbed for run in runs), (prefix, scrubbed)
        inner = json.loads(scrubbed)["body_base64"]
        assert len(inner) == len(blob) and "REDACTED" in inner  # the same length: it still decodes
        decoded = (base64.urlsafe_b64decode if urlsafe else base64.b64decode)(inner)
        assert value.encode() not in decoded and decoded.endswith(b" and more text after it")
    alone = encode(value.encode()).decode()
    assert scrub_text(f"the token is {alone} here") == "the token is REDACTED here"
    assert scrub_text(f"the token is {alone.rstrip('=')}.") == "the token is REDACTED."


def test_an_environment_value_is_scrubbed_url_encoded_with_lower_case_hex(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "deploy/" + secrets.token_hex(5) + "?x=1"
    monkeypatch.setenv("DEPLOY_SERVICE_TOKEN", value)
    upper = quote(value, safe="")
    lower = re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), upper)
    assert upper != lower
    for form in (upper, lower, base64.b64encode(b"x" + value.encode()).decode()):
        scrubbed = scrub_text(f"sent {form} along")
        assert value not in scrubbed and upper not in scrubbed and lower not in scrubbed, scrubbed
        assert REDACTED in scrubbed


def test_a_registered_value_is_scrubbed_in_hex_and_url_encoded_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    value = "deploy/" + secrets.token_hex(6) + "&y=2"
    monkeypatch.setenv("DEPLOY_SERVICE_TOKEN", value)
    twice = quote(quote(value, safe=""), safe="")  # worked out here: %252F for "/"
    assert "%252F" in twice
    for form in (value.encode().hex(), value.encode().hex().upper(), twice, twice.lower()):
        scrubbed = scrub_text(f"GET /redirect?next={form} HTTP/1.1")
        assert form not in scrubbed and scrubbed == "GET /redirect?next=REDACTED HTTP/1.1", scrubbed
    assert scrub_text("sha 0123456789abcdef0123456789abcdef") == "sha 0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize("text, kept", [
    ("postgres://app:s3cretpw@db:5432/x", "postgres://app:REDACTED@db:5432/x"),
    ("openai-compatible:http://eval:pa55-word@gateway/v1#llama", "openai-compatible:http://eval:REDACTED@gateway/v1#llama"),
    ("http://localhost:8080/v1 and https://example.com/a:b@c", "http://localhost:8080/v1 and https://example.com/a:b@c"),
])
def test_the_password_of_a_url_s_user_info(text: str, kept: str) -> None:
    assert scrub_text(text) == kept


@pytest.mark.parametrize("text, kept", [
    ("x-session-id: 0123456789abcdef", "x-session-id: REDACTED"),
    ("x-amz-security-token: 0123456789abcdef", "x-amz-security-token: REDACTED"),
    ("x-goog-api-key: 0123456789abcdef", "x-goog-api-key: REDACTED"),
    ('{"auth-method": "password-based", "x-auth-token-expiry": "2026-12-01T00:00:00"}',
     '{"auth-method": "password-based", "x-auth-token-expiry": "2026-12-01T00:00:00"}'),
    ('{"token": "abcdefghijklmn", "key": "0123456789abcdef"}', '{"token": "abcdefghijklmn", "key": "0123456789abcdef"}'),
])
def test_a_hyphenated_header_is_a_credential_by_its_last_part(text: str, kept: str) -> None:
    assert scrub_text(text) == kept
