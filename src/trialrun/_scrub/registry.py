"""What the scrubber knows is secret: the environment variables whose names say so, the values registered in this
process (`learn`), every form each is written in (`forms`), and the compiled view of them all that the search reads
(`_current`, rebuilt only when something changed); and which request headers carry credentials."""

from __future__ import annotations

import html
import json
import os
import re
import threading
import weakref
from collections.abc import Collection, Iterator
from typing import Any

from .forms import base64_forms, hex_forms, url_forms
from .shapes import trie_pattern

#: What a secret is replaced by.
REDACTED = "REDACTED"


# -- which environment variables hold secrets --------------------------------------------------------------------
_SECRET_NAME = re.compile(
    r"(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|CREDENTIAL)|(?:TOKEN|APIKEY|API_KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS"
    r"|(?:^|_)(?:KEY|PASS|PAT|AUTH|COOKIE|DSN))$",
    re.IGNORECASE,
)
_MIN_SECRET = 6
_NOT_SECRETS = frozenset({"true", "false", "none", "null", "undefined", "enabled", "disabled"})


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (`OPENAI_API_KEY`, `GH_TOKEN`, `PGPASSWORD`).

    >>> [is_secret_name(n) for n in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "PATH", "TOKENIZERS_PARALLELISM")]
    [True, True, True, False, False]
    """
    return _SECRET_NAME.search(name) is not None


def secret_env_names(environ: Any = None) -> list[str]:
    """The names of the environment variables whose values are scrubbed."""
    env = os.environ if environ is None else environ
    return sorted(name for name in env if is_secret_name(name))


class _State:
    """The compiled view of the current secrets: their text variants, longest first, and for many of them one
    regex (a trie of them all) that finds them in one pass."""

    __slots__ = ("names", "fingerprint", "variants", "matcher", "base64", "_frozen", "__weakref__")

    def __init__(self, names: tuple[str, ...], variants: tuple[str, ...], base64_variants: frozenset[str]) -> None:
        self.names = names
        self.fingerprint = _fingerprint(names)
        self.variants = variants
        self.base64 = base64_variants  # the variants that are base64 forms (`_fill` inside a longer base64 text)
        self._frozen: frozenset[str] | None = None
        self.matcher = re.compile(trie_pattern(variants)) if len(variants) > _FIND_AT_MOST else None

    @property
    def frozen(self) -> frozenset[str]:
        """The variants as a set (made when first asked: only the files a run writes compare them)."""
        if self._frozen is None:
            self._frozen = frozenset(self.variants)
        return self._frozen


_LOCK = threading.Lock()
_ADDED: dict[str, frozenset[str]] = {}  # registered value -> its variants (made once, when it is registered)
_state: _State | None = None
_names_seen: dict[str, bool] = {}
#: The shortest value `add_secret` scrubs: shorter ones (`test`, `dummy`, `ollama`, `sk-test`) are placeholders or
#: words far more often than credentials, and redacting them would redact ordinary text.
MIN_REGISTERED = 8
#: Past this many variants, one trie regex finds them all in one pass (below, one `str.find` each is faster).
_FIND_AT_MOST = 24
#: A bound on the registry (a run that sends a new credential with every request): past it, values are not added.
_MAX_REGISTERED = 10_000



#: What is told of each credential registered from now on (`secrets_learned(variants)`): the files a run is writing
#: (`_line_log.LineAppender`), which must not keep it on disk a moment longer than it takes to rewrite them.
_WATCHERS: weakref.WeakSet[Any] = weakref.WeakSet()


def watch(watcher: Any) -> None:
    """Tell `watcher.secrets_learned(variants)` of every credential registered from now on (until `unwatch`)."""
    _WATCHERS.add(watcher)


def unwatch(watcher: Any) -> None:
    _WATCHERS.discard(watcher)


def variants_of(version: object) -> frozenset[str]:
    """Every value-derived text a `secrets_version()` token removes (its registered and environment secrets in
    all their forms): what a text scrubbed under it is known to hold none of."""
    return version.frozen if isinstance(version, _State) else frozenset()


def holds_any(text: str, values: Collection[str]) -> bool:
    """Whether `text` holds one of `values` (one trie regex for many of them)."""
    if len(values) > _FIND_AT_MOST:
        return re.search(trie_pattern(sorted(values, key=len, reverse=True)), text) is not None
    return any(value in text for value in values)


def secrets_version() -> object:
    """What the scrubber removes right now, as a token compared by identity: text scrubbed while it was the token
    still in force needs no second scrub; a secret registered (or set in the environment) since makes a new one.
    Read it BEFORE scrubbing (a secret registered meanwhile then shows as a change, never the other way)."""
    return _current()


def registered_secrets() -> tuple[str, ...]:
    """The values `add_secret` registered in this process (what a Ray worker hands its driver, which never saw the
    worker's transports but writes the results)."""
    return tuple(_ADDED)


def _remember(value: str) -> frozenset[str]:
    """Scrub `value` from now on (the caller checked it may be): its forms made, the view rebuilt at the next
    search, and every watcher told."""
    global _state
    variants = frozenset(_variants(value))
    with _LOCK:
        _ADDED[value] = variants
        _state = None
    for watcher in list(_WATCHERS):  # outside the lock: a watcher scrubs (and so reads the state) again
        watcher.secrets_learned(variants)
    return variants



# -- HTTP exchanges -------------------------------------------------------------------------------------------
# Headers whose values are credentials or account identifiers: never kept in a recording (memory or file).
SENSITIVE_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
    }
)


