"""Reading and writing cassette files: trialrun's own format and vcrpy's (pydantic-ai's `parsed_body` included).

trialrun's format (YAML or JSON, chosen by the file suffix)::

    version: 1
    exchanges:
      - request: {method: POST, url: https://api.openai.com/v1/chat/completions, headers: {...}, body: {...}}
        response: {status: 200, headers: {...}, body: {...}}          # JSON body as data
      - request: {...}
        response: {status: 200, headers: {...}, stream: "data: ...\n\n"}  # a streamed body as text
      - request: {method: POST, url: ..., headers: {...}, body_base64: "iVBORw0K..."}  # bytes that are not UTF-8
        response: {status: 200, headers: {...}, body_text: "plain text"}            # text that is not JSON

Bodies recorded compressed (vcrpy keeps gzip bytes as `!!binary` with `Content-Encoding: gzip`) are decompressed
on load and lose the headers that described the compressed bytes; header values recorded as bytes (`!!binary`, as
botocore's are) are read as text.

A body is stored as data when it is a JSON object or array (readable and diffable), as text when it is other UTF-8,
and as base64 when it is not UTF-8 (an uploaded file, a download), so replay returns exactly the recorded bytes.

vcrpy's layout is `interactions: [{request: {method, uri, headers: {name: [values]}, body | parsed_body},
response: {status: {code, message}, headers, body: {string} | parsed_body}}]`.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from pathlib import Path
from typing import Any

from .._util.files import TOO_DEEP, read_text, write_atomic
from .._util.yaml_read import YamlError, load_yaml
from ..wire._encoding import without_encoding
from ..wire._types import Exchange, WireError

__all__ = ["CassetteFileError", "load_exchanges", "save_exchanges", "exchange_to_dict", "exchange_from_dict"]

FORMAT_VERSION = 1


class CassetteFileError(ValueError):
    """A cassette file that is missing or cannot be read; the message names the file and the entry."""


def load_exchanges(path: str | os.PathLike[str]) -> list[Exchange]:
    """Load every recorded exchange of a cassette file, in recorded order."""
    path = Path(path)
    text = read_text(path, "cassette file", CassetteFileError)
    try:
        data = json.loads(text) if path.suffix == ".json" else load_yaml(text)
    except YamlError as exc:
        raise CassetteFileError(f"{path}: {exc}" + (f" (line {exc.line}, column {exc.column})" if exc.where else "")) from None
    except ValueError as exc:  # (load_yaml turns every YAML error into a YamlError)
        raise CassetteFileError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    except RecursionError:
        raise CassetteFileError(f"{path}: {TOO_DEEP}") from None
    if isinstance(data, dict) and "interactions" in data:
        entries, reader = data["interactions"], _from_vcr
    elif isinstance(data, dict) and "exchanges" in data:
        entries, reader = data["exchanges"], _from_own
    elif isinstance(data, list):
        entries, reader = data, _from_own
    else:
        raise CassetteFileError(f"{path}: not a cassette (expected 'exchanges' or vcrpy 'interactions')")
    if not isinstance(entries, list):
        raise CassetteFileError(f"{path}: the list of exchanges is {_kind(entries)}, expected a list")
    exchanges = []
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict) or "request" not in entry:
            what = f"is {_kind(entry)}" if not isinstance(entry, dict) else "has no 'request'"
            raise CassetteFileError(f"{path}: exchange {number} {what}, expected a mapping with 'request' and 'response'")
        try:
            exchanges.append(_decoded(reader(entry)))
        except (ValueError, TypeError, KeyError) as exc:  # _ShapeError names the field; the rest are a fallback
            raise CassetteFileError(f"{path}: exchange {number}: {exc}") from None
    return exchanges


def _decoded(exchange: Exchange) -> Exchange:
    """The exchange with each body's Content-Encoding undone (vcrpy stores gzip bytes with the header), so readers
    and replay see the bytes the client saw. A body whose encoding cannot be undone (br without `brotli`) stays as
    recorded WITH its header: the wire decoders then note the encoding by name, and replay serves it as recorded."""
    for side in ("request", "response"):
        headers, body = getattr(exchange, f"{side}_headers"), getattr(exchange, f"{side}_body")
        try:
            headers, body = without_encoding(headers, body)
        except WireError:
            continue
        setattr(exchange, f"{side}_headers", headers)
        setattr(exchange, f"{side}_body", body)
    return exchange


def save_exchanges(path: str | os.PathLike[str], exchanges: list[Exchange]) -> None:
    """Write exchanges in trialrun's format, atomically (temp file + rename): a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": FORMAT_VERSION, "exchanges": [exchange_to_dict(e) for e in exchanges]}
    if path.suffix == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        import yaml  # here: reading and JSON cassettes need no PyYAML (see _yaml._loader)

        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
    write_atomic(path, text)


def exchange_to_dict(exchange: Exchange) -> dict[str, Any]:
    request: dict[str, Any] = {"method": exchange.method, "url": exchange.url, "headers": exchange.request_headers}
    request.update(_body_field(exchange.request_body, streamed=False))
    response: dict[str, Any] = {"status": exchange.status, "headers": exchange.response_headers}
    response.update(_body_field(exchange.response_body, streamed=exchange.streamed))
    return {"request": request, "response": response}


def exchange_from_dict(entry: dict[str, Any]) -> Exchange:
    """One exchange in trialrun's layout (a cassette's, a sidecar's) as bytes again, its bodies' encodings undone:
    ValueError naming the field for one of the wrong shape."""
    if not isinstance(entry, dict) or "request" not in entry:
        raise _ShapeError("the exchange has no 'request'")
    return _decoded(_from_own(entry))


