"""The one scrubber: credentials taken out of everything trialrun writes or prints.

Every writer calls it at the point where its artefact is serialised: cassettes (`scrub_exchange`, as each exchange
is recorded), result files, the journal, HTML, JUnit and Markdown (`scrub_text` of the finished text), and the text
the renderers show (`render.text.printable`, before anything is cut or wrapped). What is replaced by `REDACTED`:

- key shapes: OpenAI `sk-`/`sk-proj-`, Anthropic `sk-ant-`, Google `AIza`, GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/
  `ghr_`/`github_pat_`, Slack `xox?-`, AWS access key ids (`AKIA`, `ASIA`, ...) and secret keys (after a
  `secret_access_key` name, or any 40-character key in text that also holds an access key id), JWTs, the token of
  a `Bearer` / `Authorization:` and the value of a `password=` / `client_secret:` / `api_key=` assignment, and
  private key blocks (`-----BEGIN ... PRIVATE KEY-----` to its END line);
- the run's own secrets: the VALUES of environment variables whose names look secret (`*_API_KEY`, `*_TOKEN`,
  `*_SECRET*`, `*PASSWORD*`, `*_KEY`, `*CREDENTIALS`, ...; 6 characters or more), wherever they appear, also as
  JSON, HTML or Python-repr escaped text;
- the credentials trialrun's model transports hold: every value registered with `add_secret` (process-wide), which
  a LiveModel's `api_key`, the credential headers of every request a model transport sees (`Authorization`,
  `x-api-key`, ...: `add_header_credentials`; a Basic credential also as `user:password` and its password), an
  Agent's `headers=` and a ProcessAgent's secret-named `env` (trialrun.toml's `[agent_options] env`) feed, also
  URL-encoded and (`user:password`) as Basic base64; plus `extra` values given to one call. A registered value
  shorter than `MIN_REGISTERED` characters is not scrubbed (it would redact ordinary words): `add_secret` warns
  once per source and says so.

Redactions never cut a JSON escape in two, so scrubbed JSON stays valid. A streamed body is scrubbed after its
stream is reassembled (a key split across SSE `data:` events is found in the joined deltas and removed from each
piece). It is cheap where there is nothing to do: the patterns are compiled once, the environment is re-read only
when it changed, and text without a candidate is returned as it is.

May import: `_util` and `wire` (for the framing of event streams); it sits below everything that writes.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import os
import re
import threading
import warnings
from collections.abc import Collection, Iterable, Iterator
from typing import Any
import weakref

from .forms import base64_forms, hex_forms, is_base64_char, url_forms
from .shapes import SECRET_QUERY as _SECRET_QUERY
from .shapes import shape_spans, trie_pattern

__all__ = [
    "REDACTED",
    "scrub_text",
    "scrub_bytes",
    "scrub_json",
    "scrub_body",
    "scrub_headers",
    "scrub_url",
    "add_secret",
    "add_header_credentials",
    "registered_secrets",
    "MIN_REGISTERED",
    "secret_env_names",
    "is_secret_name",
    "RESPONSE_HEADERS_KEPT",
    "SENSITIVE_HEADERS",
    "credential_values",
    "secrets_version",
    "watch",
    "unwatch",
    "variants_of",
    "holds_any",
]

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
_warned: set[str] = set()
#: The shortest value `add_secret` scrubs: shorter ones (`test`, `dummy`, `ollama`, `sk-test`) are placeholders or
#: words far more often than credentials, and redacting them would redact ordinary text.
MIN_REGISTERED = 8
#: Past this many variants, one trie regex finds them all in one pass (below, one `str.find` each is faster).
_FIND_AT_MOST = 24
#: A bound on the registry (a run that sends a new credential with every request): past it, values are not added.
_MAX_REGISTERED = 10_000


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
    global _state
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
    variants = frozenset(_variants(value))
    with _LOCK:
        _ADDED[value] = variants
        _state = None
    for watcher in list(_WATCHERS):  # outside the lock: a watcher scrubs (and so reads the state) again
        watcher.secrets_learned(variants)
    return True


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


# -- finding and replacing -------------------------------------------------------------------------------------
def _value_spans(text: str, values: Iterable[str], spans: list[tuple[int, int]]) -> None:
    for value in values:
        start = text.find(value)
        while start != -1:
            spans.append((start, start + len(value)))
            start = text.find(value, start + len(value))


def _matcher_spans(text: str, matcher: re.Pattern[str], spans: list[tuple[int, int]]) -> None:
    """Every occurrence of the trie's values, overlapping ones too (the longest at each start): each search goes
    on from one past the last match's start, so a value starting inside another is found as well."""
    match = matcher.search(text)
    while match is not None:
        spans.append(match.span())
        match = matcher.search(text, match.start() + 1)


