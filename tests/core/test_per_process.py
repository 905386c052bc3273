"""`PerProcess`: the endpoint's accepting thread and the sandbox's handoff thread are one per process, and a forked
child (multiprocessing's fork start method, Ray's workers) makes its own instead of waiting on a thread it has not."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable

import httpx
import pytest

import trialrun as tr
from trialrun._util.per_process import PerProcess

#: Forking a process that has threads is what these tests are about (3.12+ warns of it)
pytestmark = [pytest.mark.skipif(sys.platform == "win32", reason="os.fork"),
              pytest.mark.filterwarnings("ignore:This process .* is multi-threaded, use of fork:DeprecationWarning")]


def _in_child(check: Callable[[], bool]) -> int:
    """Run `check()` in a forked child; its exit status (0: it held)."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)  # a child waiting on a thread it does not have dies instead of hanging the test
        code = 1
        try:
            code = 0 if check() else 3
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_one_per_process_made_on_first_use_and_a_new_one_in_a_child() -> None:
    made: list[int] = []

    def make() -> object:
        made.append(os.getpid())
        return object()

    one = PerProcess(make)
    assert one.current is None and made == []
    first = one.get()
    assert one.get() is first and made == [os.getpid()]

    def child() -> bool:
        return one.current is None and one.get() is not first

    assert _in_child(child) == 0
    assert one.current is first  # the parent's is untouched


def test_a_held_lock_in_the_parent_does_not_block_the_child() -> None:
    one = PerProcess(object)
    with one._lock:  # another thread of the parent holds it at the fork
        status = _in_child(lambda: one.get() is not None)
    assert status == 0


def test_an_endpoint_serves_in_a_forked_child_after_the_parent_served() -> None:
    def ask() -> bool:
        with tr.serve(tr.ScriptedModel([tr.reply("from the child")])) as endpoint:
            response = httpx.post(f"{endpoint.openai_base_url}/chat/completions", timeout=10,
                                  json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
            return "from the child" in response.text

    assert ask()  # the parent's accepting thread now exists
    assert threading.active_count() >= 1
    assert _in_child(ask) == 0
