"""Suite loading at scale: how long 5,000 / 20,000 / 100,000 tests take to read and validate, to turn into runnable
cases, and to be refused when every test is invalid (and how long that message is).

Loading must grow linearly with the number of tests (it was quadratic: a line count from the start of the file for
every test), and a refusal must list a bounded number of problems. Times are CPU seconds of this process (on a
busy machine wall time is longer). Not a test: machines are noisy.

    python bench/suite_load.py [--sizes 5000,20000,100000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from trialrun.suite._build import build_cases
from trialrun.suite._tests_file import SuiteError, read_suite
from trialrun.suite.config import load_config


def _test(i: int) -> dict[str, object]:
    return {"id": f"test-{i}", "prompt": f"What does notes-{i}.txt say?", "expected_tools": ["read_file"],
            "max_turns": 3, "success_criteria": "Says what the notes contain", "tags": ["bench"]}


def _timed(fn):  # type: ignore[no-untyped-def]
    """(CPU seconds, value): CPU time, as other processes on a shared machine stretch wall time."""
    start = time.process_time()
    value = fn()
    return time.process_time() - start, value


def measure(folder: Path, n: int) -> None:
    suite = folder / f"tests_{n}.json"
    suite.write_text(json.dumps([_test(i) for i in range(n)], indent=2))
    yaml_suite = folder / f"tests_{n}.yaml"
    yaml_suite.write_text("".join(
        f"- id: test-{i}\n  prompt: What does notes-{i}.txt say?\n  expected_tools: [read_file]\n  max_turns: 3\n"
        f"  success_criteria: Says what the notes contain\n" for i in range(n)))
    script = folder / f"model_{n}.json"
    script.write_text(json.dumps({f"test-{i}": [{"reply": "notes"}] for i in range(n)}))
    (folder / "trialrun.toml").write_text(f'model = "scripted:{script.name}"\n')
    invalid = folder / f"invalid_{n}.json"
    invalid.write_text(json.dumps([{"id": f"test-{i}", "max_turns": "3"} for i in range(n)], indent=2))

    read_s, parsed = _timed(lambda: read_suite(suite))
    yaml_s, _ = _timed(lambda: read_suite(yaml_suite))
    config = load_config(folder)
    build_s, cases = _timed(lambda: build_cases(parsed, config))

    def refuse() -> SuiteError:
        try:
            read_suite(invalid)
        except SuiteError as exc:
            return exc
        raise AssertionError("an invalid suite was accepted")

    refuse_s, error = _timed(refuse)
    print(f"{n:>7,} tests: read+validate JSON {read_s:6.2f} s ({suite.stat().st_size / 2**20:.1f} MiB), "
          f"YAML {yaml_s:6.2f} s; build {len(cases):,} cases {build_s:6.2f} s; "
          f"refuse {len(error.problems):,} problems {refuse_s:6.2f} s, message {len(str(error)):,} characters")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000,100000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (int(size) for size in args.sizes.split(",")):
            measure(Path(tmp), n)


if __name__ == "__main__":
    main()