def _spans(text: str, extra: Iterable[str] = ()) -> list[tuple[int, int]]:
    """Where secrets are in `text`: sorted, merged (start, end) ranges, never cutting a JSON escape in two."""
    spans: list[tuple[int, int]] = []
    state = _current()
    if state.matcher is not None:
        _matcher_spans(text, state.matcher, spans)
    elif state.variants:
        _value_spans(text, state.variants, spans)
    if extra:
        _value_spans(text, extra, spans)
    shape_spans(text, spans)
    return _merged(text, spans)


def _fill(length: int) -> str:
    """What replaces a credential's base64 inside a longer base64 text: REDACTED repeated to its length, so the
    text stays base64 of the same length (a cassette's `body_base64` still decodes, its bytes there replaced)."""
    return (REDACTED * (length // len(REDACTED) + 1))[:length]


def _merged(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    if not spans:
        return spans
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        start, end = _whole_escapes(text, start, end)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _whole_escapes(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a span so it neither starts nor ends inside a backslash escape (`\\"`, `\\n`, `\\u00e9`)."""
    def odd_backslashes_before(index: int, floor: int) -> bool:
        count = 0
        while index - count - 1 >= floor and text[index - count - 1] == "\\":
            count += 1
        return count % 2 == 1

    if start > 0 and odd_backslashes_before(start, 0):
        start -= 1
    if end < len(text) and odd_backslashes_before(end, start):
        end += 5 if text[end] == "u" and end + 5 <= len(text) else 1
    return start, end


def _apply(text: str, spans: list[tuple[int, int]], offset: int = 0, base64_forms: Collection[str] = ()) -> str:
    """`text` (which starts at `offset` of the text the spans index) with each span's part of it removed, and
    REDACTED where a span starts inside it; a span that is one of `base64_forms` inside a longer base64 text (a
    base64 character on either side) is replaced by `_fill` of its length instead, so that text stays base64."""
    end_of_text = offset + len(text)
    out: list[str] = []
    position = offset
    for start, end in spans:
        if end <= offset or start >= end_of_text:
            continue
        if start > position:
            out.append(text[position - offset:start - offset])
        if start >= offset:
            inside = base64_forms and end <= end_of_text and text[start - offset:end - offset] in base64_forms and (
                (start > offset and is_base64_char(text[start - offset - 1]))
                or (end < end_of_text and is_base64_char(text[end - offset])))
            out.append(_fill(end - start) if inside else REDACTED)
        position = max(position, min(end, end_of_text))
    if not out and position == offset:
        return text
    out.append(text[position - offset:])
    return "".join(out)


def scrub_text(text: str, extra: Iterable[str] = ()) -> str:
    """`text` with every secret replaced by REDACTED (the same object when there was none).

    `extra`: more values to remove (credentials a request carried, say).

    >>> scrub_text("key sk-proj-abcdefghijklmnopqrstuvwx, token ghp_" + "a1" * 18)
    'key REDACTED, token REDACTED'
    """
    if not text:
        return text
    spans = _spans(text, extra)
    return _apply(text, spans, base64_forms=_current().base64) if spans else text


def scrub_bytes(data: bytes, extra: Iterable[str] = ()) -> bytes:
    """`scrub_text` for UTF-8 bytes (other bytes are left as they are: base64 in a cassette is scrubbed as text)."""
    if not data:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    scrubbed = scrub_text(text, extra)
    return data if scrubbed is text else scrubbed.encode("utf-8")


def scrub_json(value: Any, extra: Iterable[str] = ()) -> Any:
    """A copy of JSON-like data (dicts, lists, strings, numbers) with secrets removed from every string and key."""
    extra = tuple(extra)
    if isinstance(value, str):
        return scrub_text(value, extra)
    if isinstance(value, dict):
        return {scrub_text(k, extra) if isinstance(k, str) else k: scrub_json(v, extra) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_json(item, extra) for item in value]
    return value


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

#: Response headers a cassette keeps (all others are dropped: cookies, account and organisation ids, tracing ids).
RESPONSE_HEADERS_KEPT = frozenset({
    "content-type", "retry-after", "retry-after-ms", "x-should-retry", "date", "openai-processing-ms",
    "openai-version", "anthropic-version",
})
_RESPONSE_HEADER_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
_SECRET_HEADER = re.compile(r"auth|key|token|secret|password|cookie|session|signature|credential", re.IGNORECASE)


def credential_values(headers: Any) -> set[bytes]:
    """The credential values (without a `Bearer ` prefix) carried by sensitive headers (a mapping, or (name, value)
    pairs); short ones are ignored."""
    return {token.encode() for _, token in _header_tokens(headers) if len(token) >= 8}


def scrub_headers(headers: dict[str, str], extra: Iterable[str] = (), *, response: bool = False,
                  text: bool = True) -> dict[str, str]:
    """Request headers with credential-looking ones REDACTED and the rest scrubbed; response headers cut to the
    allow-list `RESPONSE_HEADERS_KEPT` (and rate-limit headers). `text=False`: the kept values are not scrubbed as
    text, for a caller that scrubs the whole artefact they are serialised into (`scrub_text` of it, `extra` too)."""
    out: dict[str, str] = {}
    for name, value in headers.items():
        lower = name.lower()
        if response and lower not in RESPONSE_HEADERS_KEPT and not lower.startswith(_RESPONSE_HEADER_PREFIXES):
            continue
        secret = lower in SENSITIVE_HEADERS or _SECRET_HEADER.search(lower) is not None
        out[name] = REDACTED if secret and not response else scrub_text(value, extra) if text else value
    return out


def scrub_url(url: str, extra: Iterable[str] = (), *, text: bool = True) -> str:
    """A URL with the values of credential-looking query parameters (`key=`, `api_key=`, `token=`...) REDACTED (and,
    unless `text=False`, as for `scrub_headers`, scrubbed as text)."""
    base, sep, query = url.partition("?")
    if sep:
        fragment = ""
        if "#" in query:
            query, _, fragment = query.partition("#")
            fragment = "#" + fragment
        parts = []
        for part in query.split("&"):
            name, eq, _ = part.partition("=")
            parts.append(f"{name}={REDACTED}" if eq and _SECRET_QUERY.match(name) else part)
        url = base + "?" + "&".join(parts) + fragment
    return scrub_text(url, extra) if text else url


def scrub_body(body: bytes, extra: Iterable[str] = (), *, streamed: bool = False) -> bytes:
    """A request or response body without secrets; a streamed (SSE) body is first scrubbed as reassembled text."""
    if not body:
        return body
    extra = tuple(extra)
    if streamed:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return body
        joined = _scrub_stream(text, extra)
        if joined is not text:
            body = joined.encode("utf-8")
    return scrub_bytes(body, extra)


def _scrub_stream(text: str, extra: tuple[str, ...]) -> str:
    """An SSE stream with secrets that are split across events removed: the string fields of its events are
    joined per (event type, field path), in order, and a secret found in the joined text is cut out of each piece."""
    from ..wire._sse import parse_sse, render_sse

    events = parse_sse(text)
    if len(events) < 2:
        return text
    payloads: list[Any] = []
    groups: dict[tuple[str, str], list[tuple[Any, Any, str]]] = {}

    def walk(node: Any, path: str, kind: str) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                if isinstance(item, str):
                    groups.setdefault((kind, f"{path}.{key}"), []).append((node, key, item))
                elif isinstance(item, (dict, list)):
                    walk(item, f"{path}.{key}", kind)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    groups.setdefault((kind, f"{path}[{index}]"), []).append((node, index, item))
                elif isinstance(item, (dict, list)):
                    walk(item, f"{path}[{index}]", kind)

    for index, event in enumerate(events):
        try:
            data = json.loads(event.data)
        except ValueError:
            data = None
        if isinstance(data, (dict, list)):
            payloads.append(data)
            kind = data.get("type") if isinstance(data, dict) else None
            walk(data, "", f"{event.event}/{kind}")
        else:
            payloads.append(event.data)
            groups.setdefault((f"{event.event}", "(text)"), []).append((payloads, index, event.data))
    changed = False
    for pieces in groups.values():
        if len(pieces) < 2:
            continue
        joined = "".join(piece for _, _, piece in pieces)
        spans = _spans(joined, extra)
        if not spans:
            continue
        offset = 0
        for container, key, piece in pieces:
            if any(start < offset + len(piece) and end > offset for start, end in spans):
                container[key] = _apply(piece, spans, offset)
                changed = True
            offset += len(piece)
    if not changed:
        return text
    return render_sse([(event.event, payloads[i]) for i, event in enumerate(events)]).decode("utf-8")
