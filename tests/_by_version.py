"""What differs by Python version, and the tests that show it: `.ci/run` runs the whole suite once, on the default
interpreter, and on 3.10 and the newest CPython only the test files named here (the marker `by_version`, given
by tests/conftest.py; `pytest -m by_version`).

A module is version-sensitive when its behaviour can differ between the Pythons trialrun supports: it branches
on the version (`sys.version_info`) or says so in its text ("Python 3.10's fromisoformat", "before 3.12"), or it
leans on what CPython does underneath (asyncio's cancellation, threads, signals, processes, the standard library
functions it patches), or on a dependency that pip picks by Python version. tests/test_by_version.py keeps this
list honest: a module whose source shows a version sign and is not listed here, or an entry without a test file
that exists, fails it.
"""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src" / "trialrun"

#: Source module (or package folder, ending in "/") under src/trialrun -> (why it differs by version, the test files
#: under tests/ that exercise it there).
BY_VERSION: dict[str, tuple[str, tuple[str, ...]]] = {
    "_util/toml_read.py": ("tomllib from 3.11, tomli before",
                           ("cli/test_config_discovery.py", "cli/test_hostile_files.py")),
    "report/_file_models.py": ("Python 3.10's fromisoformat does not read a `Z`",
                               ("cli/test_replay_and_store.py", "core/test_result_file_parts.py")),
    "wire/_encoding.py": ("zstd bodies: the zstandard package, or Python 3.14's compression.zstd",
                          ("models/test_model_cassette_record.py", "models/test_cassette_as_recorded.py")),
    "run/runner.py": ("asyncio's cancellation (Task.cancelling from 3.11), signals, a loop beside a running one",
                      ("core/test_runner.py", "core/test_stop_signals.py")),
    "run/_trial.py": ("a trial on the event loop and worker threads: timeouts, cancellation, teardowns",
                      ("core/test_runner.py", "core/test_workdir_removal.py")),
    "models/guard.py": ("patches socket, threading, concurrent.futures and asyncio's resolver",
                        ("models/test_model_guard.py", "models/test_guard_scope.py")),
    "_contain/": ("the keeper: prctl and signals through ctypes, process groups, fork handlers",
                  ("agents/test_containment.py", "agents/test_process_agent.py")),
    "_util/workers.py": ("daemon worker threads, fork handlers", ("test_threads.py",)),
    "endpoint.py": ("an asyncio server on a loopback port, in a thread of its own", ("endpoint/test_endpoint.py",)),
    "agent/_commands.py": ("the shell tool's processes: sessions, process groups, kills",
                           ("agent/test_commands.py",)),
    "agent/_price_sources.py": ("genai-prices is installed only on 3.11 and later",
                                ("agent/test_price_sources.py", "cli/test_prices_source.py")),
    "agents/frameworks": ("not a module: the agent frameworks pip installs differ by Python (pydantic-ai 2 needs "
                          "3.11)", ("frameworks/test_pydantic_ai.py", "frameworks/test_openai_agents.py",
                                    "frameworks/test_langgraph.py")),
}

#: Entries that name no module of trialrun (what is installed differs, not trialrun's code).
NOT_MODULES = frozenset({"agents/frameworks"})

#: What shows that a module's behaviour may differ by Python version.
VERSION_SIGN = re.compile(r"sys\.version_info|\bPython 3\.\d+|\b(?:before|from|since|until) 3\.\d+\b")


def by_version_files() -> set[str]:
    """The test files (relative to tests/, POSIX) that run on every interpreter."""
    return {test for _, tests in BY_VERSION.values() for test in tests}


def version_signs(text: str) -> list[str]:
    """Each version sign in a module's source."""
    return VERSION_SIGN.findall(text)


def modules_with_version_signs() -> dict[str, list[str]]:
    """Every module of trialrun whose source shows a version sign (path under src/trialrun -> the signs)."""
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        signs = version_signs(path.read_text(encoding="utf-8"))
        if signs:
            found[path.relative_to(SRC).as_posix()] = signs
    return found


def listed(module: str) -> bool:
    """Whether `module` (a path under src/trialrun) is covered by an entry: itself, or its package folder."""
    return any(module == key or (key.endswith("/") and module.startswith(key)) for key in BY_VERSION)


if __name__ == "__main__":  # what `.ci/run` hands pytest on the extra interpreters: the listed files, one a line
    for test in sorted(by_version_files()):
        print(f"tests/{test}")