def _body_field(body: bytes, streamed: bool) -> dict[str, Any]:
    """The field that stores a body: `body` (a JSON object or array, as data), `stream` or `body_text` (other UTF-8
    text), `body_base64` (anything else: decoding it as text would change the bytes that replay returns)."""
    if not body:
        return {}
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"body_base64": base64.b64encode(body).decode("ascii")}
    if streamed:
        return {"stream": text}
    try:
        data = json.loads(text)
    except ValueError:
        return {"body_text": text}
    # A JSON scalar stays text: `"abc"` would come back as abc and `null` as nothing.
    return {"body": data} if isinstance(data, (dict, list)) else {"body_text": text}


def _own_body(part: dict[str, Any], field: str, *names: str) -> bytes:
    """A stored body: the first of the text/data fields `names` present, else `body_base64` decoded."""
    for name in names:
        if name in part:
            return _encode_body(part[name])
    if "body_base64" not in part:
        return b""
    value = part["body_base64"]
    if not isinstance(value, str):
        raise _ShapeError(f"{field}.body_base64 is {_kind(value)}, expected base64 text")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise _ShapeError(f"{field}.body_base64 is not valid base64 ({exc})") from None


def _encode_body(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    # default=str: YAML reads an unquoted 2024-01-01 as a date, which JSON has no type for; its text is what was meant.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str).encode()


class _ShapeError(ValueError):
    """A field of one exchange that has the wrong type; the message names the field (the caller adds file and
    exchange number)."""


def _kind(value: Any) -> str:
    """How a YAML/JSON value reads in an error message."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"text ({value[:40]!r})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _mapping(value: Any, field: str, *, required: bool = False) -> dict[str, Any]:
    """`value` as a mapping; absent (None) is an empty one unless required."""
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise _ShapeError(f"{field} is {_kind(value)}, expected a mapping")
    return value


def _text(value: Any, field: str) -> str:
    """A scalar field as text (YAML reads `200` or `true` as numbers and booleans; those are fine, as written)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise _ShapeError(f"{field} is {_kind(value)}, expected text")


def _status(value: Any, field: str) -> int:
    """An HTTP status code: an integer, or text holding one, from 100 to 599."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise _ShapeError(f"{field} is {_kind(value)}, expected an HTTP status code such as 200")
    try:
        code = int(value)
    except ValueError:
        raise _ShapeError(f"{field} is {_kind(value)}, expected an HTTP status code such as 200") from None
    if not 100 <= code <= 599:
        raise _ShapeError(f"{field} is {code}, expected an HTTP status code from 100 to 599")
    return code


def _from_own(entry: dict[str, Any]) -> Exchange:
    request = _mapping(entry["request"], "request", required=True)
    response = _mapping(entry.get("response"), "response")
    if "url" not in request:
        raise _ShapeError("request has no 'url'")
    return Exchange(
        method=_text(request.get("method", "POST"), "request.method").upper(),
        url=_text(request["url"], "request.url"),
        request_headers=_own_headers(request.get("headers"), "request.headers"),
        request_body=_own_body(request, "request", "body", "body_text"),
        status=_status(response.get("status", 200), "response.status"),
        response_headers=_own_headers(response.get("headers"), "response.headers"),
        response_body=_own_body(response, "response", "stream", "body", "body_text"),
    )


def _own_headers(headers: Any, field: str) -> dict[str, str]:
    return {str(k): _header_value(v, f"{field}[{k!r}]") for k, v in _mapping(headers, field).items()}


def _header_value(value: Any, field: str) -> str:
    """A header value as text. botocore hands vcrpy header values as bytes, which YAML stores as `!!binary`."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value.decode("latin-1")  # what HTTP itself allows in a header value
    return _text(value, field)


def _vcr_headers(headers: Any, field: str = "headers") -> dict[str, str]:
    """vcrpy keeps each header as a list of values; they are joined with ", " as HTTP does."""
    out: dict[str, str] = {}
    for name, value in _mapping(headers, field).items():
        where = f"{field}[{name!r}]"
        if isinstance(value, list):
            out[str(name)] = ", ".join(_header_value(item, where) for item in value)
        else:
            out[str(name)] = _header_value(value, where)
    return out


def _vcr_body(part: dict[str, Any]) -> bytes:
    if "parsed_body" in part:
        return _encode_body(part["parsed_body"])
    body = part.get("body")
    if isinstance(body, dict) and "string" in body:
        return _encode_body(body["string"])
    return _encode_body(body)


def _from_vcr(entry: dict[str, Any]) -> Exchange:
    request = _mapping(entry["request"], "request", required=True)
    response = _mapping(entry.get("response"), "response")
    if "uri" not in request:
        raise _ShapeError("request has no 'uri'")
    status = response.get("status", 200)
    if isinstance(status, dict):
        code = _status(status.get("code", 200), "response.status.code")
    else:
        code = _status(status, "response.status")
    return Exchange(
        method=_text(request.get("method", "POST"), "request.method").upper(),
        url=_text(request["uri"], "request.uri"),
        request_headers=_vcr_headers(request.get("headers"), "request.headers"),
        request_body=_vcr_body(request),
        status=code,
        response_headers=_vcr_headers(response.get("headers"), "response.headers"),
        response_body=_vcr_body(response),
    )
