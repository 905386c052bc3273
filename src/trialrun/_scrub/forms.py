"""The encoded forms of a known credential the scrubber (`_scrub`) also removes: base64, URL and hex encodings.

A credential passed on by an agent is often encoded on the way: a Basic header, a `data:` URL, a config file or an
environment dump piped through `base64`, a query string. Base64 is the subtle one: a value inside a longer text
that is then base64-encoded shows up differently depending on its byte offset modulo 3, and the characters at its
two ends mix its bits with its neighbours'. So for each of the three alignments the form kept is the run of
characters that depends on the value's bytes alone; that run is found wherever the value was encoded at that
alignment, whatever surrounds it (in the standard alphabet and the URL-safe one).
"""

from __future__ import annotations

import base64
import re
from urllib.parse import quote, quote_plus

__all__ = ["base64_forms", "url_forms", "hex_forms", "MIN_CORE", "is_base64_char"]

#: The shortest aligned base64 run looked for (shorter runs could occur by chance in unrelated base64).
MIN_CORE = 8
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")


def is_base64_char(char: str) -> bool:
    return char in _B64_CHARS


def _core(data: bytes, align: int, urlsafe: bool) -> str:
    """The characters of base64(`align` unknown bytes + `data` + unknown bytes) that only `data` decides: the
    first group's characters that hold a bit of a byte before it are dropped, and so are the last ones that hold
    a bit of a byte after it."""
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    text = encode(b"\0" * align + data).decode("ascii").rstrip("=")
    head = (0, 2, 3)[align]  # characters mixing the unknown bytes before: none, 2 (1 byte), 3 (2 bytes)
    tail = (align + len(data)) % 3  # 1 or 2 bytes in the last group: its last character mixes a byte after
    return text[head:len(text) - 1] if tail else text[head:]


def base64_forms(value: str) -> set[str]:
    """The value's base64 alone (padded and not), and its aligned runs inside any longer base64 text."""
    data = value.encode("utf-8")
    forms: set[str] = set()
    for urlsafe in (False, True):
        whole = (base64.urlsafe_b64encode if urlsafe else base64.b64encode)(data).decode("ascii")
        forms |= {whole, whole.rstrip("=")}
        forms |= {core for align in range(3) if len(core := _core(data, align, urlsafe)) >= MIN_CORE}
    return forms


_PERCENT = re.compile("%[0-9A-F]{2}")


def url_forms(value: str) -> set[str]:
    """The value URL-encoded as `quote` and `quote_plus` write it (`/` kept or not), also with lower-case hex
    (`%2f`, what some encoders write), and encoded twice (a URL carried in another URL's query)."""
    once = {quote(value, safe=""), quote(value), quote_plus(value)}
    once |= {_lower(form) for form in once}
    twice = {quote(form, safe="") for form in once}  # `%2f` -> `%252f`: the inner hex keeps its case
    return once | twice | {_lower(form) for form in twice}


def _lower(form: str) -> str:
    return _PERCENT.sub(lambda m: m.group().lower(), form)


def hex_forms(value: str) -> set[str]:
    """The value's bytes in hex, lower and upper case (`xxd -p`, `od`, a debug dump of a header)."""
    text = value.encode("utf-8").hex()
    return {text, text.upper()}
