"""Placeholder: being written. (The codec for openai-chat.)"""

from __future__ import annotations

from ._codec import Codec


class OpenAIChatCodec:
    api = "openai-chat"

    def handles(self, path: str) -> bool:
        return False
