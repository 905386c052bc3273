"""Placeholder: being written. (The codec for anthropic.)"""

from __future__ import annotations

from ._codec import Codec


class AnthropicCodec:
    api = "anthropic"

    def handles(self, path: str) -> bool:
        return False
