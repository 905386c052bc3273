"""What a secret looks like: the shape and context rules of the scrubber (`_scrub`), which finds where they are.

Each rule finds the span of a credential by its own form (`sk-...`, `ghp_...`, a JWT, a private key block) or by
what stands beside it: a name (`password=`, `"client_secret": "..."`, `aws_secret_access_key = ...`,
`aws_session_token`), a header written in a body (`Authorization: Bearer ...`, `Cookie:`/`Set-Cookie:` values,
`X-Auth-Token: ...` and other hyphenated credential headers), a URL query value (`?key=...`, `&access_token=...`),
or, for an AWS secret access key with no name, the access key id written beside it. The rules run on text as it is
written in artefacts: plain, JSON-escaped once or twice, HTML-escaped; so a separator may carry escaped quotes
(`\\": \\"`), a value may hold `\\/` (JSON writers that escape `/`), and a key may follow a JSON escape (`\\n`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["shape_spans", "trie_pattern", "ALL_HINTS", "ANY_HINT", "after_escape"]

# Between a name and its value: `: "`, `=`, `\": \"` (JSON inside JSON), `\\\": \\\"` (three levels).
_VALUE = r"(?:\\{0,7}[\"'])?\s*[:=]\s*(?:\\{0,7}[\"'])?"
_HEADER_SEP = r"(?:\\{0,7}[\"'])?\s*:\s*(?:\\{0,7}[\"'])?"  # a header written as text or as a JSON member
# An assigned value: up to a quote, space, backslash, `,`, `;` or `&`; a JSON-escaped slash (`\/`) is part of it.
_ASSIGNED = r"(?P<v>(?:[^\s\"'\\,;&]|\\+/){8,})"

# Each rule: the lower-case hints one of which a short text must hold (a long one is searched at once: the regex
# skips ahead as fast as a substring test would), the pattern (starting with a literal, so the engine skips ahead
# fast), whether it must start a word, and whether it runs on the lower-cased text (the case-insensitive ones: same
# positions, much faster than IGNORECASE). A named group `v` is what is replaced.
_RULES_SPEC: tuple[tuple[tuple[str, ...], str, bool, bool], ...] = (
    (("sk-",), r"sk-[A-Za-z0-9_\-]{16,}", True, False),  # OpenAI sk-, sk-proj-, sk-svcacct-; Anthropic sk-ant-
    (("aiza",), r"AIza[0-9A-Za-z_\-]{30,}", True, False),  # Google API keys
    (("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), r"gh[pousr]_[A-Za-z0-9]{30,}", True, False),  # GitHub tokens
    (("github_pat_",), r"github_pat_[A-Za-z0-9_]{22,}", True, False),  # GitHub fine-grained tokens
    (("xox",), r"xox[a-z]-[A-Za-z0-9\-]{10,}", True, False),  # Slack
    (("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "apka", "aroa", "asca"),
     r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}(?![A-Za-z0-9])", True, False),
    (("eyj",), r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*", True, False),  # JWTs
    (("-----begin",), r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
     r"(?:[\s\S]{0,20000}?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\\\r\n]*)", False, False),
    (("bearer",), r"bearer\s+(?P<v>[a-z0-9._~+/=\-]{12,})", False, True),
    # the password of a URL's user info: `postgres://app:PASSWORD@db/x`, `https://user:PASSWORD@proxy`
    (("://",), r"://[^/\s:@\"'\\<>]{1,100}:(?P<v>[^/\s@\"'\\<>]{3,200})@", False, False),
    (("authorization",), r"authorization" + _VALUE + r"(?:(?:basic|token|bearer)\s+)?(?P<v>[a-z0-9._~+/=\-]{8,})",
     False, True),
    # AWS (`aws_secret_access_key`, `SecretAccessKey`, `secret-access-key`), client_secret, secret_key...
    (("secret",), r"secret[a-z_\-]{0,20}" + _VALUE + _ASSIGNED, False, True),
    (("passw",), r"passw(?:or)?d" + _VALUE + _ASSIGNED, False, True),
    (("api_key", "apikey"), r"api_?key" + _VALUE + _ASSIGNED, False, True),
    (("access_token", "accesstoken"), r"access_?token" + _VALUE + _ASSIGNED, False, True),
    (("auth_token", "authtoken"), r"auth_?token" + _VALUE + _ASSIGNED, False, True),
    # AWS session tokens (`aws_session_token`, `SessionToken`, `x-amz-security-token`), any session token
    (("session_token", "sessiontoken", "session-token", "security_token", "securitytoken", "security-token"),
     r"(?:session|security)[_\-]?token" + _VALUE + _ASSIGNED, False, True),
)
_RULES = tuple((hints, re.compile(pattern), word, lower) for hints, pattern, word, lower in _RULES_SPEC)
_RULES_ANY_CASE = {pattern: re.compile(pattern, re.IGNORECASE) for _, pattern, _, lower in _RULES_SPEC if lower}

# -- rules with a second look (in code): cookies, hyphenated credential headers, URL query values -----------------
# Each starts with a literal (`cookie`, `-`, `=`), so the engine skips ahead as fast as a substring search would.
# `Cookie: a=1; sid=...` (every value) and `Set-Cookie: sid=...; Path=/` (the cookie's value, not its attributes).
_COOKIE = re.compile(r"cookie" + _HEADER_SEP)
_COOKIE_PAIR = re.compile(r"[ \t]*(?P<name>[^=;,\s\"'\\]{1,100})=(?P<v>[^;,\s\"'\\]*)[ \t]*(?P<end>;?)")
# `X-Auth-Token: ...`, `X-Api-Key`, `Private-Token`, `X-Amz-Security-Token`, `X-Session-Id`: a hyphenated name
# whose last part is a credential word (`auth-method` is not one).
_HEADER = re.compile(r"-(?:token|key|apikey|secret|auth|session(?:-id)?|signature|passw(?:or)?d|credentials?)"
                     + _HEADER_SEP + _ASSIGNED)
# `?key=...`, `&access_token=...`, `&amp;sig=...` (HTML), `\u0026code=...` (HTML-safe JSON): a query parameter
# whose name says it is a credential (the names `scrub_url` redacts in a request's URL).
_QUERY = re.compile(r"=(?P<v>(?:[^&#\s\"'\\<>=]|\\+/){8,})")
_QUERY_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.")
#: A query parameter name that says its value is a credential (`scrub_url` redacts its value in a request's URL).
SECRET_QUERY = re.compile(r"(?i)(?:key|sig|signature|code|auth|.*(?:api[_-]?key|token|secret|password|passwd))$")
_CONTEXT = (_COOKIE, _HEADER, _QUERY)
_CONTEXT_ANY_CASE = tuple(re.compile(rule.pattern, re.IGNORECASE) for rule in _CONTEXT)
# (A query value is looked for where there is an `=`: a substring test of its own, cheaper than in the trie.)
_CONTEXT_HINTS = ("cookie", "-token", "-key", "-apikey", "-secret", "-auth", "-session", "-signature", "-passw",
                  "-credential")

# An AWS secret access key on its own: 40 characters of base64 (a `/` perhaps written `\/`) with upper, lower case
# and digits, after no base64 character (or right after a JSON escape such as `\n`, `\t`, `\u0009`, or an `=`), and
# before none. Only looked for in text that also holds an access key id (a result file: anywhere in it; they leak
# together, and a bare 40-character run in text without one may be anything).
_AWS_ID = re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{16}")
_AWS_SECRET = re.compile(r"(?:(?<![A-Za-z0-9/+])|(?<=\\[bfnrt])|(?<=\\u[0-9a-fA-F]{4}))"
                         r"(?:[A-Za-z0-9+/]|\\+/){40}(?![A-Za-z0-9/+=]|\\+/)")

_SHORT = 4096  # below this, substring tests of the hints first; above, one regex pass per rule is as cheap
_HINTS = {hint for hints, _, _, _ in _RULES_SPEC for hint in hints} | set(_CONTEXT_HINTS)
ALL_HINTS = tuple(sorted(hint for hint in _HINTS if not any(other != hint and other in hint for other in _HINTS)))


def trie_pattern(words: Iterable[str]) -> str:
    """A regex matching exactly where one of `words` occurs, its alternatives factored by common prefix
    (`a(?:bia|cc(?:a|ess...))`): the engine then rejects a position after a character or two, so one search
    finds "is any hint in this text" several times faster than a substring test per hint."""
    tree: dict[str, Any] = {}
    for word in words:
        node = tree
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def alternatives(node: dict[str, Any]) -> str:
        branches = [re.escape(char) + alternatives(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = "(?:" + "|".join(branches) + ")"
        return body + "?" if "" in node else body

    return alternatives(tree)


ANY_HINT = re.compile(trie_pattern(ALL_HINTS))  # the same answer as `any(hint in text for hint in ALL_HINTS)`
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ESCAPE_BEFORE = re.compile(r"\\(?:[bfnrt]|u[0-9a-fA-F]{4})")


def after_escape(text: str, start: int) -> bool:
    """Whether a JSON escape (`\\n`, `\\b`, `\\u001b`: what a control character becomes in serialised JSON) ends
    just before `start`: a word boundary in the text it stands for, so a key after it is still a key."""
    return (start >= 2 and _ESCAPE_BEFORE.fullmatch(text, start - 2, start) is not None) or (
        start >= 6 and _ESCAPE_BEFORE.fullmatch(text, start - 6, start) is not None)


def shape_spans(text: str, spans: list[tuple[int, int]]) -> None:
    """Append to `spans` where `text` holds a secret by shape or context (unsorted, perhaps overlapping)."""
    lower = text.lower()
    short = len(text) < _SHORT
    if short and ANY_HINT.search(lower) is None and "=" not in lower:
        return
    aligned = len(lower) == len(text)  # lower() kept every position (it does unless a few rare letters are there)
    for hints, pattern, word, on_lower in _RULES:
        if short and not any(hint in lower for hint in hints):
            continue
        if on_lower and not aligned:
            haystack, pattern = text, _RULES_ANY_CASE[pattern.pattern]
        else:
            haystack = lower if on_lower else text
        for match in pattern.finditer(haystack):
            start = match.start()
            if word and start and text[start - 1] in _KEY_CHARS and not after_escape(text, start):
                continue
            spans.append(match.span("v") if "v" in pattern.groupindex else match.span())
    # On the lower-cased text when it kept every position; else on the text itself, ignoring case.
    haystack, rules = (lower, _CONTEXT) if aligned else (text, _CONTEXT_ANY_CASE)
    if not short or any(hint in lower for hint in _CONTEXT_HINTS):
        _cookie_spans(haystack, rules[0], spans)
        _header_spans(haystack, rules[1], spans)
    if not short or "=" in lower:
        _query_spans(haystack, rules[2], spans)
    if "akia" in lower or "asia" in lower:
        _aws_secret_spans(text, spans)


def _cookie_spans(text: str, rule: re.Pattern[str], spans: list[tuple[int, int]]) -> None:
    for match in rule.finditer(text):
        position = match.end()
        set_cookie = text[max(0, match.start() - 4):match.start()].lower() == "set-"
        while (pair := _COOKIE_PAIR.match(text, position)) is not None:
            start, end = pair.span("v")
            if end - start >= 8:
                spans.append((start, end))
            if set_cookie or not pair.group("end"):  # a Set-Cookie's attributes (Path...) are not secret
                break
            position = pair.end()


def _header_spans(text: str, rule: re.Pattern[str], spans: list[tuple[int, int]]) -> None:
    for match in rule.finditer(text):
        spans.append(match.span("v"))


def _query_spans(text: str, rule: re.Pattern[str], spans: list[tuple[int, int]]) -> None:
    for match in rule.finditer(text):
        end = start = match.start()  # the `=`: the name is before it
        while start and text[start - 1].lower() in _QUERY_NAME_CHARS:
            start -= 1
        if start == end:
            continue
        if text.startswith("u0026", start) and start and text[start - 1] == "\\":  # `\u0026key=`: HTML-safe JSON
            start += 5
            separated = True
        else:
            separated = start > 0 and text[start - 1] in "?&;"
        if separated and SECRET_QUERY.match(text, start, end):
            spans.append(match.span("v"))


def _aws_secret_spans(text: str, spans: list[tuple[int, int]]) -> None:
    if _AWS_ID.search(text) is None:
        return
    for match in _AWS_SECRET.finditer(text):
        value = match.group().replace("\\", "")
        if not (value.isupper() or value.islower()) and any(c.isdigit() for c in value):
            spans.append(match.span())
