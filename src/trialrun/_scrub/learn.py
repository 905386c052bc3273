"""Credentials learnt while trialrun runs: a value registered by hand or by a model transport (`add_secret`), and
the credentials a request's headers carry (`add_header_credentials`)."""

from __future__ import annotations

import base64
import binascii
import warnings
from typing import Any

from .registry import _ADDED, _MAX_REGISTERED, _NOT_SECRETS, MIN_REGISTERED, _header_tokens, _remember
from .replace import scrub_text

_warned: set[str] = set()


def _warn_once(source: str, message: str) -> None:
    if source not in _warned:
        _warned.add(source)
        # the source may quote a URL with a password in it (`LiveModel('https://user:pw@host')`)
        warnings.warn(f"trialrun: {scrub_text(message)}", RuntimeWarning, stacklevel=3)


def add_secret(value: str, *, source: str = "add_secret") -> bool:
    """Scrub `value` too, from now on, in this process: from every file, page and line trialrun writes or prints
    (a credential that has no key shape and that no environment variable names). Returns whether it will be.

    `source` says where the value came from, for the one warning given when it is not scrubbed: a value shorter
    than `MIN_REGISTERED` characters (the value itself is never shown). Placeholders (`none`, `null`,
    `undefined`, ...) are ignored without a word.

    >>> add_secret("corp-gateway-7f3a9", source="a doctest")
    True
    >>> scrub_text('{"note": "the corp-gateway-7f3a9 key"}')
    '{"note": "the REDACTED key"}'
    """
    if not isinstance(value, str):
        return False
    if value in _ADDED:
        return True
    if value.strip().lower() in _NOT_SECRETS:
        return False
    if len(value) < MIN_REGISTERED:
        _warn_once(source, f"a credential from {source} has {len(value)} characters, fewer than {MIN_REGISTERED}: "
                           "it is NOT scrubbed from results, reports and logs (a value that short would redact "
                           "ordinary text); use a longer credential, or keep it out of prompts and outputs")
        return False
    if len(_ADDED) >= _MAX_REGISTERED:
        _warn_once("(too many)", f"more than {_MAX_REGISTERED} credentials registered in this process: "
                                 f"a credential from {source} and later ones are NOT scrubbed")
        return False
    _remember(value)
    return True


def add_header_credentials(headers: Any, *, source: str = "a request header") -> None:
    """Register (`add_secret`) the credentials carried by credential headers (`Authorization`, `x-api-key`, ...;
    a mapping or (name, value) pairs): the token without its `Bearer ` prefix, and for `Basic` also the decoded
    `user:password` and the password. Short values (placeholder keys such as `test`) are left out silently, as
    `credential_values` leaves them out; so is a value with spaces (a signature such as AWS SigV4's, new with every
    request, not a reusable credential)."""
    for scheme, token in _header_tokens(headers):
        if len(token) < MIN_REGISTERED or token in _ADDED or any(c.isspace() for c in token):
            continue
        add_secret(token, source=source)
        if scheme == "basic":
            try:
                pair = base64.b64decode(token, validate=True).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError):
                continue
            _, colon, password = pair.partition(":")
            if colon and len(pair) >= MIN_REGISTERED:
                add_secret(pair, source=source)
            if colon and len(password) >= MIN_REGISTERED:
                add_secret(password, source=source)
