"""The no-network guard's patches last only while something holds them: a run (`evaluate`), a trialrun test in a
pytest session, `no_network`, or `install()` until `uninstall()`. Afterwards `threading.Thread.start`, the socket
functions, `ThreadPoolExecutor.submit`, asyncio's resolver and httpx's transports are the originals again, so
code that runs after trialrun (an unrelated test in the same pytest session) runs unpatched. Each check runs in a
process of its own: this suite's own session keeps the guard installed (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

#: The functions the guard patches, as they are in a process that has not run trialrun yet (a conftest's import).
ORIGINALS = textwrap.dedent("""
    import asyncio.base_events, concurrent.futures, socket, sys, threading
    import httpx

    def functions():
        return {"Thread.start": threading.Thread.start, "socket.connect": socket.socket.connect,
                "socket.connect_ex": socket.socket.connect_ex, "socket.getaddrinfo": socket.getaddrinfo,
                "socket.create_connection": socket.create_connection,
                "ThreadPoolExecutor.submit": concurrent.futures.ThreadPoolExecutor.submit,
                "loop.getaddrinfo": asyncio.base_events.BaseEventLoop.getaddrinfo,
                "httpx.HTTPTransport": httpx.HTTPTransport.handle_request,
                "httpx.AsyncHTTPTransport": httpx.AsyncHTTPTransport.handle_async_request}

    BEFORE = functions()

    def patched():
        \"\"\"How many of the functions are not the originals now.\"\"\"
        now = functions()
        return sum(now[name] is not BEFORE[name] for name in BEFORE)

    def changed():
        \"\"\"The names of the functions that are not the originals now, and any import hook of the guard's.\"\"\"
        now = functions()
        hooks = [type(f).__name__ for f in sys.meta_path if type(f).__name__ == "_PatchOnImport"]
        return sorted(name for name in BEFORE if now[name] is not BEFORE[name]) + hooks
""")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", ORIGINALS + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_a_run_patches_while_it_runs_and_leaves_the_originals_when_it_ends() -> None:
    out = _run("""
        import trialrun as tr

        def invoke(ctx):
            return f"blocking: {tr.models.guard.is_blocking()}; patched: {patched()}"

        case = tr.Case(name="guarded", invoke=invoke, expect_outcome=[tr.expect.contains("blocking: True")])
        report = tr.evaluate([case])
        print(report.cases[0].trials[0].output)
        print("after the run:", changed())
        with tr.models.guard.no_network(label="a block") as attempts:
            print("inside no_network:", patched())
        print("after no_network:", changed())
        tr.models.guard.install()
        print("installed:", patched())
        tr.evaluate([case])
        print("installed, after a run:", patched())
        tr.models.guard.uninstall()
        print("uninstalled:", changed())
    """)
    assert out.splitlines() == ["blocking: True; patched: 9", "after the run: []", "inside no_network: 9",
                                "after no_network: []", "installed: 9", "installed, after a run: 9", "uninstalled: []"]


def test_an_unrelated_test_after_trialrun_cases_in_the_same_session_runs_unpatched(pytester: pytest.Pytester) -> None:
    """A user's session: trialrun cases (a module's `tr.Case`), a test using trialrun's `trialrun_ctx` fixture, then
    ordinary tests, which find every function as it was before the session ran any of trialrun's."""
    pytester.makeconftest(ORIGINALS)
    pytester.makepyfile(test_a_cases="""
        import trialrun as tr

        def invoke(ctx):
            from conftest import patched
            return f"blocking: {tr.models.guard.is_blocking()}; patched: {patched()}"  # while the case runs

        guarded = tr.Case(name="guarded", invoke=invoke, expect_outcome=[tr.expect.equals("blocking: True; patched: 9")])

        def test_with_trialrun_s_fixture(trialrun_ctx):
            from conftest import patched
            assert tr.models.guard.is_blocking() and patched() == 9
    """, test_b_unrelated="""
        def test_an_unrelated_test_runs_unpatched():
            from conftest import changed
            assert changed() == []
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:xdist", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_a_cases.py::guarded PASSED*", "*test_an_unrelated_test_runs_unpatched PASSED*"])