_BEARER_PREFIX = re.compile(r"^(?:bearer|basic|token)\s+", re.IGNORECASE)


def _header_tokens(headers: Any) -> Iterator[tuple[str, str]]:
    """(scheme, credential) of each credential header (a mapping, or (name, value) pairs): the value without its
    `Bearer ` / `Basic ` / `Token ` prefix (scheme "" when it had none). Cookies are not credentials of the
    transport (they are dropped from recordings instead)."""
    for name, value in (headers.items() if hasattr(headers, "items") else headers):
        lower = name.lower()
        if lower in SENSITIVE_HEADERS and lower not in ("cookie", "set-cookie") and value != REDACTED:
            prefix = _BEARER_PREFIX.match(value)
            yield (prefix.group().strip().lower() if prefix else ""), value[prefix.end() if prefix else 0:].strip()


def _variants(value: str) -> set[str]:
    """The ways a value is written in the artefacts: as is, JSON-escaped (both ways, once, twice and three times;
    `/` as `\\/`; `<`, `>` and `&` as `\\u003c`... as HTML-safe JSON writers do), inside a repr, HTML/XML-escaped,
    URL-encoded (upper- or lower-case hex), and base64-encoded (`_scrub_forms`: alone, and at each of the three
    alignments inside a longer base64 text; also with `/` written `\\/`)."""
    json_text = json.dumps(value, ensure_ascii=False)[1:-1]
    ascii_text = json.dumps(value)[1:-1]  # `\u00e4`: what Python's json writes by default
    twice = json.dumps(json_text, ensure_ascii=False)[1:-1]  # JSON inside JSON: OpenAI's tool call arguments
    html_safe = json_text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    found = {value, json_text, ascii_text, twice, json.dumps(twice, ensure_ascii=False)[1:-1], json.dumps(ascii_text)[1:-1],
             repr(value)[1:-1], json_text.replace("<", "\\u003c"), html_safe, json_text.replace("/", "\\/"),
             html.escape(value), html.escape(value, quote=False), html.escape(json_text), html.escape(twice),
             *url_forms(value), *hex_forms(value)}
    encoded = base64_forms(value)
    found |= encoded | {form.replace("/", "\\/") for form in encoded if "/" in form}
    with _FORMS_LOCK:
        _BASE64_FORMS.update(encoded)
    return {variant for variant in found if len(variant) >= _MIN_SECRET}


_BASE64_FORMS: set[str] = set()  # every base64 form `_variants` made (which spans `_fill` replaces)
_FORMS_LOCK = threading.Lock()
_ENV_VARIANTS: dict[str, frozenset[str]] = {}  # an environment value -> its variants (made once per value)


def _env_variants(value: str) -> frozenset[str]:
    found = _ENV_VARIANTS.get(value)
    if found is None:
        if len(_ENV_VARIANTS) > 1000:  # an environment rewritten over and over: do not keep every old value
            _ENV_VARIANTS.clear()
        found = _ENV_VARIANTS[value] = frozenset(_variants(value))
    return found


def _fingerprint(names: tuple[str, ...]) -> tuple[Any, ...]:
    """Changes whenever a secret-looking variable is set, changed or removed (cheap: a few lookups)."""
    env = os.environ
    return (len(env), len(_ADDED), *(env.get(name) for name in names))


def _current() -> _State:
    global _state
    state = _state
    if state is not None and state.fingerprint == _fingerprint(state.names):
        return state
    with _LOCK:
        env = os.environ
        for name in env:
            if name not in _names_seen:
                _names_seen[name] = is_secret_name(name)
        names = tuple(name for name in env if _names_seen.get(name))
        variants: set[str] = set()
        for added in _ADDED.values():
            variants |= added
        for value in {env[name] for name in names}:
            if len(value) >= _MIN_SECRET and value.strip().lower() not in _NOT_SECRETS and value not in _ADDED:
                variants |= _env_variants(value)
        state = _State(names, tuple(sorted(variants, key=len, reverse=True)),
                       frozenset(variants & _BASE64_FORMS) if _BASE64_FORMS else frozenset())
        _state = state
    return state
