"""Undoing `Content-Encoding` of a recorded body (gzip, deflate, br, zstd), in one place.

Why here: recorders store bodies as they crossed the wire (vcrpy keeps gzip bytes as `!!binary` with the
`Content-Encoding: gzip` header), and every reader of a body (the cassette loader, replay, the observers, the wire
decoders) must agree on what the bytes are. The rule everywhere: a body is kept either decoded WITHOUT the encoding
header, or as recorded WITH it; never encoded bytes without the header that says so. An encoding that cannot be
undone here (br or zstd without their package, an unknown coding, corrupt data) raises `WireError` naming the
encoding and, where one would help, the package to install.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import ModuleType

from ._types import WireError

__all__ = ["undo_content_encoding", "without_encoding", "readable_body", "header"]

# Headers that describe the bytes on the wire: wrong once the body is decoded.
_ENCODING_HEADERS = frozenset({"content-encoding", "content-length"})


def header(headers: Mapping[str, str], name: str) -> str:
    """A header's value looked up without regard to case ("" when absent)."""
    name = name.lower()
    return next((value for key, value in headers.items() if key.lower() == name), "")


def undo_content_encoding(body: bytes, encoding: str) -> bytes:
    """`body` with the codings listed in a Content-Encoding value undone (last applied first).

    Raises WireError naming the coding that could not be undone and why (a missing package is named).
    """
    codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
    for coding in reversed(codings):
        if coding in ("identity", "none") or not body:
            continue
        try:
            body = _undo(body, coding)
        except _Corrupt as exc:
            if not _is_text(body):
                raise WireError(str(exc)) from None
            # Not data of that coding, but readable text: a recorder that stored the body decoded and kept the
            # header (a hand-edited file, a proxy). The header is stale; the bytes are the body.
            return body
    return body


class _Corrupt(WireError):
    """The bytes are not data of the coding the header names."""


def _is_text(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def without_encoding(headers: dict[str, str], body: bytes) -> tuple[dict[str, str], bytes]:
    """(headers, body) with the body's Content-Encoding undone and the headers that described the encoded bytes
    (Content-Encoding, Content-Length) removed. Unchanged when there is no encoding; raises WireError when the
    encoding cannot be undone (the caller then keeps both as recorded)."""
    encoding = header(headers, "content-encoding")
    if not encoding:
        return headers, body
    decoded = undo_content_encoding(body, encoding)
    return {k: v for k, v in headers.items() if k.lower() not in _ENCODING_HEADERS}, decoded


def readable_body(headers: Mapping[str, str], body: bytes, what: str) -> bytes:
    """The bytes a decoder should parse: `body` with any encoding its headers still declare undone.

    `what` ("request body", "response body") starts the WireError message when that is not possible.
    """
    encoding = header(headers, "content-encoding")
    if not encoding:
        return body
    try:
        return undo_content_encoding(body, encoding)
    except WireError as exc:
        raise WireError(f"{what} has Content-Encoding {encoding!r} that cannot be undone: {exc}") from None


def _undo(body: bytes, coding: str) -> bytes:
    import zlib

    if coding in ("gzip", "x-gzip"):
        try:
            return zlib.decompress(body, wbits=zlib.MAX_WBITS | 16)
        except zlib.error as exc:
            raise _Corrupt(f"gzip data is corrupt ({exc})") from None
    if coding == "deflate":
        try:  # RFC 9110 says zlib-wrapped; some servers send raw deflate
            return zlib.decompress(body)
        except zlib.error:
            try:
                return zlib.decompress(body, wbits=-zlib.MAX_WBITS)
            except zlib.error as exc:
                raise _Corrupt(f"deflate data is corrupt ({exc})") from None
    if coding == "br":
        return _with_library(body, "br", ("brotli", "brotlicffi"), lambda module, data: module.decompress(data))
    if coding == "zstd":
        return _with_library(body, "zstd", ("compression.zstd", "zstandard"), _zstd)
    raise WireError(f"the coding {coding!r} is not one trialrun can undo (gzip, deflate, br, zstd)")


def _zstd(module: ModuleType, data: bytes) -> bytes:
    if module.__name__ == "zstandard":
        # A decompressobj reads frames that do not state their size, as streamed responses are.
        whole: bytes = module.ZstdDecompressor().decompressobj().decompress(data)
    else:
        whole = module.decompress(data)
    return whole


def _with_library(
    body: bytes, coding: str, modules: tuple[str, ...], decompress: Callable[[ModuleType, bytes], bytes]
) -> bytes:
    import importlib

    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        try:
            return decompress(module, body)
        except Exception as exc:  # each library has its own error class
            raise _Corrupt(f"{coding} data is corrupt ({exc})") from None
    needs = "the package 'brotli' (pip install brotli)" if coding == "br" else (
        "the package 'zstandard' (pip install zstandard) or Python 3.14's compression.zstd"
    )
    raise WireError(f"undoing {coding} needs {needs}, which is not installed")
