"""Every ```python block of README.md and of the docs pages that hold what moved out of it (docs/*.md) type-checks
under `mypy --strict` and (based)pyright in strict mode, against the real SDKs installed by the test extra: an
example a user copies must not start with a type error.

basedpyright is pyright (the same checker, here 1.1.414's) packaged with its own Node.js, so it runs offline; the
PyPI `pyright` package needs a `node` on PATH or downloads one at first run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from test_readme import python_blocks_in

FOUND = python_blocks_in()
BLOCKS = [code for _, code in FOUND]
#: checked with the blocks, to show the check can fail: httpx.Client is not the httpx2.Client the openai SDK types
BAD = ("import openai\nimport trialrun as tr\n\n"
       "def f(ctx: tr.TrialContext) -> None:\n"
       "    openai.OpenAI(api_key='x', http_client=ctx.http_client(ctx.scripted([])))\n")
#: kept between runs (the SDKs' types take mypy ~20 s to read cold, ~2 s warm); mypy checks it is current
MYPY_CACHE = Path(tempfile.gettempdir()) / f"trialrun-readme-mypy-{sys.version_info[0]}.{sys.version_info[1]}"
_LINE = re.compile(r"readme_block_(\d+)\.py:(\d+)")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[int, list[str]]]:
    """Each checker's errors per block number (block 0 is BAD); both run at once, once over all blocks."""
    folder = tmp_path_factory.mktemp("readme_types")
    for number, code in enumerate([BAD, *BLOCKS]):
        (folder / f"readme_block_{number}.py").write_text(code, encoding="utf-8")
    files = sorted(str(path) for path in folder.glob("readme_block_*.py"))
    (folder / "pyrightconfig.json").write_text(json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.10"}))
    pipe = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, "cwd": folder}
    with subprocess.Popen([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir",
                           str(MYPY_CACHE), "--python-executable", sys.executable, *files], **pipe) as mypy, \
         subprocess.Popen([str(Path(sys.executable).with_name("basedpyright")), "--pythonpath", sys.executable,
                           "--outputjson", *files], **pipe) as pyright:
        mypy_out, mypy_err = mypy.communicate(timeout=300)
        pyright_out, _ = pyright.communicate(timeout=300)
    assert mypy.returncode in (0, 1), mypy_err  # 2: mypy itself failed
    report = json.loads(pyright_out)
    assert report["summary"]["filesAnalyzed"] == len(files), pyright_out[-2000:]
    found: dict[str, dict[int, list[str]]] = {"mypy": {}, "pyright": {}}
    for line in mypy_out.splitlines():
        if (m := _LINE.search(line)) and ": error:" in line:
            found["mypy"].setdefault(int(m.group(1)), []).append(line.split("/")[-1])
    for diagnostic in report["generalDiagnostics"]:
        if diagnostic["severity"] == "error" and (m := _LINE.search(diagnostic["file"] + ":0")):
            where = f"line {diagnostic['range']['start']['line'] + 1}"
            found["pyright"].setdefault(int(m.group(1)), []).append(f"{where}: {diagnostic['message']}")
    return found


def test_the_readme_has_python_examples_to_check() -> None:
    assert len(BLOCKS) >= 5 and any("ctx.http_client(model, httpx2=True)" in block for block in BLOCKS)
    files = {file for file, _ in FOUND}  # the examples that moved out of the README are still checked
    assert {"README.md", "docs/model-seam.md", "docs/reference-agent.md", "docs/coding-agents.md", "docs/matcher.md",
            "docs/ray.md"} <= files, files


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
@pytest.mark.parametrize("number", range(1, len(BLOCKS) + 1),
                         ids=[f"{file}-{n}" for n, (file, _) in enumerate(FOUND, 1)])
def test_readme_example_type_checks(checked: dict[str, dict[int, list[str]]], checker: str, number: int) -> None:
    errors = checked[checker].get(number, [])
    assert not errors, f"{FOUND[number - 1][0]}: python block {number} fails {checker}:\n" + "\n".join(errors) + "\n\n" + BLOCKS[number - 1]


@pytest.mark.parametrize("checker", ["mypy", "pyright"])
def test_a_type_error_in_an_example_is_caught(checked: dict[str, dict[int, list[str]]], checker: str) -> None:
    errors = checked[checker].get(0, [])
    assert len(errors) == 1 and "httpx2" in errors[0] and "line 5" in errors[0].replace("py:5:", "line 5"), errors
