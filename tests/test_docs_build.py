"""The docs site builds with `mkdocs build --strict` (any warning fails: a broken link, a page whose example code differs from its file,
gone, an API name that no longer resolves, a config key the reference does not show), offline, and its generated
reference pages say what the code says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    warnings = [line for line in done.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0 and not warnings, done.stderr[-4000:]
    return out


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8"))


def test_every_page_of_the_nav_is_built(site: Path) -> None:
    for page in ("index.html", "tutorials/plain-sdk/index.html", "tutorials/pydantic-ai/index.html",
                 "tutorials/openai-agents/index.html", "tutorials/langgraph/index.html",
                 "tutorials/coding-agent/index.html", "reference/suite/index.html", "reference/config/index.html",
                 "reference/api/index.html", "cases/index.html", "model-seam/index.html",
                 "reference-agent/index.html", "cli/index.html", "viewer/index.html", "coding-agents/index.html",
                 "sandbox/index.html", "matcher/index.html", "reliability/index.html", "secrets/index.html",
                 "performance/index.html", "ray/index.html", "development/index.html"):
        assert (site / page).is_file(), page


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub (and mkdocs' toc, for these headings) writes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_links_resolve() -> None:
    """README.md is no page of the site (the strict build does not see it): each of its relative links names a file
    of the repository, each anchor a heading of that file, and it links every page of the site's nav but the
    generated reference."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    relative = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert len(relative) >= 15, relative
    for link in relative:
        path, _, anchor = link.partition("#")
        assert (ROOT / path).is_file(), f"README.md links {link}: no such file"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / path).read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, f"README.md links {link}: no such heading"
    nav = re.findall(r":\s+([\w/.-]+\.md)$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    linked = {link.partition("#")[0] for link in relative}
    missing = [page for page in nav if not page.startswith("reference/") and f"docs/{page}" not in linked]
    assert not missing, f"README.md's table of links lacks {missing}"


def test_the_site_loads_nothing_from_the_network(site: Path) -> None:
    remote = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)
    for page in site.rglob("*.html"):
        assert not remote.search(page.read_text(encoding="utf-8")), page
    for sheet in site.rglob("*.css"):
        assert not re.search(r"@import\s+url\(\s*['\"]?(?:https?:)?//", sheet.read_text(encoding="utf-8")), sheet


def test_the_suite_reference_is_the_schema_trialrun_prints(site: Path) -> None:
    from trialrun.suite._tests_file import EXPECT_FORMS, SuiteTest, suite_json_schema

    assert json.loads((site / "reference" / "suite.schema.json").read_text()) == suite_json_schema()
    page = _text(site / "reference" / "suite" / "index.html")
    for key in SuiteTest.model_fields:
        assert re.search(rf"^{key}\b", page, re.M), f"suite key {key} missing from the reference"
    for grader in EXPECT_FORMS:
        assert re.search(rf"^{grader}\b", page, re.M), f"grader {grader} missing from the reference"


def test_the_config_reference_shows_every_key_of_the_config_model(site: Path) -> None:
    from trialrun.suite.config import Config

    page = (site / "reference" / "config" / "index.html").read_text(encoding="utf-8")
    keys = [name for name, field in Config.model_fields.items() if not field.exclude]
    assert "source" not in keys and "base_dir" not in keys  # internal: never written in a file
    for key in keys:
        assert f'id="{key}"' in page, f"config key {key} has no section in the reference"


def test_the_api_reference_documents_every_public_name(site: Path) -> None:
    import trialrun

    page = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="(trialrun\.[\w.]+)"', page))
    for name in trialrun.__all__:
        if name in ("__version__", "expect"):
            continue
        assert any(anchor.endswith(f".{name}") for anchor in anchors), f"trialrun.{name} is not in the API reference"
    assert "Read the user's notes" not in page  # sanity: the page is the API, not a tutorial


