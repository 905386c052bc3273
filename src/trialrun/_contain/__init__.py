"""Keeping what an agent runs contained: the keeper that kills whatever a trial's commands left running (`keeper`,
with its own source in `keeper_source`, which runs as a separate process) and the bubblewrap sandbox (`sandbox`).

Shared by the reference agent's shell tools (`agent/`) and the agents in another process (`agents/`), so it sits
below both. May import: the standard library and `_util` only.
"""
