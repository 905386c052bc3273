"""A process agent's launch cancelled at any step (a Ctrl-C, a case's timeout) closes each of its output pipes once.

Found in CI: Ctrl-C during a command agent's launch printed "Exception in callback
_UnixReadPipeTransport._call_connection_lost ... OSError: [Errno 9] Bad file descriptor". The launch was cancelled
while asyncio's `connect_read_pipe` waited for its transport. The transport closes its pipe when a connection is
cancelled half made, and the launch's undo closed the same descriptor again by number. A second close by number is
worse than the noise: by then the number may belong to a file opened meanwhile, which it would close.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

import trialrun as tr
from trialrun.agents._process import _contain

STEPS = 60  # loop iterations to cancel after: 0, 1, ... until a launch completes first


def test_a_launch_cancelled_at_any_step_closes_each_pipe_once(tmp_path: Path) -> None:
    agent = tr.agents.ProcessAgent(["sleep", "30"])

    async def sweep() -> tuple[list[dict[str, Any]], int, bool]:
        loop = asyncio.get_running_loop()
        reported: list[dict[str, Any]] = []
        loop.set_exception_handler(lambda _loop, context: reported.append(context))
        cancelled, launched = 0, False
        for steps in range(STEPS):
            task = asyncio.ensure_future(agent._launch(["sleep", "30"], dict(os.environ), tmp_path, None, tmp_path))  # type: ignore[arg-type]
            for _ in range(steps):
                await asyncio.sleep(0)
            if task.done():  # launched in full before the cancel came: every step before it was swept
                child = task.result()
                await _contain(child.keeper, child.process, child.cleanup, child.scope)
                launched = True
                break
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            cancelled += 1
            # a descriptor opened now may take a number the launch just gave back: the callbacks still to run
            # (a transport's connection_lost) must not close it
            mine = os.open(os.devnull, os.O_RDONLY)
            for _ in range(5):
                await asyncio.sleep(0)
            os.fstat(mine)  # EBADF if a late close took it
            os.close(mine)
        return reported, cancelled, launched

    reported, cancelled, launched = asyncio.run(sweep())
    assert launched, f"no launch completed within {STEPS} loop iterations: the sweep did not reach every step"
    assert cancelled >= 3, cancelled  # the cancels landed inside the launch, at several steps of it
    assert not reported, [context.get("message") or context.get("exception") for context in reported]
