"""The process-wide registry of credentials (`_scrub.add_secret`): what trialrun's transports learn is scrubbed by the
one scrubber everywhere, in the encodings it travels in, never a value too short to be told from a word, and
exactly that value (registering one never redacts another)."""

from __future__ import annotations

import base64
import json
import threading
import warnings
from urllib.parse import quote, quote_plus

import httpx
import pytest

import trialrun as tr
from trialrun import _scrub
from trialrun._scrub import MIN_REGISTERED, REDACTED, add_header_credentials, add_secret, scrub_bytes, scrub_text
from trialrun._scrub.registry import _current


def test_registering_is_process_wide_and_scrubs_exactly_that_value() -> None:
    # Registered in another thread (as a transport does, on a worker thread), seen by every scrub of the process.
    thread = threading.Thread(target=add_secret, args=("alpha-registry-value-01",), kwargs={"source": "a test"})
    thread.start()
    thread.join()
    assert scrub_text("use alpha-registry-value-01 now") == "use REDACTED now"
    assert scrub_bytes(b'{"k": "alpha-registry-value-01"}') == b'{"k": "REDACTED"}'
    # Unrelated values stay: a neighbour with the same prefix, its prefix alone, its pieces, other text.
    for text in ("use alpha-registry-value-02 now", "alpha-registry-value-0", "alpha registry value 01",
                 "registry-value-01 and alpha-"):
        assert scrub_text(text) is text  # not a copy either: nothing was found
    assert add_secret("alpha-registry-value-01") is True  # a second time: no change, no rebuild
    state = _current()
    add_secret("alpha-registry-value-01")
    assert _current() is state


def test_a_short_value_is_not_registered_and_says_so_once_per_source() -> None:
    with pytest.warns(RuntimeWarning, match=r"a credential from LiveModel\('x'\) api_key has 3 characters, fewer "
                                            rf"than {MIN_REGISTERED}: it is NOT scrubbed") as caught:
        assert add_secret("q9z", source="LiveModel('x') api_key") is False
    assert len(caught) == 1 and "q9z" not in str(caught[0].message)  # never the value itself
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert add_secret("the", source="LiveModel('x') api_key") is False  # the same source: said already
        assert add_secret("undefined", source="another source") is False  # a placeholder: ignored, no word
        assert add_secret("null", source="a third source") is False
    text = "the cat sat on the mat, undefined and null, q9z"
    assert scrub_text(text) is text  # no "the" redacted, ever
    with pytest.warns(RuntimeWarning, match="has 7 characters"):
        assert add_secret("seven77", source="a fourth source") is False
    assert add_secret("eight888", source="a fourth source") is True  # MIN_REGISTERED (8) is enough
    assert scrub_text("x eight888 y, seven77") == "x REDACTED y, seven77"


@pytest.mark.parametrize("how", ["json-ascii", "json-twice", "url", "url-plus", "html", "html-safe-json", "slash",
                                 "repr"])
def test_a_registered_value_is_scrubbed_in_the_encodings_it_travels_in(how: str) -> None:
    value = f"pässwörd/{how}+&<x> 9"
    add_secret(value, source="a test")
    written = {
        "json-ascii": json.dumps({"v": value}),  # \u00e4 escapes
        "json-twice": json.dumps({"arguments": json.dumps({"v": value})}),
        "url": "https://h.example/p?q=" + quote(value, safe=""),
        "url-plus": "a=" + quote_plus(value),
        "html": "<td>" + value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") + "</td>",
        "html-safe-json": json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
                         .replace("&", "\\u0026"),
        "slash": json.dumps(value, ensure_ascii=False).replace("/", "\\/"),
        "repr": repr([value]),
    }[how]
    scrubbed = scrub_text(written)
    assert REDACTED in scrubbed and "rd/" + how not in scrubbed and how not in scrubbed.replace("REDACTED", ""), scrubbed
    if how.startswith("json") or how == "slash":
        json.loads(scrubbed)  # still valid JSON


def test_header_credentials_register_the_token_and_a_basic_password() -> None:
    basic = base64.b64encode(b"svc-user:basic-password-x1").decode()
    add_header_credentials([("Authorization", "Bearer opaque-bearer-token-x1"), ("x-api-key", "gateway-key-x1"),
                            ("proxy-authorization", f"Basic {basic}"), ("content-type", "application/json"),
                            ("cookie", "session=cookie-session-value-x1")], source="a test")
    text = ("opaque-bearer-token-x1 gateway-key-x1 basic-password-x1 svc-user:basic-password-x1 " + basic
            + " cookie-session-value-x1 application/json")
    assert scrub_text(text) == " ".join([REDACTED] * 5) + " cookie-session-value-x1 application/json"
    # The base64 of a registered user:password pair, wherever it turns up (a Basic header echoed in a log).
    add_secret("other-user:other-password-x1", source="a test")
    assert scrub_text("Authorization was " + base64.b64encode(b"other-user:other-password-x1").decode()) == (
        "Authorization was REDACTED")


def test_placeholder_and_one_off_header_values_are_left_out_silently() -> None:
    signature = ("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, "
                 "SignedHeaders=host, Signature=fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a placeholder key is no credential worth a warning
        before = len(_scrub.registered_secrets())
        add_header_credentials({"authorization": "Bearer test", "x-api-key": "dummy"}, source="a test")
        add_header_credentials({"authorization": signature}, source="a test")  # new with every request
    assert len(_scrub.registered_secrets()) == before


def test_many_registered_values_are_found_in_one_pass_overlapping_ones_too() -> None:
    values = [f"bulk-credential-{n:03d}-end" for n in range(40)]
    for value in values:
        add_secret(value, source="a test")
    add_secret("xxab-overlap-one", source="a test")
    add_secret("overlap-one-yyzz", source="a test")
    state = _current()
    assert state.matcher is not None  # past _FIND_AT_MOST variants: the trie regex
    text = " | ".join(values) + " xxab-overlap-one-yyzz bulk-credential-999-end"
    scrubbed = scrub_text(text)
    assert scrubbed == " | ".join([REDACTED] * 40) + f" {REDACTED} bulk-credential-999-end"
    assert scrub_text(json.dumps({"v": values[7]})) == '{"v": "REDACTED"}'


def test_a_live_models_key_is_registered_when_it_is_made() -> None:
    seen: list[str] = []

    def provider(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["x-api-key"])
        return httpx.Response(200, json={"ok": True})

    tr.LiveModel("https://llm.internal.example", api_key="internal-live-key-x1", auth_header="x-api-key",
                 transport=httpx.MockTransport(provider))
    assert "internal-live-key-x1" in _scrub.registered_secrets()
    assert scrub_text("echo internal-live-key-x1") == "echo REDACTED"
