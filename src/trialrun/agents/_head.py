"""The head of a process agent's stdout: what `_process` keeps of it as the output."""

from __future__ import annotations


class _Head:
    """The first `limit` characters of a stream, and how many it had: stdout is the agent's answer, which is read
    from its start, so a runaway one is cut at the end (with a note of how much)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[str] = []
        self.total = 0

    def feed(self, text: str) -> None:
        room = self.limit - self.total
        if room > 0:
            self.parts.append(text[:room])
        self.total += len(text)

    def render(self) -> str:
        cut = self.total - self.limit
        return "".join(self.parts) + (f"\n[... {cut} characters of stdout cut ...]" if cut > 0 else "")