def _hook():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_config_key_the_docstring_does_not_show_is_a_build_warning(monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    import trialrun.suite.config

    hook = _hook()
    hook.config_page()
    assert not caplog.records  # as committed: every key is shown
    doc = trialrun.suite.config.__doc__ or ""
    assert "    trials = " in doc
    monkeypatch.setattr(trialrun.suite.config, "__doc__", "\n".join(line for line in doc.splitlines()
                                                              if not line.startswith("    trials = ")))
    page = hook.config_page()
    assert "## `trials`" not in page
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "config reference: Config.trials is not shown in trialrun/suite/config.py's docstring example"]


def test_the_config_examples_keep_tables_together() -> None:
    blocks = _hook().config_examples('Intro.\n\n    model = "x"   # the model\n                  # more\n'
                                     '    [policy]      # a ToolPolicy\n    deny_commands = ["rm"]\n\nAfter.\n')
    assert blocks == {"model": ['model = "x"   # the model', '              # more'],
                      "policy": ["[policy]      # a ToolPolicy", 'deny_commands = ["rm"]']}


def test_each_tutorial_shows_the_tested_code_it_names(site: Path) -> None:
    """Each tutorial marks the code it shows with the example file it comes from (code the tests run), and the
    built page shows every line of it."""
    import html

    examples = _examples()
    pages = sorted((ROOT / "docs" / "tutorials").glob("*.md"))
    assert len(pages) == 5
    for page in pages:
        blocks = list(examples.BLOCK.finditer(page.read_text(encoding="utf-8")))
        assert blocks, f"{page.name} shows no tested code"
        built = html.unescape(_text(site / "tutorials" / page.stem / "index.html"))
        shown = [line.strip() for line in built.splitlines()]
        for block in blocks:
            assert (ROOT / block["file"]).is_relative_to(ROOT / "examples"), block["file"]  # (the tests run them)
            for line in examples.section(block["file"], block["name"]).splitlines():
                assert not line.strip() or line.strip() in shown, f"{page.name}: {block['file']} line not shown: {line}"


def _examples():  # type: ignore[no-untyped-def]
    import importlib.util

    spec = importlib.util.spec_from_file_location("docs_examples_hook", ROOT / "docs" / "hooks" / "examples.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_public_name_the_api_page_does_not_place_is_a_build_warning(monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    import trialrun

    hook = _hook()
    hook.api_page()
    assert not caplog.records  # as committed: every public name has a section
    monkeypatch.setitem(trialrun._EXPORTS, "ResultStore", "store")
    monkeypatch.setattr(trialrun, "__all__", [*trialrun.__all__, "ResultStore"])
    page = hook.api_page()
    assert "::: trialrun.store.ResultStore" not in page
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        "API reference: trialrun.ResultStore (from .store) is in no section of docs/hooks/reference.py"]


def test_the_docs_read_as_markdown_in_the_repository() -> None:
    """Every page reads anywhere a Markdown file is shown (GitHub, an editor): no snippet-include line, the code of
    each example written into the page and equal to its file (`docs/hooks/examples.py`; the tutorials' files run
    in tests/test_docs_examples.py), the generated reference pages committed and current, and every relative link
    naming a file of the repository."""
    examples = _examples()
    pages = examples.pages()
    assert len(pages) >= 24
    stale = {str(page.relative_to(ROOT)): examples.stale(page) for page in pages if examples.stale(page)}
    assert not stale, f"{stale}: run python docs/hooks/examples.py"
    hook = _hook()
    for name, text in hook.generated().items():
        assert (ROOT / "docs" / name).read_text(encoding="utf-8") == text, f"docs/{name}: run python docs/hooks/reference.py"
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert "--8<--" not in text, f"{page.relative_to(ROOT)} has a snippet-include line"
        text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # (code blocks hold no links)
        for link in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", link) or link.startswith("#"):
                continue
            target = (page.parent / link.partition("#")[0]).resolve()
            assert target.exists(), f"{page.relative_to(ROOT)} links {link}: no such file in the repository"
    blocks = [block for page in pages for block in examples.BLOCK.finditer(page.read_text(encoding="utf-8"))]
    assert len(blocks) >= 19 and all(block["fence"] != "```" or block["file"].endswith(".md") for block in blocks)
