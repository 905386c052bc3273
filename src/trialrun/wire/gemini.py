"""Placeholder: being written. (The codec for gemini.)"""

from __future__ import annotations

from ._codec import Codec


class GeminiCodec:
    api = "gemini"

    def handles(self, path: str) -> bool:
        return False
