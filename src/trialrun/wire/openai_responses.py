"""Placeholder: being written. (The codec for openai-responses.)"""

from __future__ import annotations

from ._codec import Codec


class OpenAIResponsesCodec:
    api = "openai-responses"

    def handles(self, path: str) -> bool:
        return False
