"""TOML reading on every supported Python (tomllib from 3.11, tomli before), with one error for every way it fails."""

from __future__ import annotations

import sys
from typing import Any

from .files import TOO_DEEP

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as _toml

__all__ = ["TomlError", "loads"]


class TomlError(ValueError):
    """TOML that cannot be read; callers put the file's name in front."""


def loads(text: str) -> dict[str, Any]:
    """Parse TOML. TomlError for invalid TOML and for values nested so deeply (`a = [[[[...]]]]`) that the
    parser, which recurses, would otherwise end in a RecursionError."""
    try:
        data: dict[str, Any] = _toml.loads(text)
        return data
    except _toml.TOMLDecodeError as exc:
        raise TomlError(f"not valid TOML: {exc}") from None
    except RecursionError:
        raise TomlError(TOO_DEEP) from None
