"""Reading and writing cassette files: trialrun's own format and vcrpy's (pydantic-ai's `parsed_body` included).

trialrun's format (YAML or JSON, chosen by the file suffix)::

    version: 1
    exchanges:
      - request: {method: POST, url: https://api.openai.com/v1/chat/completions, headers: {...}, body: {...}}
        response: {status: 200, headers: {...}, body: {...}}          # JSON body as data
      - request: {...}
        response: {status: 200, headers: {...}, stream: "data: ...\n\n"}  # a streamed body as text

vcrpy's layout is `interactions: [{request: {method, uri, headers: {name: [values]}, body | parsed_body},
response: {status: {code, message}, headers, body: {string} | parsed_body}}]`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from ._files import read_text, write_atomic
from .wire._types import Exchange

__all__ = ["CassetteFileError", "load_exchanges", "save_exchanges", "exchange_to_dict"]

FORMAT_VERSION = 1


class CassetteFileError(ValueError):
    """A cassette file that is missing or cannot be read; the message names the file and the entry."""


def load_exchanges(path: str | os.PathLike[str]) -> list[Exchange]:
    """Load every recorded exchange of a cassette file, in recorded order."""
    path = Path(path)
    text = read_text(path, "cassette file", CassetteFileError)
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise CassetteFileError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from None
    if isinstance(data, dict) and "interactions" in data:
        entries, reader = data["interactions"], _from_vcr
    elif isinstance(data, dict) and "exchanges" in data:
        entries, reader = data["exchanges"], _from_own
    elif isinstance(data, list):
        entries, reader = data, _from_own
    else:
        raise CassetteFileError(f"{path}: not a cassette (expected 'exchanges' or vcrpy 'interactions')")
    if not isinstance(entries, list):
        raise CassetteFileError(f"{path}: the list of exchanges is a {type(entries).__name__}, not a list")
    exchanges = []
    for number, entry in enumerate(entries, start=1):
        try:
            if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
                raise ValueError("expected a mapping with 'request' and 'response'")
            exchanges.append(reader(entry))
        except (ValueError, TypeError, KeyError) as exc:
            raise CassetteFileError(f"{path}: exchange {number}: {exc}") from None
    return exchanges


def save_exchanges(path: str | os.PathLike[str], exchanges: list[Exchange]) -> None:
    """Write exchanges in trialrun's format, atomically (temp file + rename): a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"version": FORMAT_VERSION, "exchanges": [exchange_to_dict(e) for e in exchanges]}
    if path.suffix == ".json":
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    else:
        text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)
    write_atomic(path, text)


def exchange_to_dict(exchange: Exchange) -> dict[str, Any]:
    request: dict[str, Any] = {"method": exchange.method, "url": exchange.url, "headers": exchange.request_headers}
    request.update(_body_field(exchange.request_body, streamed=False))
    response: dict[str, Any] = {"status": exchange.status, "headers": exchange.response_headers}
    response.update(_body_field(exchange.response_body, streamed=exchange.streamed))
    return {"request": request, "response": response}


def _body_field(body: bytes, streamed: bool) -> dict[str, Any]:
    if not body:
        return {}
    text = body.decode("utf-8", "replace")
    if streamed:
        return {"stream": text}
    try:
        return {"body": json.loads(text)}
    except ValueError:
        return {"body_text": text}


def _encode_body(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _from_own(entry: dict[str, Any]) -> Exchange:
    request, response = entry["request"], entry.get("response") or {}
    if "url" not in request:
        raise ValueError("request has no 'url'")
    response_body = response.get("stream", response.get("body", response.get("body_text")))
    return Exchange(
        method=str(request.get("method", "POST")).upper(),
        url=str(request["url"]),
        request_headers={str(k): str(v) for k, v in (request.get("headers") or {}).items()},
        request_body=_encode_body(request.get("body", request.get("body_text"))),
        status=int(response.get("status", 200)),
        response_headers={str(k): str(v) for k, v in (response.get("headers") or {}).items()},
        response_body=_encode_body(response_body),
    )


def _vcr_headers(headers: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in (headers or {}).items():
        out[str(name)] = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return out


def _vcr_body(part: dict[str, Any]) -> bytes:
    if "parsed_body" in part:
        return _encode_body(part["parsed_body"])
    body = part.get("body")
    if isinstance(body, dict) and "string" in body:
        return _encode_body(body["string"])
    return _encode_body(body)


def _from_vcr(entry: dict[str, Any]) -> Exchange:
    request, response = entry["request"], entry.get("response") or {}
    if "uri" not in request:
        raise ValueError("request has no 'uri'")
    status = response.get("status", 200)
    code = status.get("code", 200) if isinstance(status, dict) else status
    return Exchange(
        method=str(request.get("method", "POST")).upper(),
        url=str(request["uri"]),
        request_headers=_vcr_headers(request.get("headers")),
        request_body=_vcr_body(request),
        status=int(code),
        response_headers=_vcr_headers(response.get("headers")),
        response_body=_vcr_body(response),
    )
