"""The code the docs pages show is the code the tests run, written into the pages themselves (so that they read as
plain Markdown anywhere: GitHub, an editor, a terminal), and kept equal to the example files by a check.

A code block that comes from a file is marked by an HTML comment on the line above its fence, invisible once
rendered:

    <!-- example: examples/tutorials/plain_sdk.py:agent -->
    ```python
    ... the `agent` section of that file ...
    ```

`:NAME` is the part of the file between `# [docs:NAME]` and `# [/docs:NAME]` (dedented); without it, the whole
file. `python docs/hooks/examples.py` rewrites every such block from its file; the docs build (this module is an
MkDocs hook: a block that differs from its file is a warning, so `mkdocs build --strict` fails) and
tests/test_docs_examples.py check that nobody has to.
"""

from __future__ import annotations

import logging
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
log = logging.getLogger("mkdocs.hooks.examples")

#: The marker, the fence line and the block's body (up to the closing fence).
BLOCK = re.compile(r"^<!-- example: (?P<file>[^\s:]+)(?::(?P<name>\w+))? -->\n(?P<fence>```\w*)\n(?P<body>.*?)^```$",
                   re.M | re.S)
_START = "# [docs:{}]"
_END = "# [/docs:{}]"


def section(file: str, name: str | None) -> str:
    """The text a block shows: the whole file, or its `name` section (dedented), without the section markers of
    other sections inside it."""
    lines = (ROOT / file).read_text(encoding="utf-8").splitlines()
    if name:
        start = lines.index(_START.format(name))
        lines = lines[start + 1:lines.index(_END.format(name), start)]
    kept = [line for line in lines if not re.match(r"\s*# \[/?docs:\w+\]$", line)]
    return textwrap.dedent("\n".join(kept)).strip("\n") + "\n"


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def stale(page: Path) -> list[str]:
    """Each block of `page` whose text is not its file's (`file:name`), or whose file or section is gone."""
    found = []
    for match in BLOCK.finditer(page.read_text(encoding="utf-8")):
        where = match["file"] + (f":{match['name']}" if match["name"] else "")
        try:
            wanted = section(match["file"], match["name"])
        except (OSError, ValueError):
            found.append(f"{where} (no such file or section)")
            continue
        if match["body"] != wanted:
            found.append(where)
    return found


def rewrite(page: Path) -> bool:
    """Write each block of `page` from its file; True when the page changed."""
    text = page.read_text(encoding="utf-8")
    new = BLOCK.sub(lambda m: (f"<!-- example: {m['file']}{':' + m['name'] if m['name'] else ''} -->\n"
                               f"{m['fence']}\n{section(m['file'], m['name'])}```"), text)
    if new != text:
        page.write_text(new, encoding="utf-8")
    return new != text


def on_pre_build(config: Any) -> None:
    """MkDocs: a page whose code differs from its example file is a warning (an error with --strict)."""
    for page in pages():
        for where in stale(page):
            log.warning("%s shows code that is not %s's; run python docs/hooks/examples.py",
                        page.relative_to(ROOT), where)


if __name__ == "__main__":
    changed = [page for page in pages() if rewrite(page)]
    for page in changed:
        print(f"rewrote {page.relative_to(ROOT)}")
    sys.exit(0)
